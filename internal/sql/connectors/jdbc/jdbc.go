// Package jdbc is the SQL layer's `jdbc` connector, Flink's JDBC SQL
// connector for MySQL and MariaDB on weir's connector/jdbc: a sink that
// appends, or with a primary key upserts and deletes (so it takes
// updating queries), and a bounded source that scans a table, optionally
// split into ranges of a numeric column. Importing it registers the
// connector with the planner.
package jdbc

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/weirproject/weir/connector/jdbc"
	"github.com/weirproject/weir/internal/sql/catalog"
	"github.com/weirproject/weir/internal/sql/planner"
	"github.com/weirproject/weir/internal/sql/types"
	"github.com/weirproject/weir/stream"
)

func init() {
	planner.RegisterSource("jdbc", source)
	planner.RegisterSink("jdbc", sink)
}

var options = []string{"url", "table-name", "username", "password", "driver", "connection.max-retry-timeout",
	"scan.partition.column", "scan.partition.num", "scan.partition.lower-bound", "scan.partition.upper-bound", "scan.fetch-size",
	"scan.auto-commit", "scan.parallelism",
	"sink.buffer-flush.max-rows", "sink.buffer-flush.interval", "sink.max-retries", "sink.parallelism"}

// dsn turns the table's 'url' (a go-sql-driver DSN, or a JDBC URL
// jdbc:mysql://host:port/db?params) and credentials into a DSN, with the
// session settings the value conversions rely on: DATETIME and TIMESTAMP
// values in UTC.
func dsn(c *planner.TableContext) (string, error) {
	raw, ok := c.Option("url")
	if !ok || raw == "" {
		return "", c.OptionError("url", "missing: the database, jdbc:mysql://host:port/db or user:pass@tcp(host:port)/db")
	}
	var cfg *mysql.Config
	if strings.HasPrefix(raw, "jdbc:") {
		u, err := url.Parse(strings.TrimPrefix(raw, "jdbc:"))
		if err != nil || (u.Scheme != "mysql" && u.Scheme != "mariadb") || u.Host == "" {
			return "", c.OptionError("url", "%q is not jdbc:mysql://host[:port]/database", raw)
		}
		cfg = mysql.NewConfig()
		cfg.Net, cfg.Addr = "tcp", u.Host
		if u.Port() == "" {
			cfg.Addr += ":3306"
		}
		cfg.DBName = strings.TrimPrefix(u.Path, "/")
		if u.User != nil {
			cfg.User = u.User.Username()
			cfg.Passwd, _ = u.User.Password()
		}
		for k, vs := range u.Query() {
			v := vs[len(vs)-1]
			switch k {
			case "user":
				cfg.User = v
			case "password":
				cfg.Passwd = v
			case "useSSL":
				if v == "true" {
					cfg.TLSConfig = "true"
				}
			case "serverTimezone", "characterEncoding", "useUnicode", "allowPublicKeyRetrieval", "rewriteBatchedStatements", "autoReconnect":
				// Java driver settings without a meaning here.
			default:
				return "", c.OptionError("url", "JDBC URL parameter %q is not supported (give a go-sql-driver DSN for driver options)", k)
			}
		}
	} else {
		var err error
		if cfg, err = mysql.ParseDSN(raw); err != nil {
			return "", c.OptionError("url", "%v (want jdbc:mysql://host:port/db or user:pass@tcp(host:port)/db)", err)
		}
	}
	if u, ok := c.Option("username"); ok {
		cfg.User = u
	}
	if p, ok := c.Option("password"); ok {
		cfg.Passwd = p
	}
	if cfg.DBName == "" {
		return "", c.OptionError("url", "names no database")
	}
	cfg.ParseTime = true
	cfg.Loc = time.UTC
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	cfg.Params["time_zone"] = "'+00:00'"
	return cfg.FormatDSN(), nil
}

func checkColumns(c *planner.TableContext) error {
	for _, col := range c.Table.Columns {
		if col.Kind == catalog.Metadata {
			return fmt.Errorf("table %s: column %s: the jdbc connector has no metadata", c.Table.Path, col.Name)
		}
		if col.Kind == catalog.Physical && !supported(col.Type) {
			return fmt.Errorf("table %s: column %s: the jdbc connector cannot map type %s to MySQL", c.Table.Path, col.Name, col.Type)
		}
	}
	return nil
}

func supported(t types.DataType) bool {
	switch t.Kind {
	case types.KindBoolean, types.KindTinyInt, types.KindSmallInt, types.KindInt, types.KindBigInt, types.KindFloat, types.KindDouble,
		types.KindDecimal, types.KindChar, types.KindVarChar, types.KindBinary, types.KindVarBinary, types.KindDate, types.KindTime,
		types.KindTimestamp, types.KindTimestampLTZ:
		return true
	}
	return false
}

func tableName(c *planner.TableContext) (string, error) {
	name, ok := c.Option("table-name")
	if !ok || name == "" {
		return "", c.OptionError("table-name", "missing: the table in the database")
	}
	return name, nil
}

func positiveInt(c *planner.TableContext, key string, def int64) (int64, error) {
	s, ok := c.Option(key)
	if !ok {
		return def, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, c.OptionError(key, "%q is not a non-negative integer", s)
	}
	return n, nil
}

func sink(c *planner.TableContext, in *planner.Rows, fields []planner.Field, updating bool) error {
	t := c.Table
	if err := checkTable(c); err != nil {
		return err
	}
	if updating && len(t.PrimaryKey) == 0 {
		return planner.ErrUpdatesNotSupported
	}
	d, err := dsn(c)
	if err != nil {
		return err
	}
	name, err := tableName(c)
	if err != nil {
		return err
	}
	opts := jdbc.SinkOptions{DSN: d, Table: name, Key: t.PrimaryKey}
	ts := make([]types.DataType, len(fields))
	for i, f := range fields {
		opts.Columns = append(opts.Columns, f.Name)
		ts[i] = f.Type
	}
	rows, err := positiveInt(c, "sink.buffer-flush.max-rows", 100)
	if err != nil {
		return err
	}
	opts.BatchSize = int(max(rows, 1))
	opts.BatchInterval = time.Second
	if s, ok := c.Option("sink.buffer-flush.interval"); ok {
		iv, err := parseDuration(s)
		if err != nil {
			return c.OptionError("sink.buffer-flush.interval", "%v", err)
		}
		opts.BatchInterval = iv
		if iv == 0 {
			opts.BatchInterval = -1 // only size and checkpoints flush
		}
	}
	retries, err := positiveInt(c, "sink.max-retries", 3)
	if err != nil {
		return err
	}
	opts.MaxRetries = int(retries)
	if retries == 0 {
		opts.MaxRetries = -1
	}
	row := func(r types.Record) []any {
		out := make([]any, len(r.Row))
		for i, v := range r.Row {
			out[i] = toParam(v, ts[i])
		}
		return out
	}
	s, err := jdbc.NewSink(opts, row)
	if err != nil {
		return fmt.Errorf("table %s: %w", t.Path, err)
	}
	stm := in
	if len(t.PrimaryKey) > 0 {
		// -U and -D delete the key's row, as Flink's JDBC sink does: a
		// -U that a +U follows is replaced by it in the batch, and one
		// that none follows (a filter after an aggregation dropped the
		// new row) removes the row as it should.
		if s, err = s.WithDeletes(func(r types.Record) bool { return !r.Kind.IsAccumulate() }); err != nil {
			return err
		}
		keyPos := make([]int, len(t.PrimaryKey))
		keyTypes := make([]types.DataType, len(t.PrimaryKey))
		for i, k := range t.PrimaryKey {
			j := slices.Index(opts.Columns, k)
			if j < 0 {
				return fmt.Errorf("table %s: the query gives primary key column %s no value", t.Path, k)
			}
			keyPos[i], keyTypes[i] = j, ts[j]
		}
		// Keyed by the primary key, so that the changes of a key reach
		// one writer in order, whatever the parallelisms.
		stm = stream.KeyBy(in, func(r types.Record) string {
			var b []byte
			for i, k := range keyPos {
				b = types.AppendKey(b, keyTypes[i], r.Row[k])
			}
			return string(b)
		}).Stream()
	}
	snk := stream.SinkTo[types.Record](stm, s, c.Name()).UID(c.UID("jdbc"))
	if p, ok := c.Option("sink.parallelism"); ok {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 {
			return c.OptionError("sink.parallelism", "%q is not a positive integer", p)
		}
		snk.SetParallelism(n)
	}
	return nil
}

// toParam is the value a SQL value is written as: numbers and strings as
// themselves, DECIMAL as its exact text, dates and times as MySQL's
// literals (TIMESTAMP_LTZ in UTC, the session's time zone).
func toParam(v any, t types.DataType) any {
	if v == nil {
		return nil
	}
	switch t.Kind {
	case types.KindBoolean, types.KindDouble, types.KindChar, types.KindVarChar:
		return v
	case types.KindBinary, types.KindVarBinary:
		if b := v.([]byte); b != nil {
			return b
		}
		return []byte{} // the driver writes a nil slice as NULL
	case types.KindTinyInt:
		return int64(v.(int8))
	case types.KindSmallInt:
		return int64(v.(int16))
	case types.KindInt:
		return int64(v.(int32))
	case types.KindBigInt:
		return v
	case types.KindFloat:
		// The shortest decimal form, so that FLOAT columns get the
		// value, not float64's reading of the float32.
		return strconv.FormatFloat(float64(v.(float32)), 'g', -1, 32)
	case types.KindDecimal:
		return v.(types.Decimal).String()
	case types.KindDate:
		return string(types.AppendDate(nil, v.(types.Date)))
	case types.KindTime:
		return string(types.AppendTime(nil, v.(types.Time), min(t.Precision, 6)))
	case types.KindTimestamp:
		return string(types.AppendTimestamp(nil, v.(types.Timestamp), min(t.Precision, 6)))
	case types.KindTimestampLTZ:
		return string(types.AppendTimestamp(nil, v.(types.TimestampLTZ).ToTimestamp(time.UTC), min(t.Precision, 6)))
	}
	return types.FormatIn(v, t, time.UTC)
}

// fromColumn converts a value the driver scanned into the column's SQL
// type.
func fromColumn(raw any, t types.DataType) (any, error) {
	switch x := raw.(type) {
	case nil:
		return nil, nil
	case time.Time:
		ts := types.TimestampFromTime(x.UTC())
		switch t.Kind {
		case types.KindTimestampLTZ:
			return ts.ToLTZ(time.UTC), nil
		case types.KindDate:
			return ts.Date(), nil
		}
		return types.CastIn(ts, types.TimestampType(9), t, time.UTC)
	case []byte:
		if t.Kind.IsBinaryString() {
			return types.CastIn(slices.Clone(x), types.Bytes(), t, time.UTC)
		}
		return fromText(string(x), t)
	case string:
		if t.Kind.IsBinaryString() {
			return types.CastIn([]byte(x), types.Bytes(), t, time.UTC)
		}
		return fromText(x, t)
	case int64:
		if t.Kind == types.KindBoolean {
			return x != 0, nil
		}
		return types.CastIn(x, types.BigInt(), t, time.UTC)
	case float64:
		return types.CastIn(x, types.Double(), t, time.UTC)
	case float32:
		return types.CastIn(x, types.Float(), t, time.UTC)
	case bool:
		return types.CastIn(x, types.Boolean(), t, time.UTC)
	}
	return nil, fmt.Errorf("unexpected %T from the driver", raw)
}

func fromText(s string, t types.DataType) (any, error) {
	switch t.Kind {
	case types.KindBoolean:
		// MySQL's BOOLEAN is TINYINT(1).
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return types.CastIn(s, types.String(), t, time.UTC)
		}
		return n != 0, nil
	case types.KindTimestampLTZ:
		ts, err := types.ParseTimestamp(s, 9)
		if err != nil {
			return nil, err
		}
		return types.CastIn(ts.ToLTZ(time.UTC), types.TimestampLTZType(9), t, time.UTC)
	case types.KindFloat:
		f, err := strconv.ParseFloat(s, 32)
		if err != nil {
			return nil, fmt.Errorf("%q is not a FLOAT", s)
		}
		return float32(f), nil
	}
	return types.CastIn(s, types.String(), t, time.UTC)
}

// checkTable checks a jdbc table's options and columns, as every use of
// it (source, lookup source, sink) does first.
func checkTable(c *planner.TableContext) error {
	if err := c.CheckOptions(options); err != nil {
		return err
	}
	return checkColumns(c)
}

// checkedDSN checks the table and returns its data source name.
func checkedDSN(c *planner.TableContext) (string, error) {
	if err := checkTable(c); err != nil {
		return "", err
	}
	return dsn(c)
}

func source(c *planner.TableContext) (*planner.Rows, error) {
	t := c.Table
	d, err := checkedDSN(c)
	if err != nil {
		return nil, err
	}
	name, err := tableName(c)
	if err != nil {
		return nil, err
	}
	// Only the columns the query reads are selected (projection
	// push-down); at least one, so that the SELECT counts rows.
	var phys []int
	var cols []string
	for pass := 0; pass < 2 && len(phys) == 0; pass++ {
		for i, col := range t.Columns {
			if col.Kind == catalog.Physical && (pass == 1 || c.Needed(i)) {
				phys = append(phys, i)
				cols = append(cols, "`"+strings.ReplaceAll(col.Name, "`", "``")+"`")
				if pass == 1 {
					break
				}
			}
		}
	}
	opts := jdbc.SourceOptions{DSN: d}
	skip := 0
	if pc, ok := c.Option("scan.partition.column"); ok {
		i := t.Column(pc)
		if i < 0 || t.Columns[i].Kind != catalog.Physical || !t.Columns[i].Type.Kind.IsIntegral() {
			return nil, c.OptionError("scan.partition.column", "%q is not an integer column of the table", pc)
		}
		opts.SplitColumn = pc
		n, err := positiveInt(c, "scan.partition.num", 0)
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return nil, c.OptionError("scan.partition.num", "missing: a partitioned scan needs the number of partitions")
		}
		opts.Splits = int(n)
		for _, b := range []struct {
			key string
			dst **int64
		}{{"scan.partition.lower-bound", &opts.Lower}, {"scan.partition.upper-bound", &opts.Upper}} {
			s, ok := c.Option(b.key)
			if !ok {
				continue
			}
			v, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return nil, c.OptionError(b.key, "%q is not an integer", s)
			}
			*b.dst = &v
		}
		opts.Query = "SELECT " + strings.Join(cols, ", ") + " FROM " + jdbc.QuoteTable(name)
	} else {
		for _, k := range []string{"scan.partition.num", "scan.partition.lower-bound", "scan.partition.upper-bound"} {
			if _, ok := c.Option(k); ok {
				return nil, c.OptionError(k, "needs 'scan.partition.column'")
			}
		}
		// One split, over a constant column: the whole table in one query.
		zero := int64(0)
		opts.SplitColumn, opts.Lower, opts.Upper, opts.Splits = "__weir_split", &zero, &zero, 1
		opts.Query = "SELECT 0 AS `__weir_split`, " + strings.Join(cols, ", ") + " FROM " + jdbc.QuoteTable(name)
		skip = 1
	}
	if n, err := positiveInt(c, "scan.fetch-size", 0); err != nil {
		return nil, err
	} else if n > 0 {
		opts.PollRows = int(n)
	}
	width := len(t.Columns)
	scan := func(scan func(dest ...any) error) (types.Record, error) {
		vals := make([]any, skip+len(phys))
		ptrs := make([]any, len(vals))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := scan(ptrs...); err != nil {
			return types.Record{}, err
		}
		row := make(types.Row, width)
		for i, ci := range phys {
			v, err := fromColumn(vals[skip+i], t.Columns[ci].Type)
			if err != nil {
				return types.Record{}, fmt.Errorf("table %s, column %s: %w", t.Path, t.Columns[ci].Name, err)
			}
			row[ci] = v
		}
		return types.Record{Kind: types.Insert, Row: row}, nil
	}
	src, err := jdbc.NewSource(opts, scan)
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", t.Path, err)
	}
	s := stream.FromSource[types.Record](c.Env, src, c.Name()).UID(c.UID("jdbc"))
	if p, ok := c.Option("scan.parallelism"); ok {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 {
			return nil, c.OptionError("scan.parallelism", "%q is not a positive integer", p)
		}
		s = s.SetParallelism(n)
	}
	return c.Rows(s), nil
}

// parseDuration reads Flink's durations: "5 s", "10min", "1 h", "500ms"
// (a bare number is milliseconds).
func parseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	i := strings.IndexFunc(s, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	if i < 0 {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%q is not a duration", s)
		}
		return time.Duration(n) * time.Millisecond, nil
	}
	n, err := strconv.ParseFloat(s[:i], 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration", s)
	}
	unit := strings.ToLower(strings.TrimSpace(s[i:]))
	mult := map[string]time.Duration{"ms": time.Millisecond, "s": time.Second, "sec": time.Second, "min": time.Minute,
		"m": time.Minute, "h": time.Hour, "d": 24 * time.Hour}[unit]
	if mult == 0 {
		return 0, fmt.Errorf("%q: unknown unit %q (ms, s, min, h, d)", s, unit)
	}
	return time.Duration(n * float64(mult)), nil
}
