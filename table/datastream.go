package table

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/weirproject/weir/internal/sql/catalog"
	"github.com/weirproject/weir/internal/sql/parser"
	"github.com/weirproject/weir/internal/sql/planner"
	"github.com/weirproject/weir/internal/sql/types"
	"github.com/weirproject/weir/stream"
)

// Tables and DataStreams mix in one job: a Table API program builds its
// streams on a stream.Environment, turns some into tables
// (FromDataStream), queries them with SQL (SQLQuery), turns results back
// into streams (ToDataStream, ToChangelogStream), and runs the whole job
// with the stream environment's Execute.

// NewStreamEnvironment returns a SQL session whose queries become
// operators of env's job (rather than jobs of their own), for
// FromDataStream, SQLQuery and ToDataStream.
func NewStreamEnvironment(env *stream.Environment, opts ...Option) *Environment {
	e := NewEnvironment(append([]Option{WithConfig(env.Config())}, opts...)...)
	e.streams = env
	e.conns.Local = map[string]planner.SourceFactory{}
	return e
}

// Table is the result of a query, not yet turned into a stream.
type Table struct {
	env  *Environment
	plan planner.Plan
	text string
}

// Columns are the table's columns.
func (t *Table) Columns() []Column {
	var out []Column
	for _, f := range t.plan.Fields() {
		out = append(out, Column{Name: f.Name, Type: f.Type})
	}
	return out
}

// Explain is the table's plan, as EXPLAIN prints it.
func (t *Table) Explain() string { return planner.Explain(t.plan) }

// SQLQuery plans a query over the session's tables (those of DataStreams
// too) and returns it as a Table.
func (e *Environment) SQLQuery(query string) (*Table, error) {
	st, err := parser.ParseStatement(query)
	if err != nil {
		return nil, err
	}
	qs, ok := st.(*parser.QueryStatement)
	if !ok {
		return nil, fmt.Errorf("SQLQuery takes a query, not %T; use ExecuteSQL", st)
	}
	plan, err := e.planner().PlanQuery(qs.Query)
	if err != nil {
		return nil, err
	}
	return &Table{env: e, plan: plan, text: st.SourceText()}, nil
}

// sqlType maps a Go type to the SQL type of a column, as Flink maps Java
// classes (Instant: TIMESTAMP_LTZ(3)).
func sqlType(t reflect.Type) (types.DataType, error) {
	switch t {
	case reflect.TypeFor[time.Time]():
		return types.TimestampLTZType(3), nil
	case reflect.TypeFor[types.Decimal]():
		return types.DecimalType(38, 18), nil
	case reflect.TypeFor[[]byte]():
		return types.Bytes(), nil
	}
	switch t.Kind() {
	case reflect.Bool:
		return types.Boolean().NotNull(), nil
	case reflect.Int8:
		return types.TinyInt().NotNull(), nil
	case reflect.Int16:
		return types.SmallInt().NotNull(), nil
	case reflect.Int32:
		return types.Int().NotNull(), nil
	case reflect.Int, reflect.Int64:
		return types.BigInt().NotNull(), nil
	case reflect.Float32:
		return types.Float().NotNull(), nil
	case reflect.Float64:
		return types.Double().NotNull(), nil
	case reflect.String:
		return types.String().NotNull(), nil
	case reflect.Pointer:
		inner, err := sqlType(t.Elem())
		return inner.Nullable(), err
	}
	return types.DataType{}, fmt.Errorf("Go type %s has no SQL type", t)
}

// goValue and sqlValue convert a field's value between Go and SQL.
func sqlValue(v reflect.Value) any {
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return nil
		}
		v = v.Elem()
	}
	switch x := v.Interface().(type) {
	case time.Time:
		return types.TimestampLTZ{Millis: x.UnixMilli(), NanoOfMilli: int32(x.Nanosecond() % 1e6)}
	case int:
		return int64(x)
	}
	return v.Interface()
}

func setGo(dst reflect.Value, v any) error {
	if v == nil {
		dst.SetZero()
		return nil
	}
	if dst.Kind() == reflect.Pointer {
		p := reflect.New(dst.Type().Elem())
		if err := setGo(p.Elem(), v); err != nil {
			return err
		}
		dst.Set(p)
		return nil
	}
	switch x := v.(type) {
	case types.TimestampLTZ:
		v = x.ToTime().UTC()
	case types.Timestamp:
		v = x.ToTime().UTC()
	}
	rv := reflect.ValueOf(v)
	if rv.Type().ConvertibleTo(dst.Type()) && (rv.Kind() == dst.Kind() || isNumber(rv.Kind()) && isNumber(dst.Kind())) {
		dst.Set(rv.Convert(dst.Type()))
		return nil
	}
	return fmt.Errorf("a %T does not fit a %s", v, dst.Type())
}

func isNumber(k reflect.Kind) bool {
	return k >= reflect.Int && k <= reflect.Float64
}

// columnsOf lists the exported fields of a struct type as columns, named
// by their `sql` tag or their name.
func columnsOf(t reflect.Type) ([]string, []int, []types.DataType, error) {
	if t.Kind() != reflect.Struct {
		return nil, nil, nil, fmt.Errorf("a table of a DataStream needs a struct type, not %s", t)
	}
	var names []string
	var idx []int
	var ts []types.DataType
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name := f.Name
		if tag := f.Tag.Get("sql"); tag != "" {
			if tag == "-" {
				continue
			}
			name = tag
		}
		dt, err := sqlType(f.Type)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("field %s: %w", f.Name, err)
		}
		names, idx, ts = append(names, name), append(idx, i), append(ts, dt)
	}
	if len(names) == 0 {
		return nil, nil, nil, fmt.Errorf("%s has no exported fields", t)
	}
	return names, idx, ts, nil
}

// FromDataStream registers a DataStream of structs as a temporary table
// called name: one column per exported field (named by its `sql` tag or
// its name; Go types map as Flink maps Java classes, time.Time to
// TIMESTAMP_LTZ(3)). The stream must belong to the session's stream
// environment.
func FromDataStream[T any](e *Environment, name string, s *stream.Stream[T]) error {
	if e.streams == nil {
		return errors.New("FromDataStream needs a session of NewStreamEnvironment")
	}
	if s.Environment() != e.streams {
		return errors.New("FromDataStream: the stream belongs to another stream environment")
	}
	names, idx, ts, err := columnsOf(reflect.TypeFor[T]())
	if err != nil {
		return err
	}
	path, err := e.cat.Resolve([]string{name})
	if err != nil {
		return err
	}
	conn := "$datastream-" + strconv.Itoa(len(e.conns.Local))
	t := &catalog.Table{Path: path, Options: map[string]string{"connector": conn}, Temporary: true}
	for i := range names {
		t.Columns = append(t.Columns, catalog.Column{Name: names[i], Type: ts[i]})
	}
	e.conns.Local[conn] = func(c *planner.TableContext) (*planner.Rows, error) {
		rows := stream.Map(s, func(v T) types.Record {
			rv := reflect.ValueOf(v)
			row := make(types.Row, len(idx))
			for i, fi := range idx {
				row[i] = sqlValue(rv.Field(fi))
			}
			return types.Record{Kind: types.Insert, Row: row}
		}).Name("FromDataStream")
		return c.Rows(rows), nil
	}
	return e.cat.CreateTable(t, false, false)
}

// ToChangelogStream turns a table into a stream of records with their
// change kinds (+I, -U, +U, -D), as operators of the session's stream
// environment's job.
func ToChangelogStream(t *Table) (*stream.Stream[types.Record], error) {
	e := t.env
	if e.streams == nil {
		return nil, errors.New("ToChangelogStream needs a session of NewStreamEnvironment")
	}
	pl := e.planner()
	tr := planner.NewTranslator(e.streams, strings.Join(strings.Fields(t.text), " "), e.batch(), e.conns, e.funcs, pl.Ctx)
	opts, err := e.execOptions()
	if err != nil {
		return nil, err
	}
	tr.Opts = opts
	return tr.Translate(t.plan)
}

// ToDataStream turns an insert-only table into a stream of structs whose
// exported fields (by `sql` tag or name) take the columns of the same
// name. An updating table needs ToChangelogStream.
func ToDataStream[T any](t *Table) (*stream.Stream[T], error) {
	if planner.Updating(t.plan, t.env.batch()) {
		return nil, fmt.Errorf("ToDataStream: the table is updating (%s); use ToChangelogStream", planner.ProducerOfUpdates(t.plan, t.env.batch()))
	}
	typ := reflect.TypeFor[T]()
	names, idx, _, err := columnsOf(typ)
	if err != nil {
		return nil, err
	}
	fields := t.plan.Fields()
	cols := make([]int, len(names))
	for i, n := range names {
		cols[i] = -1
		for j, f := range fields {
			if f.Name == n {
				cols[i] = j
			}
		}
		if cols[i] < 0 {
			return nil, fmt.Errorf("ToDataStream: the table has no column %s for field %s of %s", n, typ.Field(idx[i]).Name, typ)
		}
	}
	rows, err := ToChangelogStream(t)
	if err != nil {
		return nil, err
	}
	return stream.Process(rows, stream.ProcessFunc[types.Record, T](func(r types.Record, _ *stream.Context, out stream.Collector[T]) error {
		var v T
		rv := reflect.ValueOf(&v).Elem()
		for i, fi := range idx {
			if err := setGo(rv.Field(fi), r.Row[cols[i]]); err != nil {
				return fmt.Errorf("ToDataStream: column %s: %w", names[i], err)
			}
		}
		out.Collect(v)
		return nil
	})).Name("ToDataStream"), nil
}

var _ = context.Background
