package functions

import (
	"testing"
	"time"

	"github.com/weirproject/weir/internal/sql/types"
)

// lit is a typed argument for tests.
type lit struct {
	t types.DataType
	v any
}

func I(v int32) lit   { return lit{types.Int().NotNull(), v} }
func BI(v int64) lit  { return lit{types.BigInt().NotNull(), v} }
func D(v float64) lit { return lit{types.Double().NotNull(), v} }
func S(v string) lit  { return lit{types.String().NotNull(), v} }
func B(v bool) lit    { return lit{types.Boolean().NotNull(), v} }
func N(t types.DataType) lit {
	return lit{t.Nullable(), nil}
}
func Dec(s string, p, sc int) lit {
	d, err := types.ParseDecimal(s)
	if err != nil {
		panic(err)
	}
	return lit{types.DecimalType(p, sc).NotNull(), d}
}
func Ts(s string) lit {
	v, err := types.ParseTimestamp(s, 9)
	if err != nil {
		panic(err)
	}
	return lit{types.TimestampType(3).NotNull(), v}
}
func Dt(s string) lit {
	v, err := types.ParseDate(s)
	if err != nil {
		panic(err)
	}
	return lit{types.DateType().NotNull(), v}
}
func Tm(s string) lit {
	v, err := types.ParseTime(s, 0)
	if err != nil {
		panic(err)
	}
	return lit{types.TimeType(0).NotNull(), v}
}
func Arr(t types.DataType, vs ...any) lit { return lit{types.Array(t).NotNull(), vs} }

var testCtx = &Context{Loc: time.UTC, Now: time.Date(2020, 4, 15, 8, 5, 0, 0, time.UTC)}

// call resolves and evaluates name(args...).
func call(t *testing.T, name string, args ...lit) (any, *Scalar, error) {
	t.Helper()
	ts := make([]types.DataType, len(args))
	vs := make([]any, len(args))
	for i, a := range args {
		ts[i], vs[i] = a.t, a.v
	}
	s, err := Lookup(name, ts)
	if err != nil {
		return nil, nil, err
	}
	v, err := s.Eval(testCtx, vs)
	return v, s, err
}

// str evaluates and renders the result as Flink's CAST to STRING does
// ("NULL" for NULL).
func str(t *testing.T, name string, args ...lit) string {
	t.Helper()
	v, s, err := call(t, name, args...)
	if err != nil {
		return "ERROR: " + err.Error()
	}
	if v == nil {
		return "NULL"
	}
	return types.CastToString(v, s.Result, time.UTC)
}

type fcase struct {
	name string
	args []lit
	want string
}

func runCases(t *testing.T, cases []fcase) {
	t.Helper()
	for _, c := range cases {
		if got := str(t, c.name, c.args...); got != c.want {
			t.Errorf("%s%v = %q, want %q", c.name, c.args, got, c.want)
		}
	}
}

func a(ls ...lit) []lit { return ls }
