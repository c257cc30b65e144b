// Package functions holds the scalar functions, operators and aggregate
// functions of weir's SQL layer, with Flink's names and semantics, on the
// values of package types.
//
// # Scalar functions and operators
//
// A Registry maps names (case-insensitive) to overloads. Lookup(name, argument
// types) resolves one overload and returns a Scalar: its result type, a
// Deterministic flag for the planner's constant folding, and an Eval that
// takes argument values and a Context (session time zone, current time,
// random source). Implicit casts of the arguments (INT to BIGINT, CHAR to
// STRING, INT to DECIMAL ...) are built into Eval at lookup time, so Eval does
// no type dispatch of its own beyond what the values need. Eval may
// overwrite its args slice, which the caller owns and reuses.
//
// Operators are registered under their symbols: + - * / % (binary, and
// unary - and + with one argument), = <> < <= > >=, IS [NOT] DISTINCT FROM,
// AND, OR, NOT (three-valued), || , LIKE and SIMILAR TO (optional escape as a
// third argument), BETWEEN, IN (value list), IS [NOT] NULL/TRUE/FALSE/UNKNOWN.
// Functions that take a keyword in SQL take it as a leading string argument:
// EXTRACT('DAY', x), FLOOR(x, 'HOUR'), TIMESTAMPADD('WEEK', 1, x),
// TRIM('LEADING', 'x', s), POSITION(sub, s). CAST and TRY_CAST need a target
// type rather than a value and are built by CastScalar. Array and map
// element access is ITEM(container, index or key); ARRAY, MAP and ROW build
// values.
//
// NULL in gives NULL out unless SQL says otherwise (COALESCE, IS NULL,
// CONCAT_WS, IS JSON, AND/OR ...). Errors follow Flink: integer and
// DECIMAL division by zero fails the query; a DECIMAL that overflows its
// type becomes NULL; an invalid regular expression gives NULL.
//
// # Aggregates
//
// LookupAggregate(name, argument types, distinct) returns an Aggregate whose
// New(retract) makes Accumulators: Add, Retract (for updating inputs; MIN,
// MAX, FIRST_VALUE and LAST_VALUE keep a multiset or an ordered list only
// when made with retract), Merge (two-phase aggregation), Result, and
// AppendState/DecodeState so that accumulators live in keyed state and
// restore exactly. Result types are Flink's: COUNT is BIGINT NOT NULL, SUM of
// INT is INT, AVG of INT is INT (integer average), AVG of DECIMAL(p, s) is
// DECIMAL(38, max(6, s)), MIN/MAX keep the argument type.
//
// # Registries
//
// Builtins() is shared and read-only. NewRegistry() copies it; a Table
// environment holds one and registers user functions with RegisterScalar
// (declared types), RegisterFunc (a Go func, signature by reflection) and
// RegisterAggregate. There is no global mutable registry.
package functions
