// Package catalog keeps what a SQL session knows by name: tables (their
// schema and connector options), views (their query) and functions, in
// databases of catalogs, as Flink's GenericInMemoryCatalog does. The
// default names are Flink's: default_catalog.default_database.
//
// A catalog can be persisted to a JSON file (Save, Load) so that a second
// `weir sql` session sees the tables of the first. Schemas are stored as
// SQL text (types and expressions as the parser prints them), which keeps
// the file readable and independent of Go's in-memory representation.
package catalog

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/weirproject/weir/internal/sql/types"
)

// Default names, as Flink's.
const (
	DefaultCatalog  = "default_catalog"
	DefaultDatabase = "default_database"
)

// ErrNotFound is wrapped by lookups of unknown objects.
var ErrNotFound = errors.New("not found")

// ErrExists is wrapped by the creation of an object that exists.
var ErrExists = errors.New("already exists")

// ObjectPath names an object: catalog, database and name.
type ObjectPath struct {
	Catalog, Database, Name string
}

func (p ObjectPath) String() string {
	return "`" + p.Catalog + "`.`" + p.Database + "`.`" + p.Name + "`"
}

// ColumnKind says where a column's value comes from.
type ColumnKind int

const (
	Physical ColumnKind = iota
	Computed
	Metadata
)

// Column is a column of a table.
type Column struct {
	Name string
	Type types.DataType
	Kind ColumnKind
	// Expr is the SQL text of a computed column's expression.
	Expr string `json:",omitempty"`
	// MetadataKey is the key of a metadata column ("" means its name).
	MetadataKey string `json:",omitempty"`
	Virtual     bool   `json:",omitempty"`
	Comment     string `json:",omitempty"`
}

// Watermark is the WATERMARK FOR column AS expr of a table.
type Watermark struct {
	Column string
	Expr   string // SQL text
}

// Table is a table backed by a connector.
type Table struct {
	Path        ObjectPath
	Columns     []Column
	Watermark   *Watermark `json:",omitempty"`
	PrimaryKey  []string   `json:",omitempty"`
	PartitionBy []string   `json:",omitempty"`
	Options     map[string]string
	Comment     string `json:",omitempty"`
	Temporary   bool   `json:"-"`
}

// Column returns the index of the named column, or -1.
func (t *Table) Column(name string) int {
	return slices.IndexFunc(t.Columns, func(c Column) bool { return c.Name == name })
}

// View is a named query.
type View struct {
	Path ObjectPath
	// Query is the SQL text of the query.
	Query string
	// Columns are the names the view gives its columns (empty: the
	// query's own).
	Columns   []string `json:",omitempty"`
	Comment   string   `json:",omitempty"`
	Temporary bool     `json:"-"`
}

// Function is a user-defined function registered by name; Identifier is
// what CREATE FUNCTION ... AS 'identifier' named (a Go function registered
// with the Table API under that identifier).
type Function struct {
	Path       ObjectPath
	Identifier string
	Temporary  bool `json:"-"`
}

type database struct {
	Tables    map[string]*Table
	Views     map[string]*View
	Functions map[string]*Function
	Comment   string `json:",omitempty"`
}

func newDatabase() *database {
	return &database{Tables: map[string]*Table{}, Views: map[string]*View{}, Functions: map[string]*Function{}}
}

// Catalog holds catalogs of databases, and the session's current catalog
// and database. It is safe for concurrent use.
type Catalog struct {
	mu       sync.RWMutex
	catalogs map[string]map[string]*database
	current  struct{ catalog, database string }
	// file, when set, receives every change to permanent objects.
	file string
}

// New returns a catalog with Flink's default catalog and database.
func New() *Catalog {
	c := &Catalog{catalogs: map[string]map[string]*database{DefaultCatalog: {DefaultDatabase: newDatabase()}}}
	c.current.catalog, c.current.database = DefaultCatalog, DefaultDatabase
	return c
}

// Resolve completes a name of 1 to 3 parts with the current catalog and
// database.
func (c *Catalog) Resolve(parts []string) (ObjectPath, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	switch len(parts) {
	case 1:
		return ObjectPath{c.current.catalog, c.current.database, parts[0]}, nil
	case 2:
		return ObjectPath{c.current.catalog, parts[0], parts[1]}, nil
	case 3:
		return ObjectPath{parts[0], parts[1], parts[2]}, nil
	}
	return ObjectPath{}, fmt.Errorf("%q is not a valid object name: it has %d parts, want 1 to 3", strings.Join(parts, "."), len(parts))
}

func (c *Catalog) db(p ObjectPath) (*database, error) {
	cat, ok := c.catalogs[p.Catalog]
	if !ok {
		return nil, fmt.Errorf("catalog %q does not exist: %w", p.Catalog, ErrNotFound)
	}
	d, ok := cat[p.Database]
	if !ok {
		return nil, fmt.Errorf("database %s.%s does not exist: %w", p.Catalog, p.Database, ErrNotFound)
	}
	return d, nil
}

// CreateTable adds a table; with ignoreIfExists an existing object is kept
// silently, as CREATE TABLE IF NOT EXISTS does.
func (c *Catalog) CreateTable(t *Table, ignoreIfExists, replace bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	d, err := c.db(t.Path)
	if err != nil {
		return err
	}
	if _, ok := d.Tables[t.Path.Name]; ok && !replace {
		if ignoreIfExists {
			return nil
		}
		return fmt.Errorf("table %s: %w", t.Path, ErrExists)
	}
	if _, ok := d.Views[t.Path.Name]; ok {
		return fmt.Errorf("table %s: a view of that name %w", t.Path, ErrExists)
	}
	d.Tables[t.Path.Name] = t
	return c.saveLocked(t.Temporary)
}

// CreateView adds a view.
func (c *Catalog) CreateView(v *View, ignoreIfExists bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	d, err := c.db(v.Path)
	if err != nil {
		return err
	}
	if _, ok := d.Views[v.Path.Name]; ok {
		if ignoreIfExists {
			return nil
		}
		return fmt.Errorf("view %s: %w", v.Path, ErrExists)
	}
	if _, ok := d.Tables[v.Path.Name]; ok {
		return fmt.Errorf("view %s: a table of that name %w", v.Path, ErrExists)
	}
	d.Views[v.Path.Name] = v
	return c.saveLocked(v.Temporary)
}

// CreateFunction adds a function.
func (c *Catalog) CreateFunction(f *Function, ignoreIfExists bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	d, err := c.db(f.Path)
	if err != nil {
		return err
	}
	if _, ok := d.Functions[f.Path.Name]; ok {
		if ignoreIfExists {
			return nil
		}
		return fmt.Errorf("function %s: %w", f.Path, ErrExists)
	}
	d.Functions[f.Path.Name] = f
	return c.saveLocked(f.Temporary)
}

// CreateDatabase adds a database to a catalog.
func (c *Catalog) CreateDatabase(catalog, name, comment string, ignoreIfExists bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if catalog == "" {
		catalog = c.current.catalog
	}
	cat, ok := c.catalogs[catalog]
	if !ok {
		return fmt.Errorf("catalog %q does not exist: %w", catalog, ErrNotFound)
	}
	if _, ok := cat[name]; ok {
		if ignoreIfExists {
			return nil
		}
		return fmt.Errorf("database %s.%s: %w", catalog, name, ErrExists)
	}
	d := newDatabase()
	d.Comment = comment
	cat[name] = d
	return c.saveLocked(false)
}

// Table returns a table.
func (c *Catalog) Table(p ObjectPath) (*Table, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	d, err := c.db(p)
	if err != nil {
		return nil, err
	}
	t, ok := d.Tables[p.Name]
	if !ok {
		return nil, fmt.Errorf("table %s: %w", p, ErrNotFound)
	}
	return t, nil
}

// View returns a view.
func (c *Catalog) View(p ObjectPath) (*View, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	d, err := c.db(p)
	if err != nil {
		return nil, err
	}
	v, ok := d.Views[p.Name]
	if !ok {
		return nil, fmt.Errorf("view %s: %w", p, ErrNotFound)
	}
	return v, nil
}

// Function returns a function.
func (c *Catalog) Function(p ObjectPath) (*Function, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	d, err := c.db(p)
	if err != nil {
		return nil, err
	}
	f, ok := d.Functions[p.Name]
	if !ok {
		return nil, fmt.Errorf("function %s: %w", p, ErrNotFound)
	}
	return f, nil
}

// Drop removes a table, view or function ("TABLE", "VIEW", "FUNCTION").
func (c *Catalog) Drop(kind string, p ObjectPath, ignoreIfMissing bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	d, err := c.db(p)
	if err != nil {
		if ignoreIfMissing {
			return nil
		}
		return err
	}
	var temporary bool
	switch kind {
	case "TABLE":
		t, ok := d.Tables[p.Name]
		if !ok {
			if _, isView := d.Views[p.Name]; isView {
				return fmt.Errorf("%s is a view: use DROP VIEW", p)
			}
			break
		}
		temporary = t.Temporary
		delete(d.Tables, p.Name)
		return c.saveLocked(temporary)
	case "VIEW":
		v, ok := d.Views[p.Name]
		if !ok {
			break
		}
		delete(d.Views, p.Name)
		return c.saveLocked(v.Temporary)
	case "FUNCTION":
		f, ok := d.Functions[p.Name]
		if !ok {
			break
		}
		delete(d.Functions, p.Name)
		return c.saveLocked(f.Temporary)
	default:
		return fmt.Errorf("cannot drop a %s", strings.ToLower(kind))
	}
	if ignoreIfMissing {
		return nil
	}
	return fmt.Errorf("%s %s: %w", strings.ToLower(kind), p, ErrNotFound)
}

// RenameTable renames a table or view within its database.
func (c *Catalog) RenameTable(p ObjectPath, newName string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	d, err := c.db(p)
	if err != nil {
		return err
	}
	if _, ok := d.Tables[newName]; ok {
		return fmt.Errorf("table %s: %w", newName, ErrExists)
	}
	if _, ok := d.Views[newName]; ok {
		return fmt.Errorf("view %s: %w", newName, ErrExists)
	}
	if t, ok := d.Tables[p.Name]; ok {
		delete(d.Tables, p.Name)
		t.Path.Name = newName
		d.Tables[newName] = t
		return c.saveLocked(t.Temporary)
	}
	if v, ok := d.Views[p.Name]; ok {
		delete(d.Views, p.Name)
		v.Path.Name = newName
		d.Views[newName] = v
		return c.saveLocked(v.Temporary)
	}
	return fmt.Errorf("table %s: %w", p, ErrNotFound)
}

// AlterTable replaces a table's definition (the path must not change).
func (c *Catalog) AlterTable(t *Table) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	d, err := c.db(t.Path)
	if err != nil {
		return err
	}
	if _, ok := d.Tables[t.Path.Name]; !ok {
		return fmt.Errorf("table %s: %w", t.Path, ErrNotFound)
	}
	d.Tables[t.Path.Name] = t
	return c.saveLocked(t.Temporary)
}

// Names lists the names of the tables ("TABLE", which includes views as
// Flink's SHOW TABLES does), views ("VIEW") or functions ("FUNCTION") of
// the current database, sorted.
func (c *Catalog) Names(kind string) []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	d, err := c.db(ObjectPath{Catalog: c.current.catalog, Database: c.current.database})
	if err != nil {
		return nil
	}
	var out []string
	switch kind {
	case "TABLE":
		for n := range d.Tables {
			out = append(out, n)
		}
		for n := range d.Views {
			out = append(out, n)
		}
	case "VIEW":
		for n := range d.Views {
			out = append(out, n)
		}
	case "FUNCTION":
		for n := range d.Functions {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// Databases lists the databases of the current catalog.
func (c *Catalog) Databases() []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []string
	for n := range c.catalogs[c.current.catalog] {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Catalogs lists the catalogs.
func (c *Catalog) Catalogs() []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []string
	for n := range c.catalogs {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Current returns the current catalog and database.
func (c *Catalog) Current() (catalog, database string) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.current.catalog, c.current.database
}

// UseDatabase makes a database current (name: db or catalog.db).
func (c *Catalog) UseDatabase(parts []string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	cat, db := c.current.catalog, ""
	switch len(parts) {
	case 1:
		db = parts[0]
	case 2:
		cat, db = parts[0], parts[1]
	default:
		return fmt.Errorf("%q is not a database name", strings.Join(parts, "."))
	}
	if _, err := c.db(ObjectPath{Catalog: cat, Database: db}); err != nil {
		return err
	}
	c.current.catalog, c.current.database = cat, db
	return nil
}

// UseCatalog makes a catalog current, with its default database.
func (c *Catalog) UseCatalog(name string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	cat, ok := c.catalogs[name]
	if !ok {
		return fmt.Errorf("catalog %q does not exist: %w", name, ErrNotFound)
	}
	c.current.catalog = name
	if _, ok := cat[DefaultDatabase]; ok {
		c.current.database = DefaultDatabase
	} else {
		for db := range cat {
			c.current.database = db
			break
		}
	}
	return nil
}

// CreateCatalog adds an in-memory catalog with a default database.
func (c *Catalog) CreateCatalog(name string, ignoreIfExists bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.catalogs[name]; ok {
		if ignoreIfExists {
			return nil
		}
		return fmt.Errorf("catalog %q: %w", name, ErrExists)
	}
	c.catalogs[name] = map[string]*database{DefaultDatabase: newDatabase()}
	return c.saveLocked(false)
}

// persisted is the file form of a catalog: permanent objects only.
type persisted struct {
	Catalogs map[string]map[string]*database
}

// Load reads a catalog persisted by an earlier session from file, or
// starts an empty one there if the file does not exist; from then on every
// change to a permanent object is written back to the file.
func Load(file string) (*Catalog, error) {
	c := New()
	c.file = file
	data, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return c, c.saveLocked(false)
	}
	if err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	var p persisted
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, fmt.Errorf("catalog %s: %w", file, err)
	}
	for name, dbs := range p.Catalogs {
		if c.catalogs[name] == nil {
			c.catalogs[name] = map[string]*database{}
		}
		for dbName, d := range dbs {
			if d.Tables == nil {
				d.Tables = map[string]*Table{}
			}
			if d.Views == nil {
				d.Views = map[string]*View{}
			}
			if d.Functions == nil {
				d.Functions = map[string]*Function{}
			}
			c.catalogs[name][dbName] = d
		}
	}
	return c, nil
}

// saveLocked writes the permanent objects to the catalog's file, if it
// has one; a change to a temporary object writes nothing.
func (c *Catalog) saveLocked(temporary bool) error {
	if c.file == "" || temporary {
		return nil
	}
	p := persisted{Catalogs: map[string]map[string]*database{}}
	for name, dbs := range c.catalogs {
		p.Catalogs[name] = map[string]*database{}
		for dbName, d := range dbs {
			keep := newDatabase()
			keep.Comment = d.Comment
			for n, t := range d.Tables {
				if !t.Temporary {
					keep.Tables[n] = t
				}
			}
			for n, v := range d.Views {
				if !v.Temporary {
					keep.Views[n] = v
				}
			}
			for n, f := range d.Functions {
				if !f.Temporary {
					keep.Functions[n] = f
				}
			}
			p.Catalogs[name][dbName] = keep
		}
	}
	data, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return fmt.Errorf("catalog: %w", err)
	}
	// Written aside and renamed, so that a crash leaves the old file or
	// the new one, never half of one.
	tmp := filepath.Join(filepath.Dir(c.file), "."+filepath.Base(c.file)+".tmp")
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return fmt.Errorf("catalog: %w", err)
	}
	if err := os.Rename(tmp, c.file); err != nil {
		return fmt.Errorf("catalog: %w", err)
	}
	return nil
}
