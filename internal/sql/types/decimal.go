package types

import (
	"math"
	"math/big"
	"math/bits"
	"strconv"
	"strings"
)

// Decimal is an exact decimal number: unscaled × 10^-scale. Values whose
// unscaled part fits an int64 (every DECIMAL(p, s) with p ≤ 18) are held
// inline and their additions, multiplications and comparisons do not
// allocate; larger ones fall back to math/big, like Flink's DecimalData
// (compact long up to precision 18, BigDecimal above).
//
// Invariant: big is nil whenever the unscaled value fits an int64, so that
// equal values have one representation (Hash relies on it).
type Decimal struct {
	u     int64
	big   *big.Int
	scale int32
}

var pow10 = func() [19]int64 {
	var p [19]int64
	p[0] = 1
	for i := 1; i < 19; i++ {
		p[i] = p[i-1] * 10
	}
	return p
}()

var bigPow10Cache [80]*big.Int

func init() {
	v := big.NewInt(1)
	for i := range bigPow10Cache {
		bigPow10Cache[i] = new(big.Int).Set(v)
		v.Mul(v, big.NewInt(10))
	}
}

func bigPow10(n int) *big.Int {
	if n < len(bigPow10Cache) {
		return bigPow10Cache[n]
	}
	return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil)
}

// MakeDecimal returns unscaled × 10^-scale.
func MakeDecimal(unscaled int64, scale int) Decimal { return Decimal{u: unscaled, scale: int32(scale)} }

// DecimalFromBig returns unscaled × 10^-scale; unscaled is not retained.
func DecimalFromBig(unscaled *big.Int, scale int) Decimal {
	return normBig(new(big.Int).Set(unscaled), int32(scale))
}

func normBig(b *big.Int, scale int32) Decimal {
	if b.IsInt64() {
		return Decimal{u: b.Int64(), scale: scale}
	}
	return Decimal{big: b, scale: scale}
}

// Scale returns the number of digits after the point.
func (d Decimal) Scale() int { return int(d.scale) }

// Unscaled returns the unscaled value as a new big.Int.
func (d Decimal) Unscaled() *big.Int {
	if d.big != nil {
		return new(big.Int).Set(d.big)
	}
	return big.NewInt(d.u)
}

// UnscaledInt64 returns the unscaled value if it fits an int64.
func (d Decimal) UnscaledInt64() (int64, bool) { return d.u, d.big == nil }

// Sign returns -1, 0 or 1.
func (d Decimal) Sign() int {
	if d.big != nil {
		return d.big.Sign()
	}
	switch {
	case d.u < 0:
		return -1
	case d.u > 0:
		return 1
	}
	return 0
}

// IsZero reports whether d is zero.
func (d Decimal) IsZero() bool { return d.big == nil && d.u == 0 }

// Neg returns -d.
func (d Decimal) Neg() Decimal {
	if d.big == nil && d.u != math.MinInt64 {
		return Decimal{u: -d.u, scale: d.scale}
	}
	return normBig(new(big.Int).Neg(d.Unscaled()), d.scale)
}

// Abs returns |d|.
func (d Decimal) Abs() Decimal {
	if d.Sign() < 0 {
		return d.Neg()
	}
	return d
}

// Precision returns the number of digits of the unscaled value (1 for 0),
// as BigDecimal.precision.
func (d Decimal) Precision() int {
	if d.big == nil {
		u := d.u
		if u < 0 {
			if u == math.MinInt64 {
				return 19
			}
			u = -u
		}
		n := 1
		for n < 19 && u >= pow10[n] {
			n++
		}
		return n
	}
	a := new(big.Int).Abs(d.big)
	n := len(a.Text(10))
	return n
}

// mulPow10 multiplies the unscaled value by 10^n without changing scale.
func mulPow10(u int64, n int) (int64, bool) {
	if n >= 19 {
		return 0, u == 0
	}
	hi, lo := bits.Mul64(uint64(absInt64(u)), uint64(pow10[n]))
	if hi != 0 || lo > math.MaxInt64 || u == math.MinInt64 {
		return 0, false
	}
	if u < 0 {
		return -int64(lo), true
	}
	return int64(lo), true
}

func absInt64(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// upscale returns the unscaled value at a scale ≥ d's as a compact int64 if
// possible.
func (d Decimal) upscaleCompact(scale int32) (int64, bool) {
	if d.big != nil {
		return 0, false
	}
	return mulPow10(d.u, int(scale-d.scale))
}

func (d Decimal) upscaleBig(scale int32) *big.Int {
	b := d.Unscaled()
	if scale > d.scale {
		b.Mul(b, bigPow10(int(scale-d.scale)))
	}
	return b
}

// Add returns a + b exactly, at scale max(a.scale, b.scale).
func (a Decimal) Add(b Decimal) Decimal {
	s := a.scale
	if b.scale > s {
		s = b.scale
	}
	if x, ok := a.upscaleCompact(s); ok {
		if y, ok := b.upscaleCompact(s); ok {
			z := x + y
			// Overflow iff both operands have the same sign and the sum's differs.
			if (x >= 0) != (y >= 0) || (z >= 0) == (x >= 0) {
				return Decimal{u: z, scale: s}
			}
		}
	}
	z := a.upscaleBig(s)
	return normBig(z.Add(z, b.upscaleBig(s)), s)
}

// Sub returns a - b exactly.
func (a Decimal) Sub(b Decimal) Decimal { return a.Add(b.Neg()) }

// Mul returns a × b exactly, at scale a.scale + b.scale.
func (a Decimal) Mul(b Decimal) Decimal {
	s := a.scale + b.scale
	if a.big == nil && b.big == nil && a.u != math.MinInt64 && b.u != math.MinInt64 {
		hi, lo := bits.Mul64(uint64(absInt64(a.u)), uint64(absInt64(b.u)))
		if hi == 0 && lo <= math.MaxInt64 {
			z := int64(lo)
			if (a.u < 0) != (b.u < 0) {
				z = -z
			}
			return Decimal{u: z, scale: s}
		}
	}
	z := a.Unscaled()
	return normBig(z.Mul(z, b.Unscaled()), s)
}

// RoundingMode selects how Rescale drops digits.
type RoundingMode uint8

// Rounding modes, as java.math.RoundingMode.
const (
	HalfUp   RoundingMode = iota // SQL's CAST and ROUND
	Down                         // towards zero (TRUNCATE)
	Floor                        // towards negative infinity
	Ceiling                      // towards positive infinity
	HalfEven                     // banker's rounding
)

// Rescale returns d at the given scale, rounding HALF_UP when digits are
// dropped.
func (d Decimal) Rescale(scale int) Decimal { return d.RescaleMode(scale, HalfUp) }

// RescaleMode returns d at the given scale, rounding with mode.
func (d Decimal) RescaleMode(scale int, mode RoundingMode) Decimal {
	s := int32(scale)
	if s == d.scale {
		return d
	}
	if s > d.scale {
		if v, ok := d.upscaleCompact(s); ok {
			return Decimal{u: v, scale: s}
		}
		return normBig(d.upscaleBig(s), s)
	}
	drop := int(d.scale - s)
	if d.big == nil && drop < 19 {
		div := pow10[drop]
		q, r := d.u/div, d.u%div
		return Decimal{u: q + roundAdj(q, r, div, d.u < 0, mode), scale: s}
	}
	q, r := new(big.Int).QuoRem(d.Unscaled(), bigPow10(drop), new(big.Int))
	adj := roundAdjBig(q, r, bigPow10(drop), d.Sign() < 0, mode)
	if adj != 0 {
		q.Add(q, big.NewInt(adj))
	}
	return normBig(q, s)
}

// roundAdj returns the adjustment (-1, 0, 1) to add to a truncated quotient q
// given remainder r of a division by div (r has the dividend's sign).
func roundAdj(q, r, div int64, neg bool, mode RoundingMode) int64 {
	if r == 0 {
		return 0
	}
	ar := absInt64(r)
	switch mode {
	case Down:
		return 0
	case Floor:
		if neg {
			return -1
		}
		return 0
	case Ceiling:
		if neg {
			return 0
		}
		return 1
	case HalfEven:
		twice := ar * 2
		if twice > div || (twice == div && q%2 != 0) {
			return sgn(neg)
		}
		return 0
	}
	// HALF_UP: away from zero when |r| ≥ div/2. div/2 computed without overflow.
	if ar >= div-ar {
		return sgn(neg)
	}
	return 0
}

func sgn(neg bool) int64 {
	if neg {
		return -1
	}
	return 1
}

func roundAdjBig(q, r, div *big.Int, neg bool, mode RoundingMode) int64 {
	if r.Sign() == 0 {
		return 0
	}
	switch mode {
	case Down:
		return 0
	case Floor:
		if neg {
			return -1
		}
		return 0
	case Ceiling:
		if neg {
			return 0
		}
		return 1
	}
	twice := new(big.Int).Abs(r)
	twice.Lsh(twice, 1)
	c := twice.Cmp(div)
	if c > 0 || (c == 0 && (mode == HalfUp || q.Bit(0) == 1)) {
		return sgn(neg)
	}
	return 0
}

// Cmp compares a and b numerically (scales may differ).
func (a Decimal) Cmp(b Decimal) int {
	if a.big == nil && b.big == nil {
		if a.scale == b.scale {
			switch {
			case a.u < b.u:
				return -1
			case a.u > b.u:
				return 1
			}
			return 0
		}
		s := a.scale
		if b.scale > s {
			s = b.scale
		}
		x, ok1 := a.upscaleCompact(s)
		y, ok2 := b.upscaleCompact(s)
		if ok1 && ok2 {
			switch {
			case x < y:
				return -1
			case x > y:
				return 1
			}
			return 0
		}
	}
	s := a.scale
	if b.scale > s {
		s = b.scale
	}
	return a.upscaleBig(s).Cmp(b.upscaleBig(s))
}

// Equal reports numeric equality (1.0 equals 1.00).
func (a Decimal) Equal(b Decimal) bool { return a.Cmp(b) == 0 }

// Quo returns a / b rounded HALF_UP to the given scale. Division by zero
// is an error.
func (a Decimal) Quo(b Decimal, scale int) (Decimal, error) {
	if b.IsZero() {
		return Decimal{}, errorf("division by zero")
	}
	// a/b at scale s = a.u × 10^(s - a.s + b.s) / b.u
	shift := scale - int(a.scale) + int(b.scale)
	num := a.Unscaled()
	den := b.Unscaled()
	if shift >= 0 {
		num.Mul(num, bigPow10(shift))
	} else {
		den.Mul(den, bigPow10(-shift))
	}
	q, r := new(big.Int).QuoRem(num, den, new(big.Int))
	neg := (num.Sign() < 0) != (den.Sign() < 0)
	absDen := new(big.Int).Abs(den)
	if adj := roundAdjBig(q, r, absDen, neg, HalfUp); adj != 0 {
		q.Add(q, big.NewInt(adj))
	}
	return normBig(q, int32(scale)), nil
}

// Rem returns the remainder of a / b truncated towards zero (sign of a), at
// scale max(a.scale, b.scale), as BigDecimal.remainder.
func (a Decimal) Rem(b Decimal) (Decimal, error) {
	if b.IsZero() {
		return Decimal{}, errorf("division by zero")
	}
	s := a.scale
	if b.scale > s {
		s = b.scale
	}
	if x, ok := a.upscaleCompact(s); ok {
		if y, ok := b.upscaleCompact(s); ok && !(x == math.MinInt64 && y == -1) {
			return Decimal{u: x % y, scale: s}, nil
		}
	}
	r := new(big.Int).Rem(a.upscaleBig(s), b.upscaleBig(s))
	return normBig(r, s), nil
}

// FitsPrecision reports whether d has at most p digits in total once at its
// current scale.
func (d Decimal) FitsPrecision(p int) bool {
	if d.big == nil && p >= 1 && p <= 18 {
		return d.u > -pow10[p] && d.u < pow10[p]
	}
	return d.Precision() <= p
}

// ToType rescales d to DECIMAL(p, s) HALF_UP; ok is false when the result
// needs more than p digits (Flink then yields NULL).
func (d Decimal) ToType(p, s int) (Decimal, bool) {
	r := d.Rescale(s)
	return r, r.FitsPrecision(p)
}

// Int64 truncates towards zero and keeps the low 64 bits, as
// BigDecimal.longValue.
func (d Decimal) Int64() int64 {
	t := d.RescaleMode(0, Down)
	if t.big == nil {
		return t.u
	}
	// Low 64 bits of two's complement.
	m := new(big.Int).And(t.big, new(big.Int).SetUint64(math.MaxUint64))
	return int64(m.Uint64())
}

// Float64 returns the nearest float64, as BigDecimal.doubleValue.
func (d Decimal) Float64() float64 {
	if d.big == nil && d.u > -(1<<53) && d.u < 1<<53 && d.scale >= 0 && d.scale <= 22 {
		// Both operands are exact, so one IEEE division rounds correctly.
		return float64(d.u) / float64pow10[d.scale]
	}
	f, _ := strconv.ParseFloat(d.String(), 64)
	return f
}

var float64pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// String renders d in plain notation with exactly scale fraction digits,
// as BigDecimal.toPlainString (Flink's DecimalData.toString).
func (d Decimal) String() string {
	return string(d.Append(nil))
}

// Append appends String() to buf.
func (d Decimal) Append(buf []byte) []byte {
	var digits []byte
	var tmp [24]byte
	neg := false
	if d.big == nil {
		u := d.u
		if u < 0 {
			neg = true
			digits = strconv.AppendUint(tmp[:0], uint64(-(u+1))+1, 10)
		} else {
			digits = strconv.AppendUint(tmp[:0], uint64(u), 10)
		}
	} else {
		neg = d.big.Sign() < 0
		digits = new(big.Int).Abs(d.big).Append(nil, 10)
	}
	if neg {
		buf = append(buf, '-')
	}
	s := int(d.scale)
	if s <= 0 {
		buf = append(buf, digits...)
		for i := 0; i < -s; i++ {
			buf = append(buf, '0')
		}
		return buf
	}
	if len(digits) <= s {
		buf = append(buf, '0', '.')
		for i := len(digits); i < s; i++ {
			buf = append(buf, '0')
		}
		return append(buf, digits...)
	}
	buf = append(buf, digits[:len(digits)-s]...)
	buf = append(buf, '.')
	return append(buf, digits[len(digits)-s:]...)
}

// ParseDecimal parses a decimal number in plain or scientific notation
// ("-12.50", "1.5E3", ".5"), keeping the scale it is written with (a
// negative scale from an exponent is normalised to 0). Leading and
// trailing whitespace is not accepted here; callers trim.
func ParseDecimal(s string) (Decimal, error) {
	if s == "" {
		return Decimal{}, errorf("empty decimal")
	}
	i := 0
	neg := false
	if s[0] == '+' || s[0] == '-' {
		neg = s[0] == '-'
		i++
	}
	var u int64
	var b *big.Int
	scale := 0
	nd := 0
	seenDot := false
	for ; i < len(s); i++ {
		c := s[i]
		if c == '.' {
			if seenDot {
				return Decimal{}, errorf("invalid decimal %q", s)
			}
			seenDot = true
			continue
		}
		if c < '0' || c > '9' {
			break
		}
		nd++
		if seenDot {
			scale++
		}
		dg := int64(c - '0')
		if b == nil {
			if u <= (math.MaxInt64-dg)/10 {
				u = u*10 + dg
				continue
			}
			b = big.NewInt(u)
		}
		b.Mul(b, bigPow10(1))
		b.Add(b, big.NewInt(dg))
	}
	if nd == 0 {
		return Decimal{}, errorf("invalid decimal %q", s)
	}
	exp := 0
	if i < len(s) {
		if s[i] != 'e' && s[i] != 'E' {
			return Decimal{}, errorf("invalid decimal %q", s)
		}
		e, err := strconv.Atoi(s[i+1:])
		if err != nil || strings.HasPrefix(s[i+1:], "+-") || e > 1000 || e < -1000 {
			return Decimal{}, errorf("invalid decimal exponent in %q", s)
		}
		exp = e
	}
	var d Decimal
	if b != nil {
		if neg {
			b.Neg(b)
		}
		d = normBig(b, int32(scale))
	} else {
		if neg {
			u = -u
		}
		d = Decimal{u: u, scale: int32(scale)}
	}
	if exp != 0 {
		ns := scale - exp
		if ns < 0 {
			d = normBig(d.upscaleBig(d.scale+int32(-ns)), 0)
			// upscaleBig multiplied by 10^-ns at the old scale; the value is
			// now unscaled × 10^(-ns) with scale 0 after reinterpretation.
			return d, nil
		}
		d.scale = int32(ns)
	}
	return d, nil
}

// DecimalFromInt64 returns v at scale 0.
func DecimalFromInt64(v int64) Decimal { return Decimal{u: v} }

// DecimalFromFloat64 returns the decimal written by the shortest repr of f
// (0.1 becomes 0.1), as BigDecimal.valueOf(double). NaN and infinities are
// errors.
func DecimalFromFloat64(f float64) (Decimal, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return Decimal{}, castErr("%v cannot be represented as a DECIMAL", f)
	}
	return ParseDecimal(strconv.FormatFloat(f, 'e', -1, 64))
}

// DecimalFromFloat32 as DecimalFromFloat64, with float32's shortest repr
// (Flink widens FLOAT to double first; (double)0.1f = 0.10000000149011612).
func DecimalFromFloat32(f float32) (Decimal, error) { return DecimalFromFloat64(float64(f)) }
