package functions

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/weirproject/weir/internal/sql/types"
)

// Accumulator is the running state of one aggregate call for one group.
// Accumulators live in keyed state: AppendState/DecodeState must restore
// them exactly. An Accumulator is used by one goroutine at a time.
type Accumulator interface {
	// Add folds in one input row's argument values (nil for NULL).
	// COUNT(*) gets an empty slice.
	Add(args []any) error
	// Retract removes a row added before (for updating inputs). Aggregates
	// created with retract=false may refuse it with ErrNoRetract.
	Retract(args []any) error
	// Merge folds in another accumulator of the same aggregate (two-phase
	// local/global aggregation); other is the later partial result.
	Merge(other Accumulator) error
	// Result returns the aggregate's current value.
	Result() (any, error)
	// Reset empties the accumulator.
	Reset()
	// AppendState appends the accumulator's state.
	AppendState(buf []byte) []byte
	// DecodeState replaces the state with one written by AppendState; bad
	// bytes give an error, never a panic.
	DecodeState(b []byte) error
}

// ErrNoRetract is returned by Retract on an accumulator made without
// retraction support (MIN, MAX, FIRST_VALUE, LAST_VALUE keep more state
// when they must retract).
var ErrNoRetract = errors.New("aggregate created without retraction support")

// ErrBadState wraps malformed accumulator state.
var ErrBadState = errors.New("malformed accumulator state")

// Aggregate is a resolved aggregate function call.
type Aggregate struct {
	Name     string
	Args     []types.DataType
	Result   types.DataType
	Distinct bool
	// New returns an empty accumulator; retract selects the variant that
	// supports Retract (needed when the input is an updating changelog).
	New func(retract bool) Accumulator
	// Merges says whether two-phase aggregation may compute the aggregate
	// as local accumulators that a global one merges (Merge).
	Merges MergeKind
}

// MergeKind says when an aggregate's partial accumulators merge exactly.
type MergeKind uint8

const (
	// MergeNever: aggregate in one phase (user aggregates, DISTINCT).
	MergeNever MergeKind = iota
	// MergeAppend: partial accumulators of append-only input merge.
	MergeAppend
	// MergeAlways: partial accumulators merge also when the input has
	// retractions, which a local accumulator may hold without the rows
	// they retract (negative contributions): COUNT, SUM, AVG, the
	// variances and COLLECT.
	MergeAlways
)

// CanMerge reports whether the aggregate's accumulators merge exactly
// for an input with (retract) or without retractions.
func (a *Aggregate) CanMerge(retract bool) bool {
	if a.Distinct {
		return false
	}
	if retract {
		return a.Merges == MergeAlways
	}
	return a.Merges != MergeNever
}

type aggResolver func(args []types.DataType) (*Aggregate, error)

type aggDef struct {
	name       string
	signatures []string
	resolvers  []aggResolver
}

func (r *Registry) addAgg(names, sig string, res aggResolver) {
	for _, n := range strings.Split(names, "|") {
		d := r.aggs[n]
		if d == nil {
			d = &aggDef{name: n}
			r.aggs[n] = d
		}
		d.signatures = append(d.signatures, strings.ReplaceAll(sig, "$", n))
		d.resolvers = append(d.resolvers, res)
	}
}

// LookupAggregate resolves an aggregate in the built-in registry.
func LookupAggregate(name string, args []types.DataType, distinct bool) (*Aggregate, error) {
	return Builtins().LookupAggregate(name, args, distinct)
}

// IsAggregate reports whether name is an aggregate function.
func (r *Registry) IsAggregate(name string) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.aggs[strings.ToUpper(name)] != nil
}

// LookupAggregate resolves an aggregate call; COUNT with no arguments is
// COUNT(*). With distinct, the accumulator sees each distinct argument
// tuple once (and Retract removes it when its last copy goes).
func (r *Registry) LookupAggregate(name string, args []types.DataType, distinct bool) (*Aggregate, error) {
	key := strings.ToUpper(name)
	r.mu.RLock()
	d := r.aggs[key]
	r.mu.RUnlock()
	if d == nil {
		return nil, fmt.Errorf("No match found for function signature %s: no such aggregate function", signature(key, args))
	}
	for i := len(d.resolvers) - 1; i >= 0; i-- {
		a, err := d.resolvers[i](args)
		if err != nil {
			return nil, err
		}
		if a == nil {
			continue
		}
		a.Name = key
		a.Args = append([]types.DataType(nil), args...)
		if distinct {
			a.Distinct = true
			inner := a.New
			argTypes := a.Args
			a.New = func(retract bool) Accumulator {
				return &distinctAcc{inner: inner(retract), types: argTypes, seen: map[string]*distinctEntry{}}
			}
		}
		return a, nil
	}
	return nil, fmt.Errorf("No match found for function signature %s\nSupported signatures are:\n%s",
		signature(key, args), strings.Join(d.signatures, "\n"))
}

// AggregateFunc declares a user-defined aggregate.
type AggregateFunc struct {
	Args   []types.DataType
	Result types.DataType
	New    func(retract bool) Accumulator
}

// RegisterAggregate adds a user-defined aggregate function.
func (r *Registry) RegisterAggregate(name string, f AggregateFunc) error {
	if r.readOnly {
		return ErrReadOnly
	}
	if name == "" || f.New == nil {
		return fmt.Errorf("functions: RegisterAggregate needs a name and New")
	}
	key := strings.ToUpper(name)
	params := append([]types.DataType(nil), f.Args...)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.addAgg(key, signature(key, params), func(args []types.DataType) (*Aggregate, error) {
		if !matches(args, params) {
			return nil, nil
		}
		return &Aggregate{Result: f.Result, New: f.New}, nil
	})
	return nil
}

func registerAggregates(r *Registry) {
	r.addAgg("COUNT", "COUNT(*) | COUNT(<ANY>...)", func(args []types.DataType) (*Aggregate, error) {
		star := len(args) == 0
		return &Aggregate{Result: tBigInt.NotNull(), New: func(bool) Accumulator { return &countAcc{star: star} }, Merges: MergeAlways}, nil
	})
	numeric1 := func(args []types.DataType) bool { return len(args) == 1 && isNumeric(args[0]) }
	for _, n := range []string{"SUM", "SUM0"} {
		zero := n == "SUM0"
		r.addAgg(n, "$(<NUMERIC>)", func(args []types.DataType) (*Aggregate, error) {
			if !numeric1(args) {
				return nil, nil
			}
			t := nullToInt(args[0])
			res := types.SumType(t).WithNullable(!zero)
			return &Aggregate{Result: res, New: func(bool) Accumulator { return &sumAcc{res: res, zero: zero} }, Merges: MergeAlways}, nil
		})
	}
	r.addAgg("AVG", "AVG(<NUMERIC>)", func(args []types.DataType) (*Aggregate, error) {
		if !numeric1(args) {
			return nil, nil
		}
		t := nullToInt(args[0])
		res := types.AvgType(t)
		return &Aggregate{Result: res, New: func(bool) Accumulator {
			return &avgAcc{sum: sumAcc{res: types.SumType(t)}, res: res}
		}, Merges: MergeAlways}, nil
	})
	for _, n := range []string{"MIN", "MAX"} {
		isMax := n == "MAX"
		r.addAgg(n, "$(<COMPARABLE>)", func(args []types.DataType) (*Aggregate, error) {
			if len(args) != 1 {
				return nil, nil
			}
			t := args[0]
			return &Aggregate{Result: t.Nullable(), New: func(retract bool) Accumulator {
				return &minMaxAcc{t: t, max: isMax, retract: retract, counts: map[string]*mmEntry{}}
			}, Merges: MergeAppend}, nil
		})
	}
	for _, n := range []string{"FIRST_VALUE", "LAST_VALUE"} {
		last := n == "LAST_VALUE"
		r.addAgg(n, "$(<ANY>)", func(args []types.DataType) (*Aggregate, error) {
			if len(args) != 1 {
				return nil, nil
			}
			t := args[0]
			return &Aggregate{Result: t.Nullable(), New: func(retract bool) Accumulator {
				return &firstLastAcc{t: t, last: last, retract: retract}
			}, Merges: MergeAppend}, nil
		})
	}
	r.addAgg("LISTAGG", "LISTAGG(<STRING> [, <STRING>])", func(args []types.DataType) (*Aggregate, error) {
		if len(args) < 1 || len(args) > 2 || !isString(args[0]) || len(args) == 2 && !isString(args[1]) {
			return nil, nil
		}
		return &Aggregate{Result: tString, New: func(bool) Accumulator { return &listAggAcc{sep: ","} }, Merges: MergeAppend}, nil
	})
	for _, n := range []string{"STDDEV_POP", "STDDEV_SAMP", "STDDEV", "VAR_POP", "VAR_SAMP", "VARIANCE"} {
		pop := strings.HasSuffix(n, "_POP")
		sqrt := strings.HasPrefix(n, "STDDEV")
		r.addAgg(n, "$(<NUMERIC>)", func(args []types.DataType) (*Aggregate, error) {
			if !numeric1(args) {
				return nil, nil
			}
			res := types.AvgType(nullToInt(args[0]))
			return &Aggregate{Result: res, New: func(bool) Accumulator {
				return &varAcc{res: res, pop: pop, sqrt: sqrt}
			}, Merges: MergeAlways}, nil
		})
	}
	r.addAgg("COLLECT", "COLLECT(<ANY>)", func(args []types.DataType) (*Aggregate, error) {
		if len(args) != 1 {
			return nil, nil
		}
		t := args[0]
		return &Aggregate{Result: types.Multiset(t).NotNull(), New: func(bool) Accumulator {
			return &collectAcc{t: t, counts: map[string]*mmEntry{}}
		}, Merges: MergeAlways}, nil
	})
}

func nullToInt(t types.DataType) types.DataType {
	if t.Kind == types.KindNull {
		return types.Int()
	}
	return t
}

// ---- state encoding helpers ----

type stateReader struct {
	b   []byte
	err error
}

func (r *stateReader) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s", ErrBadState, what)
	}
}

func (r *stateReader) varint() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail("bad varint")
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *stateReader) byte1() byte {
	if r.err != nil {
		return 0
	}
	if len(r.b) == 0 {
		r.fail("truncated")
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *stateReader) f64() float64 {
	if r.err != nil {
		return 0
	}
	if len(r.b) < 8 {
		r.fail("truncated float")
		return 0
	}
	v := math.Float64frombits(binary.LittleEndian.Uint64(r.b))
	r.b = r.b[8:]
	return v
}

func (r *stateReader) value(t types.DataType) any {
	if r.err != nil {
		return nil
	}
	v, rest, err := types.DecodeValue(t, r.b)
	if err != nil {
		r.err = fmt.Errorf("%w: %v", ErrBadState, err)
		return nil
	}
	r.b = rest
	return v
}

// count reads a collection size, bounded by the bytes left so corrupt
// state cannot make us allocate without limit.
func (r *stateReader) count() int {
	n := r.varint()
	if n < 0 || n > int64(len(r.b)) {
		r.fail("bad count")
		return 0
	}
	return int(n)
}

func (r *stateReader) done() error {
	if r.err == nil && len(r.b) != 0 {
		r.fail("trailing bytes")
	}
	return r.err
}

func appendF64(b []byte, f float64) []byte {
	return binary.LittleEndian.AppendUint64(b, math.Float64bits(f))
}

// ---- COUNT ----

type countAcc struct {
	star bool
	n    int64
}

func (a *countAcc) counts(args []any) bool {
	if a.star {
		return true
	}
	for _, v := range args {
		if v == nil {
			return false
		}
	}
	return true
}

func (a *countAcc) Add(args []any) error {
	if a.counts(args) {
		a.n++
	}
	return nil
}

func (a *countAcc) Retract(args []any) error {
	if a.counts(args) {
		a.n--
	}
	return nil
}

func (a *countAcc) Merge(o Accumulator) error {
	a.n += o.(*countAcc).n
	return nil
}

func (a *countAcc) Result() (any, error)          { return a.n, nil }
func (a *countAcc) Reset()                        { a.n = 0 }
func (a *countAcc) AppendState(buf []byte) []byte { return binary.AppendVarint(buf, a.n) }
func (a *countAcc) DecodeState(b []byte) error {
	r := stateReader{b: b}
	a.n = r.varint()
	return r.done()
}

// ---- SUM, SUM0 ----

// sumAcc sums in the result's domain: int64 (wrapping to the result width
// when read, as Java's int arithmetic), exact Decimal, or float64. It
// counts non-NULL inputs so SUM can be NULL when none remain.
type sumAcc struct {
	res   types.DataType
	zero  bool
	n     int64
	i     int64
	d     types.Decimal
	f     float64
	dirty bool
}

func (a *sumAcc) add(v any, sign int64) {
	a.n += sign
	switch a.res.Kind {
	case types.KindDecimal:
		x := toDec(v)
		if sign < 0 {
			x = x.Neg()
		}
		a.d = a.d.Add(x)
	case types.KindFloat, types.KindDouble:
		a.f += float64(sign) * toF64(v)
	default:
		a.i += sign * toInt64(v)
	}
}

func (a *sumAcc) Add(args []any) error {
	if args[0] != nil {
		a.add(args[0], 1)
	}
	return nil
}

func (a *sumAcc) Retract(args []any) error {
	if args[0] != nil {
		a.add(args[0], -1)
	}
	return nil
}

func (a *sumAcc) Merge(o Accumulator) error {
	b := o.(*sumAcc)
	a.n += b.n
	a.i += b.i
	a.d = a.d.Add(b.d)
	a.f += b.f
	return nil
}

func (a *sumAcc) Result() (any, error) {
	if a.n == 0 && !a.zero {
		return nil, nil
	}
	switch a.res.Kind {
	case types.KindDecimal:
		return decOut(a.d, a.res), nil
	case types.KindFloat:
		return float32(a.f), nil
	case types.KindDouble:
		return a.f, nil
	}
	return intOut(a.i, a.res), nil
}

func (a *sumAcc) Reset() { a.n, a.i, a.d, a.f = 0, 0, types.Decimal{}, 0 }

func (a *sumAcc) AppendState(buf []byte) []byte {
	buf = binary.AppendVarint(buf, a.n)
	switch a.res.Kind {
	case types.KindDecimal:
		// The running sum may exceed DECIMAL(38, s) transiently; store it at
		// full width.
		return types.AppendValue(buf, types.DecimalType(38, a.res.Scale), a.d)
	case types.KindFloat, types.KindDouble:
		return appendF64(buf, a.f)
	}
	return binary.AppendVarint(buf, a.i)
}

func (a *sumAcc) DecodeState(b []byte) error {
	r := stateReader{b: b}
	a.Reset()
	a.n = r.varint()
	switch a.res.Kind {
	case types.KindDecimal:
		if v, ok := r.value(types.DecimalType(38, a.res.Scale)).(types.Decimal); ok {
			a.d = v
		} else {
			r.fail("missing decimal sum")
		}
	case types.KindFloat, types.KindDouble:
		a.f = r.f64()
	default:
		a.i = r.varint()
	}
	return r.done()
}

// ---- AVG ----

type avgAcc struct {
	sum sumAcc
	res types.DataType
}

func (a *avgAcc) Add(args []any) error      { return a.sum.Add(args) }
func (a *avgAcc) Retract(args []any) error  { return a.sum.Retract(args) }
func (a *avgAcc) Merge(o Accumulator) error { return a.sum.Merge(&o.(*avgAcc).sum) }
func (a *avgAcc) Reset()                    { a.sum.Reset() }

func (a *avgAcc) Result() (any, error) {
	n := a.sum.n
	if n == 0 {
		return nil, nil
	}
	switch a.res.Kind {
	case types.KindDecimal:
		q, err := a.sum.d.Quo(types.DecimalFromInt64(n), a.res.Scale)
		if err != nil {
			return nil, err
		}
		return decOut(q, a.res), nil
	case types.KindFloat:
		return float32(a.sum.f / float64(n)), nil
	case types.KindDouble:
		return a.sum.f / float64(n), nil
	}
	// Flink's integer AVG: the long sum divided by the count, truncated.
	return intOut(a.sum.i/n, a.res), nil
}

func (a *avgAcc) AppendState(buf []byte) []byte { return a.sum.AppendState(buf) }
func (a *avgAcc) DecodeState(b []byte) error    { return a.sum.DecodeState(b) }

// ---- MIN, MAX ----

type mmEntry struct {
	v any
	n int64
}

// minMaxAcc keeps the extreme value; with retract it keeps a multiset of
// every value (sorted by the order-preserving key) so that retracting the
// current extreme finds the next one, as Flink's MinWithRetract.
type minMaxAcc struct {
	t       types.DataType
	max     bool
	retract bool
	best    any
	keys    []string
	counts  map[string]*mmEntry
}

func (a *minMaxAcc) better(v any) bool {
	c := types.Compare(v, a.best, a.t)
	if a.max {
		return c > 0
	}
	return c < 0
}

func (a *minMaxAcc) addN(v any, n int64) {
	k := string(types.AppendKey(nil, a.t, v))
	if e := a.counts[k]; e != nil {
		e.n += n
		return
	}
	a.counts[k] = &mmEntry{v: v, n: n}
	i := sort.SearchStrings(a.keys, k)
	a.keys = append(a.keys, "")
	copy(a.keys[i+1:], a.keys[i:])
	a.keys[i] = k
}

func (a *minMaxAcc) Add(args []any) error {
	v := args[0]
	if v == nil {
		return nil
	}
	if a.retract {
		a.addN(v, 1)
		return nil
	}
	if a.best == nil || a.better(v) {
		a.best = v
	}
	return nil
}

func (a *minMaxAcc) Retract(args []any) error {
	if !a.retract {
		return fmt.Errorf("%s: %w", map[bool]string{false: "MIN", true: "MAX"}[a.max], ErrNoRetract)
	}
	v := args[0]
	if v == nil {
		return nil
	}
	k := string(types.AppendKey(nil, a.t, v))
	e := a.counts[k]
	if e == nil {
		return nil // retracting what was never added: ignore, as Flink
	}
	e.n--
	if e.n <= 0 {
		delete(a.counts, k)
		i := sort.SearchStrings(a.keys, k)
		a.keys = append(a.keys[:i], a.keys[i+1:]...)
	}
	return nil
}

func (a *minMaxAcc) Merge(o Accumulator) error {
	b := o.(*minMaxAcc)
	if a.retract {
		for _, k := range b.keys {
			e := b.counts[k]
			a.addN(e.v, e.n)
		}
		return nil
	}
	if b.best != nil {
		return a.Add([]any{b.best})
	}
	return nil
}

func (a *minMaxAcc) Result() (any, error) {
	if !a.retract {
		return a.best, nil
	}
	if len(a.keys) == 0 {
		return nil, nil
	}
	if a.max {
		return a.counts[a.keys[len(a.keys)-1]].v, nil
	}
	return a.counts[a.keys[0]].v, nil
}

func (a *minMaxAcc) Reset() {
	a.best, a.keys = nil, nil
	a.counts = map[string]*mmEntry{}
}

func (a *minMaxAcc) AppendState(buf []byte) []byte {
	if !a.retract {
		return types.AppendValue(buf, a.t, a.best)
	}
	buf = binary.AppendVarint(buf, int64(len(a.keys)))
	for _, k := range a.keys {
		e := a.counts[k]
		buf = binary.AppendVarint(buf, e.n)
		buf = types.AppendValue(buf, a.t, e.v)
	}
	return buf
}

func (a *minMaxAcc) DecodeState(b []byte) error {
	r := stateReader{b: b}
	a.Reset()
	if !a.retract {
		a.best = r.value(a.t)
		return r.done()
	}
	n := r.count()
	for i := 0; i < n && r.err == nil; i++ {
		c := r.varint()
		v := r.value(a.t)
		if v == nil || c <= 0 {
			r.fail("bad multiset entry")
			break
		}
		a.addN(v, c)
	}
	return r.done()
}

// ---- FIRST_VALUE, LAST_VALUE ----

// firstLastAcc ignores NULLs, as Flink's FirstValue/LastValue. With
// retract it keeps every value in arrival order; retracting removes the
// earliest equal value.
type firstLastAcc struct {
	t       types.DataType
	last    bool
	retract bool
	val     any
	vals    []any
}

func (a *firstLastAcc) Add(args []any) error {
	v := args[0]
	if v == nil {
		return nil
	}
	if a.retract {
		a.vals = append(a.vals, v)
		return nil
	}
	if a.last || a.val == nil {
		a.val = v
	}
	return nil
}

func (a *firstLastAcc) Retract(args []any) error {
	if !a.retract {
		return fmt.Errorf("%w", ErrNoRetract)
	}
	v := args[0]
	if v == nil {
		return nil
	}
	for i, x := range a.vals {
		if types.Equal(x, v, a.t) {
			a.vals = append(a.vals[:i], a.vals[i+1:]...)
			break
		}
	}
	return nil
}

func (a *firstLastAcc) Merge(o Accumulator) error {
	b := o.(*firstLastAcc)
	if a.retract {
		a.vals = append(a.vals, b.vals...)
		return nil
	}
	if b.val != nil && (a.last || a.val == nil) {
		a.val = b.val
	}
	return nil
}

func (a *firstLastAcc) Result() (any, error) {
	if !a.retract {
		return a.val, nil
	}
	if len(a.vals) == 0 {
		return nil, nil
	}
	if a.last {
		return a.vals[len(a.vals)-1], nil
	}
	return a.vals[0], nil
}

func (a *firstLastAcc) Reset() { a.val, a.vals = nil, nil }

func (a *firstLastAcc) AppendState(buf []byte) []byte {
	if !a.retract {
		return types.AppendValue(buf, a.t, a.val)
	}
	buf = binary.AppendVarint(buf, int64(len(a.vals)))
	for _, v := range a.vals {
		buf = types.AppendValue(buf, a.t, v)
	}
	return buf
}

func (a *firstLastAcc) DecodeState(b []byte) error {
	r := stateReader{b: b}
	a.Reset()
	if !a.retract {
		a.val = r.value(a.t)
		return r.done()
	}
	n := r.count()
	for i := 0; i < n && r.err == nil; i++ {
		v := r.value(a.t)
		if v == nil {
			r.fail("NULL in value list")
			break
		}
		a.vals = append(a.vals, v)
	}
	return r.done()
}

// ---- LISTAGG ----

// listAggAcc concatenates non-NULL values in arrival order with the
// separator (default ','; the second argument, a literal in Flink, once
// seen). Retract removes the earliest equal value, as Flink's
// ListAggWithRetract.
type listAggAcc struct {
	sep  string
	vals []string
}

func (a *listAggAcc) Add(args []any) error {
	if len(args) > 1 && args[1] != nil {
		a.sep = args[1].(string)
	}
	if args[0] != nil {
		a.vals = append(a.vals, args[0].(string))
	}
	return nil
}

func (a *listAggAcc) Retract(args []any) error {
	if args[0] == nil {
		return nil
	}
	s := args[0].(string)
	for i, x := range a.vals {
		if x == s {
			a.vals = append(a.vals[:i], a.vals[i+1:]...)
			break
		}
	}
	return nil
}

func (a *listAggAcc) Merge(o Accumulator) error {
	b := o.(*listAggAcc)
	a.vals = append(a.vals, b.vals...)
	if b.sep != "," {
		a.sep = b.sep
	}
	return nil
}

func (a *listAggAcc) Result() (any, error) {
	if len(a.vals) == 0 {
		return nil, nil
	}
	return strings.Join(a.vals, a.sep), nil
}

func (a *listAggAcc) Reset() { a.vals = nil }

func (a *listAggAcc) AppendState(buf []byte) []byte {
	buf = types.AppendValue(buf, tString, a.sep)
	buf = binary.AppendVarint(buf, int64(len(a.vals)))
	for _, v := range a.vals {
		buf = types.AppendValue(buf, tString, v)
	}
	return buf
}

func (a *listAggAcc) DecodeState(b []byte) error {
	r := stateReader{b: b}
	a.vals = nil
	sep, _ := r.value(tString).(string)
	a.sep = sep
	n := r.count()
	for i := 0; i < n && r.err == nil; i++ {
		s, ok := r.value(tString).(string)
		if !ok {
			r.fail("NULL in LISTAGG state")
			break
		}
		a.vals = append(a.vals, s)
	}
	return r.done()
}

// ---- STDDEV, VAR ----

// varAcc keeps count, sum and sum of squares, as Flink's rewrite of these
// aggregates into SUM(x*x), SUM(x) and COUNT(x):
// VAR_POP = (Σx² - (Σx)²/n) / n, VAR_SAMP divides by n - 1. It computes in
// float64 and casts to the result type (truncating for integers).
type varAcc struct {
	res       types.DataType
	pop, sqrt bool
	n         int64
	sum, sq   float64
}

func (a *varAcc) Add(args []any) error {
	if args[0] != nil {
		x := toF64(args[0])
		a.n++
		a.sum += x
		a.sq += x * x
	}
	return nil
}

func (a *varAcc) Retract(args []any) error {
	if args[0] != nil {
		x := toF64(args[0])
		a.n--
		a.sum -= x
		a.sq -= x * x
	}
	return nil
}

func (a *varAcc) Merge(o Accumulator) error {
	b := o.(*varAcc)
	a.n += b.n
	a.sum += b.sum
	a.sq += b.sq
	return nil
}

func (a *varAcc) Result() (any, error) {
	div := a.n
	if !a.pop {
		div--
	}
	if a.n == 0 || div <= 0 {
		return nil, nil
	}
	v := (a.sq - a.sum*a.sum/float64(a.n)) / float64(div)
	if v < 0 {
		v = 0
	}
	if a.sqrt {
		v = math.Sqrt(v)
	}
	switch a.res.Kind {
	case types.KindDouble:
		return v, nil
	case types.KindFloat:
		return float32(v), nil
	case types.KindDecimal:
		d, err := types.DecimalFromFloat64(v)
		if err != nil {
			return nil, nil
		}
		return decOut(d, a.res), nil
	}
	return intOut(int64(v), a.res), nil
}

func (a *varAcc) Reset() { a.n, a.sum, a.sq = 0, 0, 0 }

func (a *varAcc) AppendState(buf []byte) []byte {
	buf = binary.AppendVarint(buf, a.n)
	buf = appendF64(buf, a.sum)
	return appendF64(buf, a.sq)
}

func (a *varAcc) DecodeState(b []byte) error {
	r := stateReader{b: b}
	a.n, a.sum, a.sq = r.varint(), r.f64(), r.f64()
	return r.done()
}

// ---- COLLECT ----

type collectAcc struct {
	t      types.DataType
	keys   []string
	counts map[string]*mmEntry
}

func (a *collectAcc) addN(v any, n int64) {
	k := string(types.AppendKey(nil, a.t, v))
	if e := a.counts[k]; e != nil {
		e.n += n
		return
	}
	a.keys = append(a.keys, k)
	a.counts[k] = &mmEntry{v: v, n: n}
}

func (a *collectAcc) Add(args []any) error {
	if args[0] != nil {
		a.addN(args[0], 1)
	}
	return nil
}

func (a *collectAcc) Retract(args []any) error {
	if args[0] != nil {
		a.addN(args[0], -1)
	}
	return nil
}

func (a *collectAcc) Merge(o Accumulator) error {
	b := o.(*collectAcc)
	for _, k := range b.keys {
		a.addN(b.counts[k].v, b.counts[k].n)
	}
	return nil
}

func (a *collectAcc) Result() (any, error) {
	m := &types.Map{}
	for _, k := range a.keys {
		if e := a.counts[k]; e.n > 0 {
			m.Keys = append(m.Keys, e.v)
			m.Values = append(m.Values, int32(e.n))
		}
	}
	return m, nil
}

func (a *collectAcc) Reset() { a.keys, a.counts = nil, map[string]*mmEntry{} }

func (a *collectAcc) AppendState(buf []byte) []byte {
	buf = binary.AppendVarint(buf, int64(len(a.keys)))
	for _, k := range a.keys {
		buf = binary.AppendVarint(buf, a.counts[k].n)
		buf = types.AppendValue(buf, a.t, a.counts[k].v)
	}
	return buf
}

func (a *collectAcc) DecodeState(b []byte) error {
	r := stateReader{b: b}
	a.Reset()
	n := r.count()
	for i := 0; i < n && r.err == nil; i++ {
		c := r.varint()
		v := r.value(a.t)
		if v == nil {
			r.fail("NULL in COLLECT state")
			break
		}
		a.addN(v, c)
	}
	return r.done()
}

// ---- DISTINCT ----

type distinctEntry struct {
	args []any
	n    int64
}

// distinctAcc feeds its inner accumulator each distinct argument tuple
// once, counting copies so that Retract forwards only the last one.
type distinctAcc struct {
	inner Accumulator
	types []types.DataType
	seen  map[string]*distinctEntry
	order []string
}

func (a *distinctAcc) key(args []any) string {
	var b []byte
	for i, t := range a.types {
		b = types.AppendKey(b, t, args[i])
	}
	return string(b)
}

func (a *distinctAcc) skip(args []any) bool {
	for _, v := range args {
		if v == nil {
			return true // aggregates ignore NULL arguments
		}
	}
	return false
}

func (a *distinctAcc) addN(args []any, n int64) error {
	k := a.key(args)
	if e := a.seen[k]; e != nil {
		e.n += n
		return nil
	}
	cp := append([]any(nil), args...)
	a.seen[k] = &distinctEntry{args: cp, n: n}
	a.order = append(a.order, k)
	return a.inner.Add(cp)
}

func (a *distinctAcc) Add(args []any) error {
	if a.skip(args) {
		return nil
	}
	return a.addN(args, 1)
}

func (a *distinctAcc) Retract(args []any) error {
	if a.skip(args) {
		return nil
	}
	k := a.key(args)
	e := a.seen[k]
	if e == nil {
		return nil
	}
	e.n--
	if e.n > 0 {
		return nil
	}
	delete(a.seen, k)
	for i, o := range a.order {
		if o == k {
			a.order = append(a.order[:i], a.order[i+1:]...)
			break
		}
	}
	return a.inner.Retract(e.args)
}

func (a *distinctAcc) Merge(o Accumulator) error {
	b := o.(*distinctAcc)
	for _, k := range b.order {
		if err := a.addN(b.seen[k].args, b.seen[k].n); err != nil {
			return err
		}
	}
	return nil
}

func (a *distinctAcc) Result() (any, error) { return a.inner.Result() }

func (a *distinctAcc) Reset() {
	a.inner.Reset()
	a.seen, a.order = map[string]*distinctEntry{}, nil
}

func (a *distinctAcc) AppendState(buf []byte) []byte {
	buf = binary.AppendVarint(buf, int64(len(a.order)))
	for _, k := range a.order {
		e := a.seen[k]
		buf = binary.AppendVarint(buf, e.n)
		for i, t := range a.types {
			buf = types.AppendValue(buf, t, e.args[i])
		}
	}
	return a.inner.AppendState(buf)
}

func (a *distinctAcc) DecodeState(b []byte) error {
	r := stateReader{b: b}
	a.seen, a.order = map[string]*distinctEntry{}, nil
	n := r.count()
	for i := 0; i < n && r.err == nil; i++ {
		c := r.varint()
		args := make([]any, len(a.types))
		for j, t := range a.types {
			args[j] = r.value(t)
		}
		if r.err != nil {
			break
		}
		k := a.key(args)
		if c <= 0 || a.seen[k] != nil {
			r.fail("bad distinct entry")
			break
		}
		a.seen[k] = &distinctEntry{args: args, n: c}
		a.order = append(a.order, k)
	}
	if r.err != nil {
		return r.err
	}
	return a.inner.DecodeState(r.b)
}
