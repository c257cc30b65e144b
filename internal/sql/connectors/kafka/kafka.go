// Package kafka is the SQL layer's `kafka` and `upsert-kafka` connectors,
// Flink's Kafka and Upsert Kafka SQL connectors on weir's Kafka source and
// sink (connector/kafka). Importing it registers both with the planner.
//
// A `kafka` table is an append-only log: its source reads records as
// inserts and its sink refuses updating queries. An `upsert-kafka` table
// is a changelog keyed by the table's primary key: its source turns the
// latest value of every key into a retract changelog (+I, -U, +U, -D)
// through a keyed normalization, as Flink's ChangelogNormalize does, and
// its sink writes the key's latest row, or a tombstone for a deletion.
package kafka

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirproject/weir/config"
	"github.com/weirproject/weir/connector/kafka"
	"github.com/weirproject/weir/internal/sql/catalog"
	"github.com/weirproject/weir/internal/sql/planner"
	"github.com/weirproject/weir/internal/sql/types"
	"github.com/weirproject/weir/stream"
)

func init() {
	planner.RegisterSource("kafka", func(c *planner.TableContext) (*planner.Rows, error) { return source(c, false) })
	planner.RegisterSink("kafka", func(c *planner.TableContext, in *planner.Rows, fields []planner.Field, updating bool) error {
		return sink(c, in, fields, updating, false)
	})
	planner.RegisterSource("upsert-kafka", func(c *planner.TableContext) (*planner.Rows, error) { return source(c, true) })
	planner.RegisterSink("upsert-kafka", func(c *planner.TableContext, in *planner.Rows, fields []planner.Field, _ bool) error {
		return sink(c, in, fields, true, true)
	})
	planner.RegisterChangelogSource("upsert-kafka")
}

// Options each connector knows, besides the format options.
var (
	commonOptions = []string{"topic", "properties.bootstrap.servers", "properties.group.id", "properties.isolation.level",
		"properties.transaction.timeout.ms", "properties.auto.offset.reset", "properties.client.id",
		"key.format", "value.format", "key.fields-prefix", "value.fields-include",
		"scan.bounded.mode", "scan.bounded.specific-offsets", "scan.topic-partition-discovery.interval", "scan.parallelism",
		"sink.delivery-guarantee", "sink.transactional-id-prefix", "sink.parallelism"}
	kafkaOnly  = []string{"format", "topic-pattern", "key.fields", "scan.startup.mode", "scan.startup.timestamp-millis", "sink.partitioner"}
	upsertOnly = []string{}
)

func knownOptions(upsert bool) (known, prefixes []string) {
	known = slices.Clone(commonOptions)
	if upsert {
		known = append(known, upsertOnly...)
	} else {
		known = append(known, kafkaOnly...)
	}
	for _, f := range []string{"json", "csv", "raw"} {
		for _, o := range formatOptions[f] {
			known = append(known, o, "key."+o, "value."+o)
		}
	}
	return known, nil
}

// layout is where a table's columns go in Kafka records.
type layout struct {
	t        *catalog.Table
	key      []int // table positions of the key columns (none: no key)
	value    []int // table positions of the value columns
	keyNames []string
	metadata []int // table positions of metadata columns
}

// tableLayout reads key.fields (or the primary key), key.fields-prefix and
// value.fields-include.
func tableLayout(c *planner.TableContext, upsert bool) (*layout, error) {
	t := c.Table
	l := &layout{t: t}
	var phys []int
	for i, col := range t.Columns {
		switch col.Kind {
		case catalog.Physical:
			phys = append(phys, i)
		case catalog.Metadata:
			l.metadata = append(l.metadata, i)
		}
	}
	var keyCols []string
	if upsert {
		if len(t.PrimaryKey) == 0 {
			return nil, fmt.Errorf("table %s: 'upsert-kafka' tables require to define a PRIMARY KEY constraint. The PRIMARY KEY specifies which columns should be read from or write to the Kafka message key. The PRIMARY KEY also defines records in the 'upsert-kafka' table should update or delete on which keys", t.Path)
		}
		keyCols = t.PrimaryKey
	} else if s, ok := c.Option("key.fields"); ok && s != "" {
		keyCols = strings.Split(s, ";")
	}
	prefix, _ := c.Option("key.fields-prefix")
	for _, name := range keyCols {
		i := t.Column(strings.TrimSpace(name))
		if i < 0 || t.Columns[i].Kind != catalog.Physical {
			return nil, c.OptionError("key.fields", "%q is not a physical column of the table", name)
		}
		if !strings.HasPrefix(t.Columns[i].Name, prefix) {
			return nil, c.OptionError("key.fields-prefix", "key column %s does not start with the prefix %q", t.Columns[i].Name, prefix)
		}
		l.key = append(l.key, i)
		l.keyNames = append(l.keyNames, strings.TrimPrefix(t.Columns[i].Name, prefix))
	}
	include, _ := c.Option("value.fields-include")
	switch strings.ToUpper(include) {
	case "", "ALL":
		if prefix != "" {
			return nil, c.OptionError("value.fields-include", "a 'key.fields-prefix' needs 'value.fields-include' = 'EXCEPT_KEY'")
		}
		l.value = phys
	case "EXCEPT_KEY":
		for _, i := range phys {
			if !slices.Contains(l.key, i) {
				l.value = append(l.value, i)
			}
		}
	default:
		return nil, c.OptionError("value.fields-include", "%q is not ALL or EXCEPT_KEY", include)
	}
	if len(l.key) > 0 {
		if _, ok := c.Option("key.format"); !ok {
			return nil, c.OptionError("key.format", "missing: the key columns (%s) need a key format", strings.Join(l.keyNames, ", "))
		}
	} else if _, ok := c.Option("key.format"); ok {
		return nil, c.OptionError("key.format", "set, but no 'key.fields' say which columns the key holds")
	}
	return l, nil
}

// formats builds the key and value formats; pos maps a table position to
// the position in the rows the format encodes (-1: not there).
func (l *layout) formats(c *planner.TableContext, upsert bool, pos func(int) int) (key, value *rowFormat, err error) {
	t := l.t
	valueKey := "value.format"
	if !upsert {
		_, hasFormat := c.Option("format")
		_, hasValue := c.Option("value.format")
		switch {
		case hasFormat && hasValue:
			return nil, nil, c.OptionError("value.format", "give either 'format' or 'value.format', not both")
		case hasFormat:
			valueKey = "format"
		case !hasValue:
			return nil, nil, c.OptionError("format", "missing: the format of the records (json, csv or raw), in 'format' or 'value.format'")
		}
	}
	mk := func(option, prefix string, cols []int, names []string) (*rowFormat, error) {
		ts := make([]types.DataType, len(cols))
		if names == nil {
			names = make([]string, len(cols))
			for i, ci := range cols {
				names[i] = t.Columns[ci].Name
			}
		}
		for i, ci := range cols {
			ts[i] = t.Columns[ci].Type
		}
		f, err := newFormat(c, option, prefix, names, ts)
		if err != nil {
			return nil, err
		}
		f.out = cols
		for _, ci := range cols {
			p := ci
			if pos != nil {
				p = pos(ci)
			}
			f.pos = append(f.pos, p)
		}
		return f, nil
	}
	if len(l.key) > 0 {
		if key, err = mk("key.format", "key.", l.key, l.keyNames); err != nil {
			return nil, nil, err
		}
	}
	prefix := "value."
	if valueKey == "format" {
		prefix = ""
	}
	if value, err = mk(valueKey, prefix, l.value, nil); err != nil {
		return nil, nil, err
	}
	return key, value, nil
}

// Metadata the connector reads, with the type it has.
var metadataTypes = map[string]types.DataType{
	"topic":          types.String().NotNull(),
	"partition":      types.Int().NotNull(),
	"offset":         types.BigInt().NotNull(),
	"timestamp":      types.TimestampLTZType(3).NotNull(),
	"timestamp-type": types.String().NotNull(),
	"headers":        types.MapType(types.String().NotNull(), types.Bytes()).NotNull(),
	"leader-epoch":   types.Int(),
}

// writable metadata: what a sink sets in the records it writes.
var writableMetadata = []string{"timestamp", "headers"}

func metadataKey(col catalog.Column) string {
	if col.MetadataKey != "" {
		return col.MetadataKey
	}
	return col.Name
}

func checkMetadata(c *planner.TableContext, l *layout) error {
	for _, i := range l.metadata {
		col := c.Table.Columns[i]
		k := metadataKey(col)
		mt, ok := metadataTypes[k]
		if !ok {
			var keys []string
			for k := range metadataTypes {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			return fmt.Errorf("table %s: column %s: unknown metadata key '%s' (the kafka connector has: %s)", c.Table.Path, col.Name, k, strings.Join(keys, ", "))
		}
		if !types.ExplicitCastable(mt, col.Type) {
			return fmt.Errorf("table %s: column %s: metadata '%s' is %s and cannot be read as %s", c.Table.Path, col.Name, k, mt, col.Type)
		}
	}
	return nil
}

// common reads the options both directions share.
type common struct {
	brokers         []string
	topics          []string
	pattern         *regexp.Regexp
	groupID         string
	readUncommitted bool
}

func commonOptionsOf(c *planner.TableContext, upsert bool) (*common, error) {
	known, prefixes := knownOptions(upsert)
	if err := c.CheckOptions(known, prefixes...); err != nil {
		return nil, err
	}
	o := &common{}
	servers, _ := c.Option("properties.bootstrap.servers")
	for _, s := range strings.Split(servers, ",") {
		if s = strings.TrimSpace(s); s != "" {
			o.brokers = append(o.brokers, s)
		}
	}
	if len(o.brokers) == 0 {
		return nil, c.OptionError("properties.bootstrap.servers", "missing: the brokers, host:port[,host:port...]")
	}
	topic, hasTopic := c.Option("topic")
	pattern, hasPattern := c.Option("topic-pattern")
	switch {
	case hasTopic && hasPattern:
		return nil, c.OptionError("topic-pattern", "give either 'topic' or 'topic-pattern', not both")
	case hasPattern:
		re, err := regexp.Compile(pattern)
		if err != nil {
			return nil, c.OptionError("topic-pattern", "%v", err)
		}
		o.pattern = re
	case hasTopic:
		for _, s := range strings.Split(topic, ";") {
			if s = strings.TrimSpace(s); s != "" {
				o.topics = append(o.topics, s)
			}
		}
	}
	if len(o.topics) == 0 && o.pattern == nil {
		return nil, c.OptionError("topic", "missing: the topic to read or write")
	}
	o.groupID, _ = c.Option("properties.group.id")
	if v, ok := c.Option("properties.isolation.level"); ok {
		switch v {
		case "read_committed":
		case "read_uncommitted":
			o.readUncommitted = true
		default:
			return nil, c.OptionError("properties.isolation.level", "%q is not read_committed or read_uncommitted", v)
		}
	}
	return o, nil
}

func clientOptions(c *planner.TableContext) []kgo.Opt {
	if id, ok := c.Option("properties.client.id"); ok {
		return []kgo.Opt{kgo.ClientID(id)}
	}
	return nil
}

func source(c *planner.TableContext, upsert bool) (*planner.Rows, error) {
	t := c.Table
	if upsert && c.Batch {
		return nil, fmt.Errorf("table %s: an 'upsert-kafka' table is a changelog and can only be read in streaming mode", t.Path)
	}
	o, err := commonOptionsOf(c, upsert)
	if err != nil {
		return nil, err
	}
	l, err := tableLayout(c, upsert)
	if err != nil {
		return nil, err
	}
	if err := checkMetadata(c, l); err != nil {
		return nil, err
	}
	key, value, err := l.formats(c, upsert, nil)
	if err != nil {
		return nil, err
	}
	opts := kafka.SourceOptions{Brokers: o.brokers, Topics: o.topics, TopicPattern: o.pattern, GroupID: o.groupID,
		ReadUncommitted: o.readUncommitted, ClientOptions: clientOptions(c)}
	if opts.Start, err = startingOffsets(c, o, upsert); err != nil {
		return nil, err
	}
	if opts.Stop, err = stoppingOffsets(c, o); err != nil {
		return nil, err
	}
	if s, ok := c.Option("scan.topic-partition-discovery.interval"); ok {
		d, err := parseDuration(s)
		if err != nil {
			return nil, c.OptionError("scan.topic-partition-discovery.interval", "%v", err)
		}
		opts.DiscoveryInterval = d
		if d == 0 {
			opts.DiscoveryInterval = -1
		}
	}
	width := len(t.Columns)
	meta := make([]string, len(l.metadata))
	for i, ci := range l.metadata {
		meta[i] = metadataKey(t.Columns[ci])
	}
	deserialize := func(r *kafka.Record) (types.Record, error) {
		row := make(types.Row, width)
		kind := types.Insert
		if r.Value == nil {
			if !upsert {
				return types.Record{}, kafka.ErrSkip // Flink's formats skip null values
			}
			kind = types.Delete
		}
		if key != nil {
			if err := key.decode(r.Key, row); err != nil {
				if key.ignoreErrors {
					return types.Record{}, kafka.ErrSkip
				}
				return types.Record{}, fmt.Errorf("table %s: key: %w", t.Path, err)
			}
		}
		if err := value.decode(r.Value, row); err != nil {
			if value.ignoreErrors {
				return types.Record{}, kafka.ErrSkip
			}
			return types.Record{}, fmt.Errorf("table %s: value: %w", t.Path, err)
		}
		for i, ci := range l.metadata {
			v, err := readMetadata(r, meta[i], t.Columns[ci].Type)
			if err != nil {
				return types.Record{}, fmt.Errorf("table %s: column %s: %w", t.Path, t.Columns[ci].Name, err)
			}
			row[ci] = v
		}
		return types.Record{Kind: kind, Row: row}, nil
	}
	src, err := kafka.NewSource(opts, deserialize)
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", t.Path, err)
	}
	var s *stream.Stream[types.Record]
	if wm, ok := c.SourceWatermarks(); ok {
		// Watermarks per partition, as Flink's Kafka table source takes
		// the WATERMARK FOR (SupportsWatermarkPushDown): a generator per
		// partition, and the subtask's watermark is the minimum over its
		// active partitions, so that partitions read at different speeds
		// do not make each other's rows late.
		s = stream.FromSourceWithWatermarks[types.Record](c.Env, src, c.Name(), wm)
	} else {
		s = stream.FromSource[types.Record](c.Env, src, c.Name())
	}
	s = s.UID(c.UID("kafka"))
	if p, ok := c.Option("scan.parallelism"); ok {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 {
			return nil, c.OptionError("scan.parallelism", "%q is not a positive integer", p)
		}
		s = s.SetParallelism(n)
	}
	rows := c.Rows(s)
	if upsert {
		return normalize(c, rows, l.key), nil
	}
	return rows, nil
}

func readMetadata(r *kafka.Record, key string, t types.DataType) (any, error) {
	var v any
	switch key {
	case "topic":
		v = r.Topic
	case "partition":
		v = r.Partition
	case "offset":
		v = r.Offset
	case "timestamp":
		v = types.TimestampLTZ{Millis: r.Timestamp.UnixMilli()}
	case "timestamp-type":
		v = "CreateTime"
	case "leader-epoch":
		return nil, nil
	case "headers":
		m := &types.Map{}
		for _, h := range r.Headers {
			m.Keys = append(m.Keys, h.Key)
			m.Values = append(m.Values, h.Value)
		}
		v = m
	}
	return types.CastIn(v, metadataTypes[key], t, time.UTC)
}

func startingOffsets(c *planner.TableContext, o *common, upsert bool) (kafka.StartingOffsets, error) {
	mode, ok := c.Option("scan.startup.mode")
	if upsert {
		// Upsert Kafka reads the whole changelog, as in Flink.
		return kafka.Earliest(), nil
	}
	if !ok {
		// Flink's default is group-offsets; without a group there are none.
		mode = "earliest-offset"
		if o.groupID != "" {
			mode = "group-offsets"
		}
	}
	switch mode {
	case "earliest-offset":
		return kafka.Earliest(), nil
	case "latest-offset":
		return kafka.Latest(), nil
	case "group-offsets":
		if o.groupID == "" {
			return kafka.StartingOffsets{}, c.OptionError("scan.startup.mode", "'group-offsets' needs 'properties.group.id'")
		}
		fallback := kafka.Earliest()
		if r, ok := c.Option("properties.auto.offset.reset"); ok {
			switch r {
			case "earliest":
			case "latest":
				fallback = kafka.Latest()
			default:
				return kafka.StartingOffsets{}, c.OptionError("properties.auto.offset.reset", "%q is not earliest or latest", r)
			}
		}
		return kafka.Committed(fallback), nil
	case "timestamp":
		s, ok := c.Option("scan.startup.timestamp-millis")
		if !ok {
			return kafka.StartingOffsets{}, c.OptionError("scan.startup.timestamp-millis", "missing: 'scan.startup.mode' = 'timestamp' needs it")
		}
		ms, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return kafka.StartingOffsets{}, c.OptionError("scan.startup.timestamp-millis", "%q is not milliseconds since the epoch", s)
		}
		return kafka.FromTimestamp(ms), nil
	case "specific-offsets":
		return kafka.StartingOffsets{}, c.OptionError("scan.startup.mode", "'specific-offsets' is not supported yet (earliest-offset, latest-offset, group-offsets, timestamp)")
	}
	return kafka.StartingOffsets{}, c.OptionError("scan.startup.mode", "%q is not earliest-offset, latest-offset, group-offsets or timestamp", mode)
}

func stoppingOffsets(c *planner.TableContext, o *common) (kafka.StoppingOffsets, error) {
	mode, _ := c.Option("scan.bounded.mode")
	switch mode {
	case "", "unbounded":
		return kafka.StoppingOffsets{}, nil
	case "latest-offset":
		return kafka.StopAtLatest(), nil
	case "specific-offsets":
		if len(o.topics) != 1 {
			return kafka.StoppingOffsets{}, c.OptionError("scan.bounded.specific-offsets", "specific offsets need exactly one topic")
		}
		s, ok := c.Option("scan.bounded.specific-offsets")
		if !ok {
			return kafka.StoppingOffsets{}, c.OptionError("scan.bounded.specific-offsets", "missing: 'scan.bounded.mode' = 'specific-offsets' needs it ('partition:0,offset:42;partition:1,offset:300')")
		}
		offs, err := parseSpecificOffsets(s)
		if err != nil {
			return kafka.StoppingOffsets{}, c.OptionError("scan.bounded.specific-offsets", "%v", err)
		}
		return kafka.StopAt(map[string]map[int32]int64{o.topics[0]: offs}), nil
	case "group-offsets", "timestamp":
		return kafka.StoppingOffsets{}, c.OptionError("scan.bounded.mode", "'%s' is not supported yet (unbounded, latest-offset, specific-offsets)", mode)
	}
	return kafka.StoppingOffsets{}, c.OptionError("scan.bounded.mode", "%q is not unbounded, latest-offset or specific-offsets", mode)
}

// parseSpecificOffsets reads Flink's 'partition:0,offset:42;partition:1,offset:300'.
func parseSpecificOffsets(s string) (map[int32]int64, error) {
	out := map[int32]int64{}
	for _, part := range strings.Split(s, ";") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		var p int32
		var off int64
		if _, err := fmt.Sscanf(strings.ReplaceAll(part, " ", ""), "partition:%d,offset:%d", &p, &off); err != nil || p < 0 || off < 0 {
			return nil, fmt.Errorf("%q is not partition:<n>,offset:<n>", part)
		}
		out[p] = off
	}
	if len(out) == 0 {
		return nil, errors.New("no offsets")
	}
	return out, nil
}

func sink(c *planner.TableContext, in *planner.Rows, fields []planner.Field, updating, upsert bool) error {
	t := c.Table
	if updating && !upsert {
		return planner.ErrUpdatesNotSupported
	}
	o, err := commonOptionsOf(c, upsert)
	if err != nil {
		return err
	}
	if o.pattern != nil || len(o.topics) != 1 {
		return c.OptionError("topic", "a sink writes to exactly one topic")
	}
	l, err := tableLayout(c, upsert)
	if err != nil {
		return err
	}
	if err := checkMetadata(c, l); err != nil {
		return err
	}
	at := make(map[string]int, len(fields))
	for i, f := range fields {
		at[f.Name] = i
	}
	pos := func(ci int) int {
		if i, ok := at[t.Columns[ci].Name]; ok {
			return i
		}
		return -1
	}
	key, value, err := l.formats(c, upsert, pos)
	if err != nil {
		return err
	}
	for _, f := range []*rowFormat{key, value} {
		if f == nil {
			continue
		}
		if i := slices.Index(f.pos, -1); i >= 0 {
			return fmt.Errorf("table %s: the query gives column %s no value", t.Path, f.names[i])
		}
	}
	// Persisted metadata columns the query writes.
	type metaField struct {
		key string
		pos int
		t   types.DataType
	}
	var meta []metaField
	for _, ci := range l.metadata {
		col := t.Columns[ci]
		p := pos(ci)
		if p < 0 {
			continue
		}
		k := metadataKey(col)
		if !slices.Contains(writableMetadata, k) {
			return fmt.Errorf("table %s: column %s: metadata '%s' cannot be written (writable: %s); declare the column VIRTUAL", t.Path, col.Name, k, strings.Join(writableMetadata, ", "))
		}
		meta = append(meta, metaField{k, p, fields[p].Type})
	}
	opts := kafka.SinkOptions{Brokers: o.brokers, Topic: o.topics[0], Delivery: kafka.AtLeastOnce, ClientOptions: clientOptions(c),
		CheckpointInterval: config.CheckpointInterval.Get(c.Env.Config())}
	if s, ok := c.Option("sink.delivery-guarantee"); ok {
		d, err := kafka.ParseDelivery(s)
		if err != nil {
			return c.OptionError("sink.delivery-guarantee", "%q is not none, at-least-once or exactly-once", s)
		}
		opts.Delivery = d
	}
	opts.TransactionalIDPrefix, _ = c.Option("sink.transactional-id-prefix")
	if opts.Delivery == kafka.ExactlyOnce && opts.TransactionalIDPrefix == "" {
		return c.OptionError("sink.transactional-id-prefix", "missing: 'sink.delivery-guarantee' = 'exactly-once' needs a transactional ID prefix unique to the job and the same when it resumes")
	}
	if s, ok := c.Option("properties.transaction.timeout.ms"); ok {
		ms, err := strconv.ParseInt(s, 10, 64)
		if err != nil || ms <= 0 {
			return c.OptionError("properties.transaction.timeout.ms", "%q is not a positive number of milliseconds", s)
		}
		opts.TransactionTimeout = time.Duration(ms) * time.Millisecond
	}
	if p, ok := c.Option("sink.partitioner"); ok {
		switch p {
		case "default":
		case "round-robin":
			opts.Partitioner = kgo.RoundRobinPartitioner()
		case "fixed":
			return c.OptionError("sink.partitioner", "'fixed' is not supported yet (default, round-robin)")
		default:
			return c.OptionError("sink.partitioner", "%q is not default or round-robin", p)
		}
	}
	serialize := func(r types.Record, kr *kafka.Record) error {
		if key != nil {
			b, err := key.encode(r.Row)
			if err != nil {
				return fmt.Errorf("table %s: key: %w", t.Path, err)
			}
			kr.Key = b
		}
		if r.Kind.IsAccumulate() {
			b, err := value.encode(r.Row)
			if err != nil {
				return fmt.Errorf("table %s: value: %w", t.Path, err)
			}
			kr.Value = b
		} // else a tombstone: upsert-kafka's deletion
		for _, m := range meta {
			v := r.Row[m.pos]
			if v == nil {
				continue
			}
			switch m.key {
			case "timestamp":
				ts, err := types.CastIn(v, m.t, types.TimestampLTZType(3), time.UTC)
				if err != nil {
					return fmt.Errorf("table %s: timestamp: %w", t.Path, err)
				}
				kr.Timestamp = time.UnixMilli(ts.(types.TimestampLTZ).Millis)
			case "headers":
				hv, err := types.CastIn(v, m.t, metadataTypes["headers"], time.UTC)
				if err != nil {
					return fmt.Errorf("table %s: headers: %w", t.Path, err)
				}
				hm := hv.(*types.Map)
				for i, k := range hm.Keys {
					val, _ := hm.Values[i].([]byte)
					kr.Headers = append(kr.Headers, kafka.Header{Key: k.(string), Value: val})
				}
			}
		}
		return nil
	}
	ks, err := kafka.NewSink(opts, serialize)
	if err != nil {
		return fmt.Errorf("table %s: %w", t.Path, err)
	}
	var snk *stream.Sink
	if upsert {
		keyPos := make([]int, len(l.key))
		keyTypes := make([]types.DataType, len(l.key))
		for i, ci := range l.key {
			keyPos[i], keyTypes[i] = pos(ci), t.Columns[ci].Type
		}
		keyOf := func(r types.Record) string { return rowKey(r.Row, keyPos, keyTypes) }
		// Keyed by the primary key, so that the changes of a key reach
		// one writer in order, whatever the parallelisms.
		keyed := stream.KeyBy(in, keyOf).Stream()
		snk = stream.SinkTo[types.Record](keyed, &upsertSink{inner: ks, keyOf: keyOf}, c.Name())
	} else {
		snk = stream.SinkTo[types.Record](in, ks, c.Name())
	}
	snk.UID(c.UID("kafka"))
	if p, ok := c.Option("sink.parallelism"); ok {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 {
			return c.OptionError("sink.parallelism", "%q is not a positive integer", p)
		}
		snk.SetParallelism(n)
	}
	return nil
}

func rowKey(row types.Row, idx []int, ts []types.DataType) string {
	var buf []byte
	for i, k := range idx {
		buf = types.AppendKey(buf, ts[i], row[k])
	}
	return string(buf)
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
