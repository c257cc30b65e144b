package functions

import (
	"errors"
	"math"
	"math/big"
	"sort"
	"strings"
	"testing"

	"github.com/weirproject/weir/internal/sql/types"
	"pgregory.net/rapid"
)

// model is the brute-force reference: the multiset of live input rows in
// arrival order, with each aggregate recomputed from scratch.
type model struct {
	rows []any // live values in arrival order (retract removes the earliest equal one)
}

func (m *model) add(v any) { m.rows = append(m.rows, v) }

func (m *model) retract(v any, t types.DataType) bool {
	for i, x := range m.rows {
		if types.Compare(x, v, t) == 0 && (x == nil) == (v == nil) {
			m.rows = append(m.rows[:i], m.rows[i+1:]...)
			return true
		}
	}
	return false
}

func (m *model) nonNull() []any {
	var out []any
	for _, v := range m.rows {
		if v != nil {
			out = append(out, v)
		}
	}
	return out
}

func ratOf(v any) *big.Rat {
	switch x := v.(type) {
	case types.Decimal:
		return new(big.Rat).SetFrac(x.Unscaled(), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(x.Scale())), nil))
	case float64:
		r, _ := new(big.Rat).SetString(types.CastToString(x, types.Double(), nil))
		return r
	}
	return new(big.Rat).SetInt64(toInt64(v))
}

// expected computes aggregate name over the model, independently of the
// accumulator code.
func (m *model) expected(name string, t types.DataType, distinct bool) any {
	vals := m.nonNull()
	if distinct {
		var d []any
		for _, v := range vals {
			dup := false
			for _, e := range d {
				if types.Compare(e, v, t) == 0 {
					dup = true
				}
			}
			if !dup {
				d = append(d, v)
			}
		}
		vals = d
	}
	n := int64(len(vals))
	switch name {
	case "COUNT":
		return n
	case "COUNT(*)":
		return int64(len(m.rows))
	case "SUM", "SUM0", "AVG":
		if n == 0 {
			if name == "SUM0" {
				return zeroOf(types.SumType(t))
			}
			return nil
		}
		switch t.Kind {
		case types.KindDecimal:
			sum := new(big.Rat)
			for _, v := range vals {
				sum.Add(sum, ratOf(v))
			}
			if name == "AVG" {
				sum.Quo(sum, new(big.Rat).SetInt64(n))
				return ratHalfUpDec(sum, types.AvgType(t).Scale)
			}
			return ratHalfUpDec(sum, t.Scale)
		case types.KindDouble:
			s := 0.0
			for _, v := range vals {
				s += v.(float64)
			}
			if name == "AVG" {
				return s / float64(n)
			}
			return s
		}
		var s int64
		for _, v := range vals {
			s += toInt64(v)
		}
		if name == "AVG" {
			return types.NarrowInt(s/n, t.Kind)
		}
		return types.NarrowInt(s, t.Kind)
	case "MIN", "MAX":
		if n == 0 {
			return nil
		}
		sorted := append([]any(nil), vals...)
		sort.SliceStable(sorted, func(i, j int) bool { return types.Compare(sorted[i], sorted[j], t) < 0 })
		if name == "MIN" {
			return sorted[0]
		}
		return sorted[len(sorted)-1]
	case "FIRST_VALUE", "LAST_VALUE":
		if n == 0 {
			return nil
		}
		if name == "FIRST_VALUE" {
			return vals[0]
		}
		return vals[n-1]
	case "LISTAGG":
		if n == 0 {
			return nil
		}
		parts := make([]string, n)
		for i, v := range vals {
			parts[i] = v.(string)
		}
		return strings.Join(parts, ",")
	case "VAR_POP", "VAR_SAMP", "STDDEV_POP", "STDDEV_SAMP":
		div := n
		if strings.HasSuffix(name, "SAMP") {
			div--
		}
		if n == 0 || div <= 0 {
			return nil
		}
		mean := 0.0
		for _, v := range vals {
			mean += toF64(v)
		}
		mean /= float64(n)
		ss := 0.0
		for _, v := range vals {
			d := toF64(v) - mean
			ss += d * d
		}
		r := ss / float64(div)
		if strings.HasPrefix(name, "STDDEV") {
			r = math.Sqrt(r)
		}
		return r
	}
	return nil
}

func sortedList(v any) any {
	if v == nil {
		return nil
	}
	parts := strings.Split(v.(string), ",")
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

func zeroOf(t types.DataType) any {
	switch t.Kind {
	case types.KindDecimal:
		return types.MakeDecimal(0, t.Scale)
	case types.KindDouble:
		return 0.0
	}
	return types.NarrowInt(0, t.Kind)
}

func ratHalfUpDec(r *big.Rat, s int) types.Decimal {
	scale := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(s)), nil)
	x := new(big.Rat).Mul(r, new(big.Rat).SetInt(scale))
	neg := x.Sign() < 0
	x.Abs(x)
	x.Add(x, big.NewRat(1, 2))
	q := new(big.Int).Quo(x.Num(), x.Denom())
	if neg {
		q.Neg(q)
	}
	return types.DecimalFromBig(q, s)
}

func sameResult(got, want any, t types.DataType) bool {
	if got == nil || want == nil {
		return got == nil && want == nil
	}
	if f, ok := want.(float64); ok {
		g := toF64(got)
		return math.Abs(g-f) <= 1e-6*math.Max(1, math.Abs(f))
	}
	return types.Compare(got, want, t) == 0
}

func genAggValue(t types.DataType) *rapid.Generator[any] {
	return rapid.Custom(func(rt *rapid.T) any {
		if rapid.IntRange(0, 4).Draw(rt, "null") == 0 {
			return nil
		}
		switch t.Kind {
		case types.KindInt:
			return int32(rapid.IntRange(-50, 50).Draw(rt, "i"))
		case types.KindBigInt:
			return rapid.Int64Range(-1e12, 1e12).Draw(rt, "l")
		case types.KindDouble:
			return float64(rapid.IntRange(-1000, 1000).Draw(rt, "d")) / 8
		case types.KindDecimal:
			return types.MakeDecimal(rapid.Int64Range(-99999, 99999).Draw(rt, "dec"), t.Scale)
		case types.KindVarChar:
			return rapid.SampledFrom([]string{"a", "b", "c", "é", ""}).Draw(rt, "s")
		}
		return nil
	})
}

// Accumulators against a brute-force recomputation: random adds and
// retracts, merges of split inputs, and state round trips at every step.
func TestAccumulatorsAgainstModel(t *testing.T) {
	cases := []struct {
		name     string
		t        types.DataType
		distinct bool
		retract  bool
	}{
		{"COUNT", types.Int(), false, true}, {"COUNT(*)", types.Int(), false, true}, {"COUNT", types.VarChar(types.MaxLength), true, true},
		{"SUM", types.Int(), false, true}, {"SUM", types.BigInt(), false, true}, {"SUM", types.DecimalType(10, 2), false, true},
		{"SUM", types.Double(), false, true}, {"SUM0", types.Int(), false, true}, {"SUM", types.Int(), true, true},
		{"AVG", types.Int(), false, true}, {"AVG", types.DecimalType(10, 2), false, true}, {"AVG", types.Double(), false, true},
		{"MIN", types.Int(), false, true}, {"MAX", types.DecimalType(10, 2), false, true}, {"MAX", types.VarChar(types.MaxLength), false, true},
		{"MIN", types.BigInt(), false, false}, {"MAX", types.Double(), false, false},
		{"FIRST_VALUE", types.Int(), false, true}, {"LAST_VALUE", types.VarChar(types.MaxLength), false, true},
		{"FIRST_VALUE", types.BigInt(), false, false}, {"LAST_VALUE", types.Int(), false, false},
		{"LISTAGG", types.VarChar(types.MaxLength), false, true}, {"LISTAGG", types.VarChar(types.MaxLength), true, true},
		{"VAR_POP", types.Double(), false, true}, {"VAR_SAMP", types.Double(), false, true},
		{"STDDEV_POP", types.Double(), false, true}, {"STDDEV_SAMP", types.Double(), false, true},
	}
	for _, c := range cases {
		c := c
		label := c.name + "(" + c.t.String() + ")"
		if c.distinct {
			label += " DISTINCT"
		}
		if !c.retract {
			label += " append-only"
		}
		t.Run(label, func(t *testing.T) {
			var args []types.DataType
			if c.name != "COUNT(*)" {
				args = []types.DataType{c.t}
			}
			agg, err := LookupAggregate(strings.TrimSuffix(c.name, "(*)"), args, c.distinct)
			if err != nil {
				t.Fatal(err)
			}
			rapid.Check(t, func(rt *rapid.T) {
				acc := agg.New(c.retract)
				var m model
				steps := rapid.IntRange(0, 40).Draw(rt, "steps")
				for i := 0; i < steps; i++ {
					v := genAggValue(c.t).Draw(rt, "v")
					in := []any{v}
					if args == nil {
						in = nil
					}
					if c.retract && len(m.rows) > 0 && rapid.IntRange(0, 3).Draw(rt, "op") == 0 {
						// Retract a live row (in a changelog only live rows are retracted).
						v = m.rows[rapid.IntRange(0, len(m.rows)-1).Draw(rt, "which")]
						in = []any{v}
						if args == nil {
							in = nil
						}
						m.retract(v, c.t)
						if err := acc.Retract(in); err != nil {
							rt.Fatal(err)
						}
					} else {
						m.add(v)
						if err := acc.Add(in); err != nil {
							rt.Fatal(err)
						}
					}
					// State round trip: a restored accumulator continues identically.
					st := acc.AppendState(nil)
					restored := agg.New(c.retract)
					if err := restored.DecodeState(st); err != nil {
						rt.Fatalf("DecodeState: %v", err)
					}
					acc = restored
					got, err := acc.Result()
					if err != nil {
						rt.Fatal(err)
					}
					want := m.expected(c.name, c.t, c.distinct)
					if c.name == "LISTAGG" && c.distinct {
						// The order of LISTAGG(DISTINCT ...) is unspecified: compare as sets.
						got, want = sortedList(got), sortedList(want)
					}
					if !sameResult(got, want, agg.Result) {
						rt.Fatalf("step %d: %s over %v = %v, want %v", i, c.name, m.rows, got, want)
					}
				}
			})
			// Merge: aggregating a split input and merging equals aggregating it whole.
			rapid.Check(t, func(rt *rapid.T) {
				left, right, whole := agg.New(c.retract), agg.New(c.retract), agg.New(c.retract)
				var m model
				n := rapid.IntRange(0, 30).Draw(rt, "n")
				cut := rapid.IntRange(0, n).Draw(rt, "cut")
				for i := 0; i < n; i++ {
					v := genAggValue(c.t).Draw(rt, "v")
					in := []any{v}
					if args == nil {
						in = nil
					}
					m.add(v)
					_ = whole.Add(in)
					if i < cut {
						_ = left.Add(in)
					} else {
						_ = right.Add(in)
					}
				}
				if err := left.Merge(right); err != nil {
					rt.Fatal(err)
				}
				got, _ := left.Result()
				if want := m.expected(c.name, c.t, c.distinct); !sameResult(got, want, agg.Result) {
					rt.Fatalf("merged %s = %v, want %v", c.name, got, want)
				}
			})
		})
	}
}

// Result types as Flink's (see the functions docs and LogicalTypeMerging).
func TestAggregateTypes(t *testing.T) {
	cases := []struct {
		name string
		arg  types.DataType
		want string
	}{
		{"COUNT", types.Int(), "BIGINT NOT NULL"},
		{"SUM", types.Int().NotNull(), "INT"},
		{"SUM", types.DecimalType(10, 2), "DECIMAL(38, 2)"},
		{"SUM0", types.BigInt(), "BIGINT NOT NULL"},
		{"AVG", types.Int(), "INT"},
		{"AVG", types.DecimalType(10, 2), "DECIMAL(38, 6)"},
		{"AVG", types.Double(), "DOUBLE"},
		{"MIN", types.VarChar(5).NotNull(), "VARCHAR(5)"},
		{"MAX", types.TimestampType(3), "TIMESTAMP(3)"},
		{"LISTAGG", types.String(), "STRING"},
		{"STDDEV_POP", types.Int(), "INT"},
		{"VARIANCE", types.DecimalType(10, 2), "DECIMAL(38, 6)"},
		{"FIRST_VALUE", types.BigInt().NotNull(), "BIGINT"},
	}
	for _, c := range cases {
		a, err := LookupAggregate(c.name, []types.DataType{c.arg}, false)
		if err != nil {
			t.Errorf("%s(%s): %v", c.name, c.arg, err)
			continue
		}
		if a.Result.String() != c.want {
			t.Errorf("%s(%s) : %s, want %s", c.name, c.arg, a.Result, c.want)
		}
	}
	if _, err := LookupAggregate("SUM", []types.DataType{types.String()}, false); err == nil {
		t.Error("SUM(STRING) resolved")
	}
	// AVG of INT is an integer average: AVG(1, 2) = 1.
	a, _ := LookupAggregate("AVG", []types.DataType{types.Int()}, false)
	acc := a.New(false)
	_ = acc.Add([]any{int32(1)})
	_ = acc.Add([]any{int32(2)})
	if v, _ := acc.Result(); v != int32(1) {
		t.Errorf("AVG(1, 2) = %v", v)
	}
	// LISTAGG with a separator.
	l, _ := LookupAggregate("LISTAGG", []types.DataType{types.String(), types.String()}, false)
	la := l.New(false)
	_ = la.Add([]any{"a", ";"})
	_ = la.Add([]any{nil, ";"})
	_ = la.Add([]any{"b", ";"})
	if v, _ := la.Result(); v != "a;b" {
		t.Errorf("LISTAGG = %v", v)
	}
	// MIN without retraction support refuses Retract.
	mn, _ := LookupAggregate("MIN", []types.DataType{types.Int()}, false)
	if err := mn.New(false).Retract([]any{int32(1)}); !errors.Is(err, ErrNoRetract) {
		t.Errorf("append-only MIN retract: %v", err)
	}
	// User-defined aggregate through the same interface.
	reg := NewRegistry()
	if err := reg.RegisterAggregate("my_count", AggregateFunc{Args: []types.DataType{types.Int()}, Result: types.BigInt().NotNull(),
		New: func(bool) Accumulator { return &countAcc{} }}); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.LookupAggregate("MY_COUNT", []types.DataType{types.SmallInt()}, true); err != nil {
		t.Error(err)
	}
}

func FuzzDecodeState(f *testing.F) {
	var aggs []*Aggregate
	for _, spec := range []struct {
		name     string
		t        types.DataType
		distinct bool
	}{{"COUNT", types.Int(), false}, {"SUM", types.DecimalType(10, 2), false}, {"AVG", types.Int(), false},
		{"MIN", types.VarChar(types.MaxLength), false}, {"FIRST_VALUE", types.Int(), false}, {"LISTAGG", types.VarChar(types.MaxLength), false},
		{"VAR_POP", types.Double(), false}, {"COUNT", types.BigInt(), true}, {"COLLECT", types.Int(), false}} {
		a, err := LookupAggregate(spec.name, []types.DataType{spec.t}, spec.distinct)
		if err != nil {
			f.Fatal(err)
		}
		aggs = append(aggs, a)
	}
	f.Add([]byte{2, 1, 0, 4})
	f.Add([]byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, a := range aggs {
			for _, retract := range []bool{false, true} {
				acc := a.New(retract)
				if err := acc.DecodeState(b); err != nil {
					if !errors.Is(err, ErrBadState) {
						t.Fatalf("%s: error without ErrBadState: %v", a.Name, err)
					}
					continue
				}
				_, _ = acc.Result()
				again := a.New(retract)
				if err := again.DecodeState(acc.AppendState(nil)); err != nil {
					t.Fatalf("%s: re-encoded state does not decode: %v", a.Name, err)
				}
			}
		}
	})
}
