package jdbc

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/weirproject/weir/connector/jdbc"
	"github.com/weirproject/weir/internal/sql/catalog"
	"github.com/weirproject/weir/internal/sql/planner"
	"github.com/weirproject/weir/internal/sql/types"
)

func init() {
	planner.RegisterLookup("jdbc", lookupSource)
	options = append(options, "lookup.cache", "lookup.partial-cache.max-rows", "lookup.partial-cache.expire-after-write",
		"lookup.partial-cache.cache-missing-key", "lookup.max-retries")
}

// lookupSource serves lookup joins: per subtask a connection pool and a
// prepared SELECT of the table's physical columns WHERE the key columns
// equal the left row's values, retried lookup.max-retries times, with
// Flink's PARTIAL cache when lookup.cache says so.
func lookupSource(c *planner.TableContext, keys []int) (*planner.LookupSource, error) {
	t := c.Table
	d, err := checkedDSN(c)
	if err != nil {
		return nil, err
	}
	cfg, err := mysql.ParseDSN(d)
	if err != nil {
		return nil, err
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 10 * time.Second // dial: an unreachable database fails, not hangs
	}
	d = cfg.FormatDSN()
	name, err := tableName(c)
	if err != nil {
		return nil, err
	}
	var phys []int
	var cols []string
	for i, col := range t.Columns {
		if col.Kind == catalog.Physical {
			phys = append(phys, i)
			cols = append(cols, quote(col.Name))
		}
	}
	var where []string
	for _, k := range keys {
		if t.Columns[k].Kind != catalog.Physical {
			return nil, fmt.Errorf("table %s: the lookup key %s is not a physical column", t.Path, t.Columns[k].Name)
		}
		where = append(where, quote(t.Columns[k].Name)+" = ?")
	}
	query := "SELECT " + strings.Join(cols, ", ") + " FROM " + jdbc.QuoteTable(name) + " WHERE " + strings.Join(where, " AND ")
	retries, err := positiveInt(c, "lookup.max-retries", 3)
	if err != nil {
		return nil, err
	}
	src := &planner.LookupSource{}
	mode, _ := c.Option("lookup.cache")
	switch strings.ToUpper(mode) {
	case "", "NONE":
		for _, k := range []string{"lookup.partial-cache.max-rows", "lookup.partial-cache.expire-after-write", "lookup.partial-cache.cache-missing-key"} {
			if _, ok := c.Option(k); ok {
				return nil, c.OptionError(k, "needs 'lookup.cache' = 'PARTIAL'")
			}
		}
	case "PARTIAL":
		cache := &planner.LookupCache{CacheMissingKey: true}
		n, err := positiveInt(c, "lookup.partial-cache.max-rows", 0)
		if err != nil {
			return nil, err
		}
		cache.MaxRows = int(n)
		if s, ok := c.Option("lookup.partial-cache.expire-after-write"); ok {
			if cache.ExpireAfterWrite, err = parseDuration(s); err != nil {
				return nil, c.OptionError("lookup.partial-cache.expire-after-write", "%v", err)
			}
		}
		if cache.MaxRows == 0 && cache.ExpireAfterWrite == 0 {
			return nil, c.OptionError("lookup.cache", "a PARTIAL cache needs 'lookup.partial-cache.max-rows' or 'lookup.partial-cache.expire-after-write'")
		}
		if s, ok := c.Option("lookup.partial-cache.cache-missing-key"); ok {
			switch strings.ToLower(s) {
			case "true":
			case "false":
				cache.CacheMissingKey = false
			default:
				return nil, c.OptionError("lookup.partial-cache.cache-missing-key", "%q is not true or false", s)
			}
		}
		src.Cache = cache
	default:
		return nil, c.OptionError("lookup.cache", "%q is not NONE or PARTIAL", mode)
	}
	what := fmt.Sprintf("table %s of the database", name)
	keyTypes := make([]types.DataType, len(keys))
	for i, k := range keys {
		keyTypes[i] = t.Columns[k].Type
	}
	src.Open = func(context.Context) (planner.LookupFunc, error) {
		db, err := sql.Open("mysql", d)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		return &lookupFunc{db: db, query: query, what: what, retries: int(retries), keyTypes: keyTypes, phys: phys, table: t}, nil
	}
	return src, nil
}

func quote(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }

// lookupFunc is a subtask's lookups.
type lookupFunc struct {
	db       *sql.DB
	stmt     *sql.Stmt
	query    string
	what     string
	retries  int
	keyTypes []types.DataType
	phys     []int
	table    *catalog.Table
}

func (f *lookupFunc) Lookup(ctx context.Context, key types.Row) ([]types.Row, error) {
	args := make([]any, len(key))
	for i, v := range key {
		args[i] = toParam(v, f.keyTypes[i])
	}
	var err error
	for attempt := 0; attempt <= f.retries; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(time.Duration(attempt) * 100 * time.Millisecond):
			}
		}
		var rows []types.Row
		if rows, err = f.try(ctx, args); err == nil {
			return rows, nil
		}
		if f.stmt != nil {
			f.stmt.Close()
			f.stmt = nil
		}
	}
	return nil, fmt.Errorf("lookup of %v in %s failed after %d attempts: %w", key, f.what, f.retries+1, err)
}

func (f *lookupFunc) try(ctx context.Context, args []any) ([]types.Row, error) {
	if f.stmt == nil {
		s, err := f.db.PrepareContext(ctx, f.query)
		if err != nil {
			return nil, err
		}
		f.stmt = s
	}
	rs, err := f.stmt.QueryContext(ctx, args...)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var out []types.Row
	for rs.Next() {
		vals := make([]any, len(f.phys))
		ptrs := make([]any, len(vals))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rs.Scan(ptrs...); err != nil {
			return nil, err
		}
		row := make(types.Row, len(f.table.Columns))
		for i, ci := range f.phys {
			v, err := fromColumn(vals[i], f.table.Columns[ci].Type)
			if err != nil {
				return nil, fmt.Errorf("column %s: %w", f.table.Columns[ci].Name, err)
			}
			row[ci] = v
		}
		out = append(out, row)
	}
	return out, rs.Err()
}

func (f *lookupFunc) Close() error {
	if f.stmt != nil {
		f.stmt.Close()
	}
	return f.db.Close()
}
