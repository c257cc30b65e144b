package functions

import (
	"fmt"
	"reflect"
	"time"

	"github.com/weirproject/weir/internal/sql/types"
)

var (
	ctxType   = reflect.TypeOf((*Context)(nil))
	errorType = reflect.TypeOf((*error)(nil)).Elem()
	goTypes   = map[reflect.Type]types.DataType{
		reflect.TypeOf(false):                   types.Boolean(),
		reflect.TypeOf(int8(0)):                 types.TinyInt(),
		reflect.TypeOf(int16(0)):                types.SmallInt(),
		reflect.TypeOf(int32(0)):                types.Int(),
		reflect.TypeOf(int64(0)):                types.BigInt(),
		reflect.TypeOf(float32(0)):              types.Float(),
		reflect.TypeOf(float64(0)):              types.Double(),
		reflect.TypeOf(""):                      types.String(),
		reflect.TypeOf([]byte(nil)):             types.Bytes(),
		reflect.TypeOf(types.Decimal{}):         types.DecimalType(38, 18),
		reflect.TypeOf(types.Date(0)):           types.DateType(),
		reflect.TypeOf(types.Time(0)):           types.TimeType(9),
		reflect.TypeOf(types.Timestamp{}):       types.TimestampType(9),
		reflect.TypeOf(types.TimestampLTZ{}):    types.TimestampLTZType(9),
		reflect.TypeOf(types.IntervalMonths(0)): types.IntervalYearMonth(),
		reflect.TypeOf(types.IntervalMillis(0)): types.IntervalDayTime(),
		reflect.TypeOf(time.Time{}):             types.TimestampLTZType(9),
	}
)

// GoType returns the SQL type a Go parameter or result type maps to in
// RegisterFunc (bool → BOOLEAN, int32 → INT, string → STRING, ...).
func GoType(t reflect.Type) (types.DataType, bool) {
	dt, ok := goTypes[t]
	return dt, ok
}

// RegisterFunc registers a Go function as a scalar function, deriving its
// SQL signature from the Go one: parameters and the result map through
// GoType, an optional leading *Context receives the evaluation context,
// and an optional trailing error result fails the query. A NULL argument
// gives NULL without calling fn (Go values cannot be NULL). time.Time
// parameters and results are TIMESTAMP_LTZ(9) instants. Arguments are
// implicitly cast to the parameter types, so an INT argument reaches an
// int64 parameter.
//
//	reg.RegisterFunc("PLUS_ONE", func(x int64) int64 { return x + 1 })
func (r *Registry) RegisterFunc(name string, fn any) error {
	v := reflect.ValueOf(fn)
	ft := v.Type()
	if ft.Kind() != reflect.Func || ft.IsVariadic() {
		return fmt.Errorf("functions: RegisterFunc(%s): want a non-variadic func, got %T", name, fn)
	}
	first := 0
	if ft.NumIn() > 0 && ft.In(0) == ctxType {
		first = 1
	}
	params := make([]types.DataType, 0, ft.NumIn())
	for i := first; i < ft.NumIn(); i++ {
		dt, ok := GoType(ft.In(i))
		if !ok {
			return fmt.Errorf("functions: RegisterFunc(%s): parameter %d has unsupported type %s", name, i, ft.In(i))
		}
		params = append(params, dt.NotNull())
	}
	var res types.DataType
	hasErr := false
	switch {
	case ft.NumOut() == 2 && ft.Out(1) == errorType:
		hasErr = true
		fallthrough
	case ft.NumOut() == 1:
		dt, ok := GoType(ft.Out(0))
		if !ok {
			return fmt.Errorf("functions: RegisterFunc(%s): unsupported result type %s", name, ft.Out(0))
		}
		res = dt.NotNull()
	default:
		return fmt.Errorf("functions: RegisterFunc(%s): want one result, optionally followed by an error", name)
	}
	isTime := make([]bool, len(params))
	for i := range params {
		isTime[i] = ft.In(i+first) == reflect.TypeOf(time.Time{})
	}
	resTime := ft.Out(0) == reflect.TypeOf(time.Time{})
	return r.RegisterScalar(name, ScalarFunc{
		Args: params, Result: res, NullOnNull: true,
		Eval: func(ctx *Context, a []any) (any, error) {
			in := make([]reflect.Value, 0, len(a)+first)
			if first == 1 {
				in = append(in, reflect.ValueOf(ctx))
			}
			for i, x := range a {
				if isTime[i] {
					x = x.(types.TimestampLTZ).ToTime()
				}
				in = append(in, reflect.ValueOf(x))
			}
			out := v.Call(in)
			if hasErr && !out[1].IsNil() {
				return nil, out[1].Interface().(error)
			}
			r := out[0].Interface()
			if resTime {
				r = types.TimestampLTZFromTime(r.(time.Time))
			}
			return r, nil
		},
	})
}
