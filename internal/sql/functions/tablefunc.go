package functions

import (
	"fmt"
	"strings"

	"github.com/weirproject/weir/internal/sql/types"
)

// TableColumn is an output column of a table function.
type TableColumn struct {
	Name string
	Type types.DataType
}

// TableFunc is a user-defined table function (Flink's UDTF): called once
// per input row with its arguments, it emits any number of rows of its
// declared columns. In SQL it is joined with the rows it is called for:
//
//	SELECT t.s, w.word FROM t, LATERAL TABLE(split(t.s)) AS w(word)
//	SELECT ... FROM t LEFT JOIN LATERAL TABLE(split(t.s)) AS w(word) ON TRUE
//
// Arguments are implicitly cast to Args; a NULL argument is nil. Each
// emitted row has one value per column, of the Go type of the column's
// SQL type (int64 for BIGINT, string for STRING, ...; nil for NULL); the
// slice may be reused by the function after emit returns.
type TableFunc struct {
	Name    string
	Args    []types.DataType
	Columns []TableColumn
	Eval    func(ctx *Context, args []any, emit func(row []any)) error
}

// RegisterTableFunc registers a table function under name
// (case-insensitive), replacing one of the same name.
func (r *Registry) RegisterTableFunc(name string, f TableFunc) error {
	if r.readOnly {
		return ErrReadOnly
	}
	if name == "" || f.Eval == nil || len(f.Columns) == 0 {
		return fmt.Errorf("functions: RegisterTableFunc needs a name, an Eval and at least one column")
	}
	for _, a := range f.Args {
		if err := a.Validate(); err != nil {
			return fmt.Errorf("functions: %s: %w", name, err)
		}
	}
	for _, c := range f.Columns {
		if c.Name == "" {
			return fmt.Errorf("functions: %s: a column has no name", name)
		}
		if err := c.Type.Validate(); err != nil {
			return fmt.Errorf("functions: %s: column %s: %w", name, c.Name, err)
		}
	}
	key := strings.ToUpper(name)
	f.Name = key
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.tables == nil {
		r.tables = map[string]*TableFunc{}
	}
	r.tables[key] = &f
	return nil
}

// LookupTableFunc finds a table function by name (case-insensitive).
func (r *Registry) LookupTableFunc(name string) (*TableFunc, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	f, ok := r.tables[strings.ToUpper(name)]
	return f, ok
}
