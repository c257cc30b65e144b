package functions

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/weirproject/weir/internal/sql/types"
)

// wallClock returns the wall-clock reading of a DATE, TIMESTAMP or
// TIMESTAMP_LTZ value (LTZ in the session zone).
func wallClock(ctx *Context, v any) (types.Timestamp, bool) {
	switch x := v.(type) {
	case types.Timestamp:
		return x, true
	case types.TimestampLTZ:
		return x.ToTimestamp(ctx.Location()), true
	case types.Date:
		return x.Timestamp(), true
	case types.Time:
		return types.Timestamp{}.AddNanos(int64(x)), true
	}
	return types.Timestamp{}, false
}

func isTemporal(t types.DataType) bool {
	return t.Kind.IsDatetime() || t.Kind == types.KindNull
}

// isoWeek returns the ISO-8601 week number.
func isoWeek(d types.Date) int64 {
	y, m, dd := d.YMD()
	_, w := time.Date(y, time.Month(m), dd, 0, 0, 0, 0, time.UTC).ISOWeek()
	return int64(w)
}

// dayOfWeek is 1 (Sunday) .. 7 (Saturday), as Calcite's DOW.
func dayOfWeek(d types.Date) int64 { return int64((int(d)%7+7+4)%7) + 1 }

// extractUnit evaluates EXTRACT(unit FROM v).
func extractUnit(ctx *Context, unit string, v any) (any, error) {
	switch x := v.(type) {
	case types.IntervalMonths:
		switch unit {
		case "YEAR":
			return int64(x) / 12, nil
		case "MONTH":
			return int64(x) % 12, nil
		case "QUARTER":
			return int64(x)%12/3 + 1, nil
		}
		return nil, fmt.Errorf("EXTRACT: unit %s not supported for INTERVAL YEAR TO MONTH", unit)
	case types.IntervalMillis:
		ms := int64(x)
		switch unit {
		case "DAY":
			return ms / 86400000, nil
		case "HOUR":
			return ms % 86400000 / 3600000, nil
		case "MINUTE":
			return ms % 3600000 / 60000, nil
		case "SECOND":
			return ms % 60000 / 1000, nil
		case "MILLISECOND":
			return ms % 60000, nil
		case "EPOCH":
			return ms / 1000, nil
		}
		return nil, fmt.Errorf("EXTRACT: unit %s not supported for INTERVAL DAY TO SECOND", unit)
	}
	ts, ok := wallClock(ctx, v)
	if !ok {
		return nil, fmt.Errorf("EXTRACT: unsupported value %T", v)
	}
	d := ts.Date()
	y, m, dd := d.YMD()
	tod := int64(ts.TimeOfDay())
	switch unit {
	case "YEAR":
		return int64(y), nil
	case "QUARTER":
		return int64((m-1)/3 + 1), nil
	case "MONTH":
		return int64(m), nil
	case "WEEK":
		return isoWeek(d), nil
	case "DAY", "DAYOFMONTH":
		return int64(dd), nil
	case "DOY", "DAYOFYEAR":
		return int64(d-types.MakeDate(y, 1, 1)) + 1, nil
	case "DOW", "DAYOFWEEK":
		return dayOfWeek(d), nil
	case "ISODOW":
		return (dayOfWeek(d)+5)%7 + 1, nil
	case "ISOYEAR":
		yy, _, _ := d.YMD()
		iy, _ := time.Date(yy, time.Month(m), dd, 0, 0, 0, 0, time.UTC).ISOWeek()
		return int64(iy), nil
	case "HOUR":
		return tod / 3600e9, nil
	case "MINUTE":
		return tod / 60e9 % 60, nil
	case "SECOND":
		return tod / 1e9 % 60, nil
	case "MILLISECOND":
		return tod / 1e6 % 60000, nil
	case "MICROSECOND":
		return tod / 1e3 % 60000000, nil
	case "NANOSECOND":
		return tod % 60000000000, nil
	case "EPOCH":
		if l, ok := v.(types.TimestampLTZ); ok {
			return floorDiv(l.Millis, 1000), nil
		}
		return floorDiv(ts.Millis, 1000), nil
	case "DECADE":
		return int64(floorDivI(y, 10)), nil
	case "CENTURY":
		if y > 0 {
			return int64((y + 99) / 100), nil
		}
		return int64(y/100 - 1), nil
	case "MILLENNIUM":
		if y > 0 {
			return int64((y + 999) / 1000), nil
		}
		return int64(y/1000 - 1), nil
	}
	return nil, fmt.Errorf("EXTRACT: unknown time unit %q", unit)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func floorDivI(a, b int) int { return int(floorDiv(int64(a), int64(b))) }

// truncUnit floors (or ceils) a wall-clock timestamp to a unit.
func truncUnit(ts types.Timestamp, unit string, ceil bool) (types.Timestamp, error) {
	d := ts.Date()
	y, m, _ := d.YMD()
	var fl types.Timestamp
	var next func(types.Timestamp) types.Timestamp
	fixed := func(n int64) {
		tod := int64(ts.TimeOfDay())
		fl = ts.AddNanos(-(tod % n))
		next = func(t types.Timestamp) types.Timestamp { return t.AddNanos(n) }
	}
	switch unit {
	case "YEAR":
		fl = types.MakeDate(y, 1, 1).Timestamp()
		next = func(t types.Timestamp) types.Timestamp { return t.AddMonths(12) }
	case "QUARTER":
		fl = types.MakeDate(y, (m-1)/3*3+1, 1).Timestamp()
		next = func(t types.Timestamp) types.Timestamp { return t.AddMonths(3) }
	case "MONTH":
		fl = types.MakeDate(y, m, 1).Timestamp()
		next = func(t types.Timestamp) types.Timestamp { return t.AddMonths(1) }
	case "WEEK": // weeks start on Sunday, as Calcite's FLOOR(... TO WEEK)
		fl = (d - types.Date(dayOfWeek(d)-1)).Timestamp()
		next = func(t types.Timestamp) types.Timestamp { return t.AddNanos(7 * 86400e9) }
	case "DAY":
		fixed(86400e9)
	case "HOUR":
		fixed(3600e9)
	case "MINUTE":
		fixed(60e9)
	case "SECOND":
		fixed(1e9)
	case "MILLISECOND":
		fixed(1e6)
	default:
		return ts, fmt.Errorf("FLOOR/CEIL: unknown time unit %q", unit)
	}
	if ceil && fl.Compare(ts) != 0 {
		return next(fl), nil
	}
	return fl, nil
}

// unitNanos for TIMESTAMPADD/TIMESTAMPDIFF's fixed-length units.
var unitNanos = map[string]int64{
	"NANOSECOND": 1, "MICROSECOND": 1e3, "MILLISECOND": 1e6, "SECOND": 1e9, "MINUTE": 60e9,
	"HOUR": 3600e9, "DAY": 86400e9, "WEEK": 7 * 86400e9,
}
var unitMonths = map[string]int{"MONTH": 1, "QUARTER": 3, "YEAR": 12}

func normUnit(s string) string {
	u := strings.ToUpper(strings.TrimSpace(s))
	u = strings.TrimPrefix(u, "SQL_TSI_")
	switch u {
	case "FRAC_SECOND":
		return "MICROSECOND"
	case "DAYS", "HOURS", "MINUTES", "SECONDS", "MONTHS", "YEARS", "WEEKS":
		return strings.TrimSuffix(u, "S")
	}
	return u
}

func monthsBetween(a, b types.Timestamp) int64 {
	ay, am, ad := a.Date().YMD()
	by, bm, bd := b.Date().YMD()
	n := int64((by-ay)*12 + (bm - am))
	// A partial month does not count: compare day and time of day.
	ar := int64(ad)*86400e9 + int64(a.TimeOfDay())
	br := int64(bd)*86400e9 + int64(b.TimeOfDay())
	if n > 0 && br < ar {
		n--
	} else if n < 0 && br > ar {
		n++
	}
	return n
}

func nanosBetween(a, b types.Timestamp) int64 {
	return (b.Millis-a.Millis)*1e6 + int64(b.NanoOfMilli-a.NanoOfMilli)
}

func registerTemporal(r *Registry) {
	ts3 := types.TimestampType(3)
	ltz3 := types.TimestampLTZType(3)
	nowRes := func(res types.DataType, f func(ctx *Context) any) Resolver {
		return func(args []types.DataType) (*Scalar, error) {
			if len(args) != 0 {
				return nil, nil
			}
			return &Scalar{Result: res.NotNull(), Eval: func(ctx *Context, _ []any) (any, error) { return f(ctx), nil }}, nil
		}
	}
	r.add("CURRENT_TIMESTAMP|NOW|CURRENT_ROW_TIMESTAMP", "$()", nowRes(ltz3, func(ctx *Context) any {
		return types.TimestampLTZ(types.TruncateTimestamp(types.Timestamp(types.TimestampLTZFromTime(ctx.now())), 3))
	}))
	r.add("LOCALTIMESTAMP", "LOCALTIMESTAMP()", nowRes(ts3, func(ctx *Context) any {
		return types.TruncateTimestamp(types.TimestampFromTime(ctx.now().In(ctx.Location())), 3)
	}))
	r.add("CURRENT_DATE", "CURRENT_DATE()", nowRes(types.DateType(), func(ctx *Context) any {
		return types.TimestampFromTime(ctx.now().In(ctx.Location())).Date()
	}))
	r.add("CURRENT_TIME|LOCALTIME", "$()", nowRes(types.TimeType(0), func(ctx *Context) any {
		return types.TruncateTime(types.TimestampFromTime(ctx.now().In(ctx.Location())).TimeOfDay(), 0)
	}))

	// EXTRACT(unit FROM x) is called as EXTRACT('UNIT', x).
	r.add("EXTRACT", "EXTRACT(<UNIT STRING>, <DATETIME|INTERVAL>)", func(args []types.DataType) (*Scalar, error) {
		if len(args) != 2 || !isString(args[0]) || !(isTemporal(args[1]) || args[1].Kind.IsInterval()) {
			return nil, nil
		}
		return bind(args, args, tBigInt.NotNull(), true, func(ctx *Context, a []any) (any, error) {
			return extractUnit(ctx, normUnit(a[0].(string)), a[1])
		}), nil
	})
	for _, f := range []struct{ name, unit string }{
		{"YEAR", "YEAR"}, {"QUARTER", "QUARTER"}, {"MONTH", "MONTH"}, {"WEEK", "WEEK"},
		{"DAYOFYEAR", "DOY"}, {"DAYOFMONTH", "DAY"}, {"DAYOFWEEK", "DOW"},
		{"HOUR", "HOUR"}, {"MINUTE", "MINUTE"}, {"SECOND", "SECOND"},
	} {
		unit := f.unit
		r.add(f.name, "$(<DATETIME>)", func(args []types.DataType) (*Scalar, error) {
			if len(args) != 1 || !isTemporal(args[0]) {
				return nil, nil
			}
			return bind(args, args, tBigInt.NotNull(), true, func(ctx *Context, a []any) (any, error) {
				return extractUnit(ctx, unit, a[0])
			}), nil
		})
	}
	// FLOOR/CEIL(x TO unit) are called as FLOOR(x, 'UNIT').
	for _, n := range []string{"FLOOR", "CEIL", "CEILING"} {
		ceil := n != "FLOOR"
		r.add(n, "$(<DATETIME>, <UNIT STRING>)", func(args []types.DataType) (*Scalar, error) {
			if len(args) != 2 || !isTemporal(args[0]) || !isString(args[1]) {
				return nil, nil
			}
			t := args[0]
			return bind(args, args, t, true, func(ctx *Context, a []any) (any, error) {
				unit := normUnit(a[1].(string))
				switch x := a[0].(type) {
				case types.Timestamp:
					return truncUnit(x, unit, ceil)
				case types.TimestampLTZ:
					loc := ctx.Location()
					r, err := truncUnit(x.ToTimestamp(loc), unit, ceil)
					return r.ToLTZ(loc), err
				case types.Date:
					r, err := truncUnit(x.Timestamp(), unit, ceil)
					return r.Date(), err
				case types.Time:
					r, err := truncUnit(types.Timestamp{}.AddNanos(int64(x)), unit, ceil)
					return r.TimeOfDay(), err
				}
				return nil, nil
			}), nil
		})
	}
	r.add("TIMESTAMPADD", "TIMESTAMPADD(<UNIT STRING>, <INTEGER>, <DATETIME>)", func(args []types.DataType) (*Scalar, error) {
		if len(args) != 3 || !isString(args[0]) || !isIntegral(args[1]) || !isTemporal(args[2]) {
			return nil, nil
		}
		return bind(args, args, args[2], true, func(ctx *Context, a []any) (any, error) {
			unit := normUnit(a[0].(string))
			n := toInt64(a[1])
			var iv any
			if m, ok := unitMonths[unit]; ok {
				iv = types.IntervalMonths(n * int64(m))
			} else if ns, ok := unitNanos[unit]; ok {
				if ns < 1e6 {
					return shiftNanos(ctx, a[2], n*ns), nil
				}
				iv = types.IntervalMillis(n * ns / 1e6)
			} else {
				return nil, fmt.Errorf("TIMESTAMPADD: unknown time unit %q", a[0])
			}
			return shiftTemporal(ctx, a[2], iv, 1), nil
		}), nil
	})
	r.add("TIMESTAMPDIFF", "TIMESTAMPDIFF(<UNIT STRING>, <DATETIME>, <DATETIME>)", func(args []types.DataType) (*Scalar, error) {
		if len(args) != 3 || !isString(args[0]) || !isTemporal(args[1]) || !isTemporal(args[2]) {
			return nil, nil
		}
		return bind(args, args, tInt.NotNull(), true, func(ctx *Context, a []any) (any, error) {
			unit := normUnit(a[0].(string))
			var x, y types.Timestamp
			l1, ok1 := a[1].(types.TimestampLTZ)
			l2, ok2 := a[2].(types.TimestampLTZ)
			if ok1 && ok2 { // instants: compare in UTC so DST does not matter
				x, y = types.Timestamp(l1), types.Timestamp(l2)
			} else {
				x, _ = wallClock(ctx, a[1])
				y, _ = wallClock(ctx, a[2])
			}
			if m, ok := unitMonths[unit]; ok {
				return int32(monthsBetween(x, y) / int64(m)), nil
			}
			if ns, ok := unitNanos[unit]; ok {
				return int32(nanosBetween(x, y) / ns), nil
			}
			return nil, fmt.Errorf("TIMESTAMPDIFF: unknown time unit %q", a[0])
		}), nil
	})
	dateFormat := func(ctx *Context, a []any) (any, error) {
		var ts types.Timestamp
		if s, ok := a[0].(string); ok {
			t, err := types.ParseTimestamp(s, 9)
			if err != nil {
				return nil, nil
			}
			ts = t
		} else {
			ts, _ = wallClock(ctx, a[0])
		}
		out, err := formatJava(ts, a[1].(string))
		if err != nil {
			return nil, err
		}
		return out, nil
	}
	r.add("DATE_FORMAT", "DATE_FORMAT(<TIMESTAMP|STRING>, <STRING>)", func(args []types.DataType) (*Scalar, error) {
		if len(args) != 2 || !(isTemporal(args[0]) || isString(args[0])) || !isString(args[1]) {
			return nil, nil
		}
		return bind(args, args, tString, true, dateFormat), nil
	})
	toTs := func(ctx *Context, a []any) (any, error) {
		s := a[0].(string)
		if len(a) == 1 {
			ts, err := types.ParseTimestamp(s, 3)
			if err != nil {
				return nil, nil
			}
			return ts, nil
		}
		ts, ok := parseJava(strings.TrimSpace(s), a[1].(string))
		if !ok {
			return nil, nil // Flink returns NULL when the string does not parse
		}
		return types.TruncateTimestamp(ts, 3), nil
	}
	r.add("TO_TIMESTAMP", "TO_TIMESTAMP(<STRING> [, <STRING>])", strFn("s", ts3, toTs))
	r.add("TO_TIMESTAMP", "", strFn("ss", ts3, toTs))
	toDate := func(ctx *Context, a []any) (any, error) {
		s := a[0].(string)
		if len(a) == 1 {
			d, err := types.ParseDate(s)
			if err != nil {
				return nil, nil
			}
			return d, nil
		}
		ts, ok := parseJava(strings.TrimSpace(s), a[1].(string))
		if !ok {
			return nil, nil
		}
		return ts.Date(), nil
	}
	r.add("TO_DATE", "TO_DATE(<STRING> [, <STRING>])", strFn("s", types.DateType(), toDate))
	r.add("TO_DATE", "", strFn("ss", types.DateType(), toDate))
	r.add("TO_TIMESTAMP_LTZ", "TO_TIMESTAMP_LTZ(<NUMERIC>, <INTEGER>)", func(args []types.DataType) (*Scalar, error) {
		if len(args) != 2 || !isNumeric(args[0]) || !isIntegral(args[1]) {
			return nil, nil
		}
		return bind(args, args, ltz3, true, func(_ *Context, a []any) (any, error) {
			prec := toInt64(a[1])
			var ms int64
			switch prec {
			case 0:
				if d, ok := a[0].(types.Decimal); ok {
					ms = d.Mul(types.DecimalFromInt64(1000)).Int64()
				} else if f, ok := a[0].(float64); ok {
					ms = int64(f * 1000)
				} else {
					ms = toInt64(a[0]) * 1000
				}
			case 3:
				ms = toInt64(a[0])
			default:
				return nil, fmt.Errorf("TO_TIMESTAMP_LTZ: precision must be 0 or 3, got %d", prec)
			}
			return types.TimestampLTZ{Millis: ms}, nil
		}), nil
	})
	r.add("UNIX_TIMESTAMP", "UNIX_TIMESTAMP()", func(args []types.DataType) (*Scalar, error) {
		if len(args) != 0 {
			return nil, nil
		}
		return &Scalar{Result: tBigInt.NotNull(), Eval: func(ctx *Context, _ []any) (any, error) {
			return ctx.now().Unix(), nil
		}}, nil
	})
	unixTs := func(ctx *Context, a []any) (any, error) {
		pattern := "yyyy-MM-dd HH:mm:ss"
		if len(a) > 1 {
			pattern = a[1].(string)
		}
		ts, ok := parseJava(strings.TrimSpace(a[0].(string)), pattern)
		if !ok {
			return int64(math.MinInt64), nil // Flink's documented result for an unparsable string
		}
		return floorDiv(ts.ToLTZ(ctx.Location()).Millis, 1000), nil
	}
	r.add("UNIX_TIMESTAMP", "UNIX_TIMESTAMP(<STRING> [, <STRING>])", strFn("s", tBigInt.NotNull(), unixTs))
	r.add("UNIX_TIMESTAMP", "", strFn("ss", tBigInt.NotNull(), unixTs))
	fromUnix := func(ctx *Context, a []any) (any, error) {
		pattern := "yyyy-MM-dd HH:mm:ss"
		if len(a) > 1 {
			pattern = a[1].(string)
		}
		ts := types.TimestampLTZ{Millis: toInt64(a[0]) * 1000}.ToTimestamp(ctx.Location())
		return formatJava(ts, pattern)
	}
	r.add("FROM_UNIXTIME", "FROM_UNIXTIME(<INTEGER> [, <STRING>])", strFn("i", sNN, fromUnix))
	r.add("FROM_UNIXTIME", "", strFn("is", sNN, fromUnix))
	r.add("CONVERT_TZ", "CONVERT_TZ(<STRING>, <STRING>, <STRING>)", strFn("sss", tString, func(_ *Context, a []any) (any, error) {
		ts, err := types.ParseTimestamp(a[0].(string), 9)
		if err != nil {
			return nil, nil
		}
		from, err := loadZone(a[1].(string))
		if err != nil {
			return nil, err
		}
		to, err := loadZone(a[2].(string))
		if err != nil {
			return nil, err
		}
		out := ts.ToLTZ(from).ToTimestamp(to)
		return formatJava(out, "yyyy-MM-dd HH:mm:ss")
	}))
}

// shiftNanos adds nanoseconds to a temporal value (sub-millisecond units).
func shiftNanos(ctx *Context, v any, n int64) any {
	switch x := v.(type) {
	case types.Timestamp:
		return x.AddNanos(n)
	case types.TimestampLTZ:
		return types.TimestampLTZ(types.Timestamp(x).AddNanos(n))
	case types.Time:
		return types.Time(((int64(x)+n)%(86400e9) + 86400e9) % 86400e9)
	case types.Date:
		return x + types.Date(n/86400e9)
	}
	return nil
}

// loadZone accepts IANA names, "UTC", and offsets like "GMT+08:00".
func loadZone(name string) (*time.Location, error) {
	if strings.HasPrefix(name, "GMT") || strings.HasPrefix(name, "UTC") {
		off := name[3:]
		if off == "" {
			return time.UTC, nil
		}
		var sign, h, m int = 1, 0, 0
		if off[0] == '-' {
			sign = -1
		}
		if _, err := fmt.Sscanf(off[1:], "%d:%d", &h, &m); err != nil {
			if _, err := fmt.Sscanf(off[1:], "%d", &h); err != nil {
				return nil, fmt.Errorf("invalid time zone %q", name)
			}
		}
		return time.FixedZone(name, sign*(h*3600+m*60)), nil
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("invalid time zone %q: %v", name, err)
	}
	return loc, nil
}
