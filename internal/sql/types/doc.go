// Package types holds the logical data types of weir's SQL layer and the Go
// values a query computes on, with Flink's semantics: type rendering as
// Flink's DESCRIBE, the implicit and explicit cast rules, least restrictive
// common types and arithmetic result types, CAST itself, a total order,
// hashing, a compact value encoding and an order-preserving key encoding.
//
// # Values
//
// A value is a Go any. NULL is nil. The representation per type is fixed so
// that the planner, the functions and the operators agree without checks:
//
//	BOOLEAN bool; TINYINT int8; SMALLINT int16; INT int32; BIGINT int64
//	FLOAT float32; DOUBLE float64; DECIMAL(p, s) Decimal
//	CHAR/VARCHAR/STRING string; BINARY/VARBINARY/BYTES []byte
//	DATE Date (days since 1970-01-01); TIME(p) Time (nanos of day)
//	TIMESTAMP(p) Timestamp{Millis, NanoOfMilli} (wall clock, no zone)
//	TIMESTAMP_LTZ(p) TimestampLTZ (an instant; shown in the session zone)
//	INTERVAL YEAR TO MONTH IntervalMonths; INTERVAL DAY TO SECOND IntervalMillis
//	ARRAY<T> []any; MAP<K, V> and MULTISET<T> *Map (MULTISET values are
//	int32 counts); ROW<...> Row
//
// A top-level changelog record is a Record: a Row and its RowKind (+I, -U,
// +U, -D), kept beside the row rather than in it so that nested ROW values
// and append-only rows need no kind.
//
// # Decisions
//
// Decimal is exact, with an int64 unscaled fast path (no allocation for
// p ≤ 18 additions, multiplications and comparisons) and a math/big
// fallback, as Flink's DecimalData; rounding is HALF_UP and a value that
// overflows its DECIMAL(p, s) becomes NULL, as in Flink. CAST follows
// Flink ≥ 1.15 with legacy cast behaviour off: invalid input is an error
// wrapping ErrCast (TRY_CAST gives NULL), numeric narrowing wraps like
// Java's primitive casts. TIMESTAMP_LTZ conversions take the session zone
// (CastIn, FormatIn); the zone-less variants use UTC.
//
// Compare is a total order that puts NULL first and NaN last; AppendKey
// encodes values so that byte order equals Compare order (composite keys
// concatenate); Hash hashes that canonical encoding with xxhash64, so it is
// stable across processes. AppendValue/AppendRow are the compact state and
// network encodings; decoding never panics on malformed bytes.
package types
