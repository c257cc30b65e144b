package planner

import (
	"fmt"
	"strings"

	"github.com/weirproject/weir/internal/sql/functions"
	"github.com/weirproject/weir/internal/sql/parser"
	"github.com/weirproject/weir/internal/sql/types"
	"github.com/weirproject/weir/stream"
)

// Correlate joins each input row with the rows a table function makes of
// it: a user-defined table function (LATERAL TABLE(f(...))) or UNNEST of
// an ARRAY, MAP or MULTISET column. Its columns are the input's followed
// by the function's.
type Correlate struct {
	Input Plan
	// Func is the user function; nil for UNNEST.
	Func *functions.TableFunc
	// Args are the function's arguments (UNNEST: the collection) over
	// the input's columns.
	Args []Expr
	// Ordinality: UNNEST ... WITH ORDINALITY appends the element's
	// position (from 1).
	Ordinality bool
	// Outer: LEFT JOIN LATERAL ... ON TRUE keeps an input row that makes
	// no rows, padded with NULLs.
	Outer  bool
	fields []Field
}

func (p *Correlate) Fields() []Field { return p.fields }
func (p *Correlate) Inputs() []Plan  { return []Plan{p.Input} }
func (p *Correlate) describe() string {
	name := "UNNEST"
	if p.Func != nil {
		name = p.Func.Name
	}
	join := "INNER"
	if p.Outer {
		join = "LEFT"
	}
	n := len(p.Input.Fields())
	return fmt.Sprintf("Correlate(invocation=[%s(%s)], correlate=[table(%s)], select=[%s], joinType=[%s])",
		name, exprs(p.Args), name, names(p.fields[n:]), join)
}

// lateral plans `l JOIN [LATERAL] TABLE(f(...))` and `l CROSS JOIN
// UNNEST(...)`: the function's arguments read l's columns.
func (b *binder) lateral(l Plan, right parser.TableRef, j *parser.Join) (Plan, error) {
	c := &Correlate{Input: l}
	var alias *parser.TableAlias
	sc := &scope{fields: l.Fields()}
	var cols []Field
	switch r := right.(type) {
	case *parser.TableFunc:
		alias = r.Alias
		name := strings.Join(r.Call.Name, ".")
		f, ok := b.Funcs.LookupTableFunc(name)
		if !ok {
			return nil, errAt(r, "No table function %s is registered (register one with Functions().RegisterTableFunc)", name)
		}
		args, err := b.exprs(sc, r.Call.Args...)
		if err != nil {
			return nil, err
		}
		if len(args) != len(f.Args) {
			return nil, errAt(r, "table function %s takes %d arguments, not %d", f.Name, len(f.Args), len(args))
		}
		for i, a := range args {
			if !types.ImplicitCastable(a.Type(), f.Args[i]) {
				return nil, errAt(r, "table function %s: argument %d is %s, which does not cast to %s", f.Name, i+1, a.Type(), f.Args[i])
			}
			args[i] = castTo(a, f.Args[i].WithNullable(f.Args[i].IsNullable() || a.Type().IsNullable()))
		}
		c.Func, c.Args = f, args
		for _, col := range f.Columns {
			cols = append(cols, Field{Name: col.Name, Type: col.Type.Nullable()})
		}
	case *parser.Unnest:
		alias = r.Alias
		if len(r.Exprs) != 1 {
			return nil, errAt(r, "UNNEST takes one ARRAY, MAP or MULTISET, not %d", len(r.Exprs))
		}
		a, err := b.expr(r.Exprs[0], sc)
		if err != nil {
			return nil, err
		}
		t := a.Type()
		switch t.Kind {
		case types.KindArray, types.KindMultiset:
			e := t.ElemType()
			if e.Kind == types.KindRow {
				for _, f := range e.Fields {
					cols = append(cols, Field{Name: f.Name, Type: f.Type.Nullable()})
				}
			} else {
				cols = append(cols, Field{Name: "EXPR$0", Type: e.Nullable()})
			}
		case types.KindMap:
			cols = append(cols, Field{Name: "KEY", Type: t.KeyType().Nullable()}, Field{Name: "VALUE", Type: t.ValueType().Nullable()})
		default:
			return nil, errAt(r, "UNNEST needs an ARRAY, MAP or MULTISET, not %s", t)
		}
		if r.WithOrdinality {
			cols = append(cols, Field{Name: "ORDINALITY", Type: types.Int().NotNull()})
		}
		c.Args, c.Ordinality = []Expr{a}, r.WithOrdinality
	}
	if alias != nil {
		if len(alias.Columns) > 0 && len(alias.Columns) != len(cols) {
			return nil, errAt(right, "%d column names for the %d columns of %s", len(alias.Columns), len(cols), alias.Name)
		}
		for i := range cols {
			if len(alias.Columns) > 0 {
				cols[i].Name = alias.Columns[i]
			}
			cols[i].Table = alias.Name
		}
	}
	if j != nil {
		switch j.Type {
		case parser.InnerJoin, parser.CrossJoin, parser.CommaJoin:
		case parser.LeftJoin:
			c.Outer = true
			if lit, ok := j.On.(*parser.Literal); !ok || !strings.EqualFold(parser.Format(lit), "TRUE") {
				return nil, errAt(j, "LEFT JOIN with a table function needs ON TRUE")
			}
		default:
			return nil, errAt(j, "%s JOIN with a table function is not supported: use INNER, CROSS or LEFT ... ON TRUE", j.Type)
		}
		if j.Natural || len(j.Using) > 0 {
			return nil, errAt(j, "a join with a table function takes ON, not NATURAL or USING")
		}
	}
	lf := l.Fields()
	fields := make([]Field, 0, len(lf)+len(cols))
	for _, f := range lf {
		// The input's time attribute survives: rows keep their time.
		fields = append(fields, f)
	}
	c.fields = append(fields, cols...)
	if j != nil && !c.Outer && j.On != nil {
		cond, err := b.expr(j.On, &scope{fields: c.fields})
		if err != nil {
			return nil, err
		}
		return &Filter{Input: c, Cond: cond}, nil
	}
	return c, nil
}

// correlate translates a Correlate: per input row, the function's rows,
// each appended to the input row with the input's change kind.
func (t *Translator) correlate(p *Correlate) (*Rows, error) {
	in, err := t.Translate(p.Input)
	if err != nil {
		return nil, err
	}
	n := len(p.Input.Fields())
	width := len(p.fields) - n
	argEvals := make([]evaluator, len(p.Args))
	for i, a := range p.Args {
		argEvals[i] = compile(a)
	}
	argType := p.Args[0].Type()
	fn, ordinality, outer := p.Func, p.Ordinality, p.Outer
	outTypes := fieldTypes(p.fields[n:])
	f := &correlateFunc{n: n, width: width, args: argEvals, argType: argType, fn: fn, ordinality: ordinality, outer: outer, outTypes: outTypes, tr: t}
	out := stream.Process(in, f).Name(t.OpName("Correlate"))
	return withCodec(t.keepOrder(p.Input, in, out), p.fields), nil
}

type correlateFunc struct {
	n, width   int
	args       []evaluator
	argType    types.DataType
	fn         *functions.TableFunc
	ordinality bool
	outer      bool
	outTypes   []types.DataType
	tr         *Translator
	ctx        *functions.Context
	argBuf     []any
}

func (f *correlateFunc) Open(*stream.Context) error {
	f.ctx = subtaskContext(f.tr.Ctx)
	f.argBuf = make([]any, len(f.args))
	return nil
}

func (f *correlateFunc) ProcessElement(r types.Record, _ *stream.Context, c stream.Collector[types.Record]) error {
	for i, a := range f.args {
		v, err := a(f.ctx, r.Row)
		if err != nil {
			return rowError(err, r)
		}
		f.argBuf[i] = v
	}
	made := 0
	emit := func(vals []any) {
		row := make(types.Row, f.n+f.width)
		copy(row, r.Row[:f.n])
		copy(row[f.n:], vals)
		c.Collect(types.Record{Kind: r.Kind, Row: row})
		made++
	}
	if f.fn != nil {
		var bad error
		err := f.fn.Eval(f.ctx, f.argBuf, func(vals []any) {
			if len(vals) != f.width {
				if bad == nil {
					bad = fmt.Errorf("table function %s emitted %d values for its %d columns", f.fn.Name, len(vals), f.width)
				}
				return
			}
			emit(vals)
		})
		if err == nil {
			err = bad
		}
		if err != nil {
			return fmt.Errorf("table function %s: %w", f.fn.Name, err)
		}
	} else if err := f.unnest(f.argBuf[0], emit); err != nil {
		return err
	}
	if made == 0 && f.outer {
		emit(make([]any, f.width))
	}
	return nil
}

// unnest emits the elements of an ARRAY or MULTISET (a ROW element spread
// over the columns; a MULTISET element as often as it occurs), or the
// entries of a MAP.
func (f *correlateFunc) unnest(v any, emit func([]any)) error {
	if v == nil {
		return nil
	}
	vals := make([]any, 0, f.width)
	ord := int32(0)
	one := func(xs ...any) {
		vals = vals[:0]
		if f.argType.Kind != types.KindMap && f.argType.ElemType().Kind == types.KindRow {
			if row, ok := xs[0].(types.Row); ok {
				vals = append(vals, row...)
			} else {
				vals = append(vals, make([]any, len(f.argType.ElemType().Fields))...)
			}
		} else {
			vals = append(vals, xs...)
		}
		if f.ordinality {
			ord++
			vals = append(vals, ord)
		}
		emit(vals)
	}
	switch f.argType.Kind {
	case types.KindArray:
		for _, e := range v.([]any) {
			one(e)
		}
	case types.KindMap:
		m := v.(*types.Map)
		for i := range m.Keys {
			one(m.Keys[i], m.Values[i])
		}
	case types.KindMultiset:
		m := v.(*types.Map)
		for i := range m.Keys {
			for range toInt(m.Values[i]) {
				one(m.Keys[i])
			}
		}
	default:
		return fmt.Errorf("UNNEST of %s", f.argType)
	}
	return nil
}
