package parser

// reserved words cannot be used as unquoted identifiers. The set is the part
// of Flink's (Calcite's) reserved words that this grammar needs to stay
// unambiguous: clause and operator keywords, words that start special
// expressions, and words that may follow a table or select item where an
// implicit alias could stand. Flink reserves more (e.g. VALUE, YEAR); those
// are accepted here as identifiers, which only makes the parser more lenient.
var reserved = map[string]bool{
	"ALL": true, "AND": true, "ARRAY": true, "AS": true, "ASC": true,
	"BETWEEN": true, "BY": true, "CASE": true, "CAST": true, "CROSS": true,
	"CURRENT_DATE": true, "CURRENT_TIME": true, "CURRENT_TIMESTAMP": true,
	"DATE": true, "DESC": true, "DISTINCT": true, "ELSE": true, "END": true,
	"ESCAPE": true, "EXCEPT": true, "EXISTS": true, "FALSE": true, "FETCH": true,
	"FILTER": true, "FOR": true, "FROM": true, "FULL": true, "GROUP": true,
	"HAVING": true, "IN": true, "INNER": true, "INTERSECT": true, "INTERVAL": true,
	"IS": true, "JOIN": true, "LATERAL": true, "LEFT": true, "LIKE": true,
	"LIMIT": true, "LOCALTIME": true, "LOCALTIMESTAMP": true, "MAP": true,
	"MATCH_RECOGNIZE": true, "MINUS": true, "MULTISET": true, "NATURAL": true,
	"NOT": true, "NULL": true, "OFFSET": true, "ON": true, "OR": true,
	"ORDER": true, "OUTER": true, "OVER": true, "PARTITION": true, "RIGHT": true,
	"ROW": true, "SELECT": true, "SIMILAR": true, "TABLE": true, "THEN": true,
	"TIME": true, "TIMESTAMP": true, "TRUE": true, "UNION": true, "UNKNOWN": true,
	"UNNEST": true, "USING": true, "VALUES": true, "WHEN": true, "WHERE": true,
	"WINDOW": true, "WITH": true, "WITHIN": true,
}

// callableReserved are reserved words that are still function names when
// followed by '(' (LEFT(s, n), RIGHT(s, n)).
var callableReserved = map[string]bool{"LEFT": true, "RIGHT": true}

// contextual words have a meaning in some position of the grammar without
// being reserved. The printer quotes identifiers spelled like them (and like
// reserved words) so its output never depends on how the parser resolves
// such a position.
var contextual = map[string]bool{
	"ADD": true, "AFTER": true, "ALTER": true, "ASYMMETRIC": true, "BEGIN": true,
	"BOTH": true, "CASCADE": true, "CATALOG": true, "CATALOGS": true, "CEIL": true,
	"CEILING": true, "COLUMNS": true, "COMMENT": true, "CONSTRAINT": true,
	"CREATE": true, "CUBE": true, "CURRENT": true, "DATABASE": true, "DATABASES": true,
	"DESCRIBE": true, "DESCRIPTOR": true, "DRAIN": true, "DROP": true,
	"ENFORCED": true, "EXCLUDING": true, "EXECUTE": true, "EXPLAIN": true,
	"EXTENDED": true, "EXTRACT": true, "FIRST": true, "FLOOR": true,
	"FOLLOWING": true, "FUNCTION": true, "FUNCTIONS": true, "GROUPING": true,
	"IF": true, "ILIKE": true, "INCLUDING": true, "INSERT": true, "INTO": true,
	"JOB": true, "JOBS": true, "KEY": true, "LANGUAGE": true, "LAST": true,
	"LEADING": true, "METADATA": true, "MODIFY": true, "MODULES": true,
	"NEXT": true, "NULLS": true, "ONLY": true, "ORDINALITY": true,
	"OVERLAY": true, "OVERWRITE": true, "OVERWRITING": true, "PARTITIONED": true,
	"PLACING": true, "PLAN": true, "POSITION": true, "PRECEDING": true,
	"PRIMARY": true, "RANGE": true, "RENAME": true, "REPLACE": true, "RESET": true,
	"RESTRICT": true, "ROLLUP": true, "ROWS": true, "SAVEPOINT": true, "SET": true,
	"SETS": true, "SHOW": true, "STATEMENT": true, "STOP": true, "SUBSTRING": true,
	"SYMMETRIC": true, "SYSTEM": true, "SYSTEM_TIME": true, "TEMPORARY": true,
	"TIMESTAMPADD": true, "TIMESTAMPDIFF": true, "TO": true, "TRAILING": true,
	"TRIM": true, "TRY_CAST": true, "UNBOUNDED": true, "USE": true, "VIEW": true,
	"VIEWS": true, "VIRTUAL": true, "WATERMARK": true, "ZONE": true,
	// Reserved in Flink though not needed by this grammar: quoting them
	// keeps printed SQL acceptable to Flink too.
	"VALUE": true, "USER": true, "RANK": true,
	// Words of the MATCH_RECOGNIZE clause.
	"MEASURES": true, "DEFINE": true, "PATTERN": true, "PERMUTE": true,
	"SUBSET": true, "RUNNING": true, "FINAL": true, "ONE": true, "PER": true,
	"SKIP": true, "PAST": true, "MATCH": true,
}

// timeUnits maps the spellings of time units to their normal form.
var timeUnits = map[string]TimeUnit{
	"YEAR": "YEAR", "YEARS": "YEAR", "QUARTER": "QUARTER", "QUARTERS": "QUARTER",
	"MONTH": "MONTH", "MONTHS": "MONTH", "WEEK": "WEEK", "WEEKS": "WEEK",
	"DAY": "DAY", "DAYS": "DAY", "HOUR": "HOUR", "HOURS": "HOUR",
	"MINUTE": "MINUTE", "MINUTES": "MINUTE", "SECOND": "SECOND", "SECONDS": "SECOND",
	"MILLISECOND": "MILLISECOND", "MILLISECONDS": "MILLISECOND",
	"MICROSECOND": "MICROSECOND", "MICROSECONDS": "MICROSECOND",
	"NANOSECOND": "NANOSECOND", "NANOSECONDS": "NANOSECOND",
	"DOW": "DOW", "DOY": "DOY", "ISODOW": "ISODOW", "ISOYEAR": "ISOYEAR",
	"EPOCH": "EPOCH", "DECADE": "DECADE", "CENTURY": "CENTURY",
	"MILLENNIUM": "MILLENNIUM",
}

// intervalUnits are the units an interval qualifier may use, in order of
// size (a qualifier's start must be larger than its end).
var intervalUnitRank = map[TimeUnit]int{
	"YEAR": 1, "QUARTER": 2, "MONTH": 3, "WEEK": 4, "DAY": 5, "HOUR": 6, "MINUTE": 7, "SECOND": 8,
}

// validIntervalRanges are the X TO Y qualifiers of the SQL standard.
var validIntervalRanges = map[[2]TimeUnit]bool{
	{"YEAR", "MONTH"}: true,
	{"DAY", "HOUR"}:   true, {"DAY", "MINUTE"}: true, {"DAY", "SECOND"}: true,
	{"HOUR", "MINUTE"}: true, {"HOUR", "SECOND"}: true,
	{"MINUTE", "SECOND"}: true,
}

// needsQuotes reports whether an identifier part must be backquoted to be
// read back as the same identifier.
func needsQuotes(s string) bool {
	if s == "" {
		return true
	}
	for i, r := range s {
		if i == 0 && !isIdentStart(r) || i > 0 && !isIdentPart(r) {
			return true
		}
	}
	u := upper(s)
	if reserved[u] || contextual[u] {
		return true
	}
	if _, ok := timeUnits[u]; ok {
		return true
	}
	// _x'..' would lex as a charset string only when a quote follows, which
	// the printer never writes directly after an identifier.
	return false
}
