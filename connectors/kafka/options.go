package kafka

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/clinksql/clinksql/connectors"
	"github.com/clinksql/clinksql/connectors/file"
	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/expr"
	"github.com/clinksql/clinksql/sqlerr"
)

// ConfigError is a configuration no job could run with, reported by the planner at the option (or column) it
// names.
type ConfigError = connectors.ConfigError

const (
	codeInvalidParameter = sqlerr.InvalidParameter
	codeUndefinedFile    = sqlerr.UndefinedFile
)

func optionError(option, format string, args ...any) *ConfigError {
	return &ConfigError{Code: codeInvalidParameter, Option: option, Msg: fmt.Sprintf(format, args...)}
}

func columnError(column, format string, args ...any) *ConfigError {
	return &ConfigError{Code: sqlerr.DatatypeMismatch, Column: column, Msg: fmt.Sprintf(format, args...)}
}

func codeOf(err error, def string) string {
	if c := sqlerr.Code(err); c != "" {
		return c
	}
	return def
}

// Column is one column of the stream: a field of the data (key or value) or, with MetadataKey, a record
// attribute (the catalog's METADATA FROM 'key').
type Column struct {
	Field       arrow.Field
	MetadataKey string
}

// Start and end positions (scan.startup.mode, scan.bounded.mode).
const (
	ModeEarliest  = "earliest-offset"
	ModeLatest    = "latest-offset"
	ModeGroup     = "group-offsets"
	ModeTimestamp = "timestamp"
	ModeSpecific  = "specific-offsets"
	ModeUnbounded = "unbounded"
)

// Position is where a source starts or ends in every partition.
type Position struct {
	Mode            string
	TimestampMillis int64           // ModeTimestamp
	Offsets         map[int32]int64 // ModeSpecific: partition -> offset (a partition not named: earliest / no end)
}

// Formats of keys and values.
const (
	FormatJSON       = "json"
	FormatCSV        = "csv"
	FormatRaw        = "raw"
	FormatDebezium   = "debezium-json"
	IncludeAll       = "ALL"
	IncludeExceptKey = "EXCEPT_KEY"
)

// SourceConfig is a Kafka source, read from a stream's WITH options by SourceConfigFromOptions.
type SourceConfig struct {
	// Upsert is the upsert-kafka connector: the key is the PRIMARY KEY, a null value deletes it, and the source
	// yields a changelog.
	Upsert bool
	// Topics (one or more), or TopicPattern: every topic whose whole name matches, found at start and at every
	// discovery.
	Topics       []string
	TopicPattern *regexp.Regexp
	Client       ClientConfig
	// GroupID is properties.group.id: group-offsets start there, and offsets are committed to it (for monitoring
	// only) after each completed checkpoint when CommitOffsets.
	GroupID       string
	CommitOffsets bool
	// GroupReset is where group-offsets start in a partition the group has no offset for: ModeEarliest or
	// ModeLatest (properties.auto.offset.reset).
	GroupReset string
	Startup    Position
	Bounded    Position // Mode ModeUnbounded: never finishes
	// Discovery is how often new partitions (and, with a pattern, topics) are looked for; 0: never.
	Discovery time.Duration
	// IdleTimeout: a partition without records for this long stops holding the watermark back; 0: never.
	IdleTimeout time.Duration
	// Columns are the stream's columns, in order; Schema their fields.
	Columns []Column
	Schema  *arrow.Schema
	// Value and Key are the formats of the message's value and key (Key "" for none); KeyColumns are the indexes
	// of the columns the key holds (key.fields, or upsert-kafka's PRIMARY KEY), ValueColumns those the value
	// holds: every column of the data with ALL, the others with EXCEPT_KEY.
	Value, Key   string
	KeyColumns   []int
	ValueColumns []int
	// DebeziumSchema: debezium-json values are wrapped in {"schema": ..., "payload": ...}.
	DebeziumSchema bool
	// BadRows: file.BadRowsSkip (count, log once, skip) or BadRowsFail.
	BadRows string
	// Watermark is the stream's WATERMARK FOR expression as a function of a batch (nil: none), evaluated on each
	// partition's rows: the partition's watermark is the running maximum, the subtask's the minimum over its
	// partitions that are not idle.
	Watermark func(ctx *exec.TaskContext, rec arrow.RecordBatch) (wm int64, ok bool, err error)
	// BatchRows bounds a batch (0: DefaultBatchRows).
	BatchRows int
}

// DefaultBatchRows bounds the rows of one batch.
const DefaultBatchRows = 4096

// Options are the WITH option names of the kafka and upsert-kafka sources, beside the client's properties.
var sourceOptions = []string{
	"connector", "topic", "topic-pattern", "properties.group.id", "properties.auto.offset.reset",
	"properties.commit.offsets.on.checkpoint", "properties.isolation.level",
	"scan.startup.mode", "scan.startup.timestamp-millis", "scan.startup.specific-offsets",
	"scan.bounded.mode", "scan.bounded.timestamp-millis", "scan.bounded.specific-offsets",
	"scan.topic-partition-discovery.interval", "scan.watermark.idle-timeout",
	"format", "value.format", "key.format", "key.fields", "value.fields-include",
	"errors.bad-rows", "json.ignore-parse-errors", "csv.ignore-parse-errors", "debezium-json.ignore-parse-errors",
	"value.json.ignore-parse-errors", "value.csv.ignore-parse-errors", "value.debezium-json.ignore-parse-errors",
	"key.json.ignore-parse-errors", "key.csv.ignore-parse-errors",
	"debezium-json.schema-include", "value.debezium-json.schema-include",
}

// SourceOptionNames lists every option a Kafka source knows, sorted (for errors and the registry).
func SourceOptionNames() []string {
	names := append(slices.Clone(sourceOptions), clientProperties...)
	sort.Strings(names)
	return names
}

// SourceConfigFromOptions reads a Kafka source's WITH options (keys lower case; connector 'kafka' or
// 'upsert-kafka') for the stream's columns; primaryKey names upsert-kafka's key columns. path resolves file
// options (see ClientConfigFromOptions). An unknown key or a bad value is a *ConfigError at the option (22023),
// a column the formats cannot carry one at the column (42804).
func SourceConfigFromOptions(columns []Column, primaryKey []string, opts map[string]string, path func(string) (string, error)) (SourceConfig, error) {
	cfg := SourceConfig{Upsert: opts["connector"] == "upsert-kafka", Columns: columns, BadRows: file.BadRowsSkip,
		CommitOffsets: true, GroupReset: ModeEarliest, Discovery: 5 * time.Minute}
	conn := opts["connector"]
	known := SourceOptionNames()
	keys := make([]string, 0, len(opts))
	for k := range opts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !slices.Contains(known, k) {
			return cfg, optionError(k, "unknown option '%s' for connector '%s' (known: %s)", k, conn, strings.Join(known, ", "))
		}
	}
	fields := make([]arrow.Field, len(columns))
	for i, c := range columns {
		fields[i] = c.Field
	}
	cfg.Schema = arrow.NewSchema(fields, nil)
	var err error
	if cfg.Client, err = ClientConfigFromOptions(opts, path); err != nil {
		return cfg, err
	}

	// Topics.
	topic, hasTopic := opts["topic"]
	pattern, hasPattern := opts["topic-pattern"]
	switch {
	case hasTopic && hasPattern:
		return cfg, optionError("topic-pattern", "options 'topic' and 'topic-pattern' exclude each other")
	case hasTopic:
		for _, t := range strings.Split(topic, ";") {
			if t = strings.TrimSpace(t); t != "" {
				if !validTopic(t) {
					return cfg, optionError("topic", "option 'topic': '%s' is not a valid topic name", t)
				}
				cfg.Topics = append(cfg.Topics, t)
			}
		}
		if len(cfg.Topics) == 0 {
			return cfg, optionError("topic", "option 'topic' names no topic")
		}
	case hasPattern:
		if cfg.Upsert {
			return cfg, optionError("topic-pattern", "connector 'upsert-kafka' reads one or more named topics ('topic'), not a pattern")
		}
		re, err := regexp.Compile("^(?:" + pattern + ")$")
		if err != nil {
			return cfg, optionError("topic-pattern", "option 'topic-pattern': %v", err)
		}
		cfg.TopicPattern = re
	default:
		return cfg, optionError("connector", "connector '%s' needs 'topic' (one topic or a ';' list) or 'topic-pattern'", conn)
	}

	// Group.
	cfg.GroupID = opts["properties.group.id"]
	if v, ok := opts["properties.commit.offsets.on.checkpoint"]; ok {
		if cfg.CommitOffsets, err = boolOption("properties.commit.offsets.on.checkpoint", v); err != nil {
			return cfg, err
		}
	}
	if v, ok := opts["properties.auto.offset.reset"]; ok {
		switch strings.ToLower(v) {
		case "earliest":
			cfg.GroupReset = ModeEarliest
		case "latest":
			cfg.GroupReset = ModeLatest
		default:
			return cfg, optionError("properties.auto.offset.reset", "option 'properties.auto.offset.reset' = '%s': want 'earliest' or 'latest'", v)
		}
	}
	if v, ok := opts["properties.isolation.level"]; ok && !strings.EqualFold(v, "read_committed") {
		return cfg, optionError("properties.isolation.level", "option 'properties.isolation.level' = '%s': the source reads read_committed only (what a restore replays exactly)", v)
	}

	// Positions.
	if cfg.Upsert {
		for _, k := range []string{"scan.startup.mode", "scan.bounded.mode"} {
			if _, ok := opts[k]; ok {
				return cfg, optionError(k, "connector 'upsert-kafka' reads its topics from the earliest offset, unbounded: option '%s' does not apply", k)
			}
		}
	}
	if cfg.Startup, err = position(opts, "scan.startup", ModeGroup, []string{ModeEarliest, ModeLatest, ModeGroup, ModeTimestamp, ModeSpecific}); err != nil {
		return cfg, err
	}
	if cfg.Upsert {
		cfg.Startup.Mode = ModeEarliest
	}
	if cfg.Startup.Mode == ModeGroup && cfg.GroupID == "" {
		at := "scan.startup.mode"
		if _, ok := opts[at]; !ok {
			at = "connector"
		}
		return cfg, optionError(at, "startup mode 'group-offsets' (the default) needs 'properties.group.id'; or set 'scan.startup.mode' = 'earliest-offset'")
	}
	if cfg.Bounded, err = position(opts, "scan.bounded", ModeUnbounded, []string{ModeUnbounded, ModeLatest, ModeTimestamp, ModeSpecific}); err != nil {
		return cfg, err
	}
	if v, ok := opts["scan.topic-partition-discovery.interval"]; ok {
		if cfg.Discovery, err = connectors.DurationOption("scan.topic-partition-discovery.interval", v, true); err != nil {
			return cfg, err
		}
	}
	if v, ok := opts["scan.watermark.idle-timeout"]; ok {
		if cfg.IdleTimeout, err = connectors.DurationOption("scan.watermark.idle-timeout", v, true); err != nil {
			return cfg, err
		}
	}

	// Formats and what each holds.
	if err := cfg.formats(opts, primaryKey); err != nil {
		return cfg, err
	}
	if err := cfg.badRows(opts); err != nil {
		return cfg, err
	}
	return cfg, cfg.checkColumns()
}

func validTopic(t string) bool {
	if len(t) > 249 || t == "." || t == ".." {
		return false
	}
	for _, c := range t {
		if !(c == '.' || c == '_' || c == '-' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return false
		}
	}
	return true
}

func boolOption(key, v string) (bool, error) {
	switch strings.ToLower(v) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, optionError(key, "option '%s' = '%s': want 'true' or 'false'", key, v)
}

// position reads prefix.mode and its companion options.
func position(opts map[string]string, prefix, def string, modes []string) (Position, error) {
	p := Position{Mode: def}
	modeKey, tsKey, offKey := prefix+".mode", prefix+".timestamp-millis", prefix+".specific-offsets"
	if v, ok := opts[modeKey]; ok {
		p.Mode = strings.ToLower(v)
		if !slices.Contains(modes, p.Mode) {
			return p, optionError(modeKey, "option '%s' = '%s': want %s", modeKey, v, strings.Join(modes, ", "))
		}
	}
	ts, hasTS := opts[tsKey]
	offs, hasOffs := opts[offKey]
	switch {
	case p.Mode == ModeTimestamp && !hasTS:
		return p, optionError(modeKey, "mode 'timestamp' needs '%s'", tsKey)
	case p.Mode != ModeTimestamp && hasTS:
		return p, optionError(tsKey, "option '%s' applies to '%s' = 'timestamp'", tsKey, modeKey)
	case p.Mode == ModeSpecific && !hasOffs:
		return p, optionError(modeKey, "mode 'specific-offsets' needs '%s'", offKey)
	case p.Mode != ModeSpecific && hasOffs:
		return p, optionError(offKey, "option '%s' applies to '%s' = 'specific-offsets'", offKey, modeKey)
	}
	if hasTS {
		ms, err := strconv.ParseInt(strings.TrimSpace(ts), 10, 64)
		if err != nil || ms < 0 {
			return p, optionError(tsKey, "option '%s' = '%s': want milliseconds since the epoch", tsKey, ts)
		}
		p.TimestampMillis = ms
	}
	if hasOffs {
		p.Offsets = map[int32]int64{}
		for _, item := range strings.Split(offs, ";") {
			if item = strings.TrimSpace(item); item == "" {
				continue
			}
			part, off, err := specificOffset(item)
			if err != nil {
				return p, optionError(offKey, "option '%s': '%s': %v (want 'partition:0,offset:42;partition:1,offset:300')", offKey, item, err)
			}
			if _, dup := p.Offsets[part]; dup {
				return p, optionError(offKey, "option '%s': partition %d given twice", offKey, part)
			}
			p.Offsets[part] = off
		}
		if len(p.Offsets) == 0 {
			return p, optionError(offKey, "option '%s' names no partition", offKey)
		}
	}
	return p, nil
}

func specificOffset(item string) (int32, int64, error) {
	var part, off int64 = -1, -1
	for _, kv := range strings.Split(item, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), ":")
		if !ok {
			return 0, 0, fmt.Errorf("'%s' is not key:value", kv)
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || n < 0 {
			return 0, 0, fmt.Errorf("'%s' is not a non-negative number", v)
		}
		switch strings.TrimSpace(k) {
		case "partition":
			if n > 1<<31-1 {
				return 0, 0, fmt.Errorf("partition %d is out of range", n)
			}
			part = n
		case "offset":
			off = n
		default:
			return 0, 0, fmt.Errorf("unknown key '%s'", k)
		}
	}
	if part < 0 || off < 0 {
		return 0, 0, fmt.Errorf("both partition and offset are needed")
	}
	return int32(part), off, nil
}

// formats reads format / value.format / key.format / key.fields / value.fields-include and splits the columns
// between key and value.
func (cfg *SourceConfig) formats(opts map[string]string, primaryKey []string) error {
	f, hasF := opts["format"]
	vf, hasVF := opts["value.format"]
	switch {
	case hasF && hasVF:
		return optionError("value.format", "options 'format' and 'value.format' exclude each other")
	case hasF:
		cfg.Value = strings.ToLower(f)
	case hasVF:
		cfg.Value = strings.ToLower(vf)
	default:
		return optionError("connector", "connector '%s' needs 'value.format' (or 'format'): json, csv, raw or debezium-json", opts["connector"])
	}
	valueKey := "value.format"
	if hasF {
		valueKey = "format"
	}
	valueFormats := []string{FormatJSON, FormatCSV, FormatRaw, FormatDebezium}
	if cfg.Upsert {
		valueFormats = valueFormats[:3]
	}
	if !slices.Contains(valueFormats, cfg.Value) {
		return optionError(valueKey, "option '%s' = '%s': want %s", valueKey, cfg.Value, strings.Join(valueFormats, ", "))
	}
	kf, hasKF := opts["key.format"]
	if hasKF {
		cfg.Key = strings.ToLower(kf)
		if !slices.Contains([]string{FormatJSON, FormatCSV, FormatRaw}, cfg.Key) {
			return optionError("key.format", "option 'key.format' = '%s': want json, csv or raw", kf)
		}
	}
	v, ok := opts["debezium-json.schema-include"]
	if !ok {
		v, ok = opts["value.debezium-json.schema-include"]
	}
	if ok {
		if cfg.Value != FormatDebezium {
			return optionError("debezium-json.schema-include", "option 'debezium-json.schema-include' applies to format 'debezium-json'")
		}
		var err error
		if cfg.DebeziumSchema, err = boolOption("debezium-json.schema-include", v); err != nil {
			return err
		}
	}

	// Which columns the key holds.
	var keyNames []string
	keyOpt := "key.fields"
	if cfg.Upsert {
		if _, ok := opts["key.fields"]; ok {
			return optionError("key.fields", "connector 'upsert-kafka' keys by the PRIMARY KEY; option 'key.fields' does not apply")
		}
		if len(primaryKey) == 0 {
			return optionError("connector", "connector 'upsert-kafka' needs a PRIMARY KEY (...) NOT ENFORCED: it is the message key")
		}
		if !hasKF {
			return optionError("connector", "connector 'upsert-kafka' needs 'key.format' (json, csv or raw)")
		}
		keyNames, keyOpt = primaryKey, "connector"
	} else if kfs, ok := opts["key.fields"]; ok {
		for _, n := range strings.Split(kfs, ";") {
			if n = strings.TrimSpace(n); n != "" {
				keyNames = append(keyNames, n)
			}
		}
		if !hasKF {
			return optionError("key.fields", "option 'key.fields' needs 'key.format'")
		}
		if len(keyNames) == 0 {
			return optionError("key.fields", "option 'key.fields' names no column")
		}
	} else if hasKF {
		return optionError("key.format", "option 'key.format' needs 'key.fields' (the columns the key holds, ';' separated)")
	}
	if cfg.Value == FormatDebezium && len(keyNames) > 0 {
		return optionError("key.fields", "format 'debezium-json' reads the rows from the value; 'key.fields' does not apply")
	}
	for _, n := range keyNames {
		i := slices.IndexFunc(cfg.Columns, func(c Column) bool { return c.Field.Name == n })
		switch {
		case i < 0:
			return optionError(keyOpt, "key column '%s' is not a column of the stream", n)
		case cfg.Columns[i].MetadataKey != "":
			return optionError(keyOpt, "key column '%s' is a metadata column", n)
		case slices.Contains(cfg.KeyColumns, i):
			return optionError(keyOpt, "key column '%s' is named twice", n)
		}
		cfg.KeyColumns = append(cfg.KeyColumns, i)
	}
	include := IncludeAll
	if v, ok := opts["value.fields-include"]; ok {
		include = strings.ToUpper(v)
		if include != IncludeAll && include != IncludeExceptKey {
			return optionError("value.fields-include", "option 'value.fields-include' = '%s': want ALL or EXCEPT_KEY", v)
		}
	}
	for i, c := range cfg.Columns {
		if c.MetadataKey != "" || include == IncludeExceptKey && slices.Contains(cfg.KeyColumns, i) {
			continue
		}
		cfg.ValueColumns = append(cfg.ValueColumns, i)
	}
	if cfg.Value == FormatRaw && len(cfg.ValueColumns) != 1 {
		return optionError(valueKey, "format 'raw' carries exactly one column of the data in the value (VARCHAR or BYTEA); the value holds %d", len(cfg.ValueColumns))
	}
	if cfg.Key == FormatRaw && len(cfg.KeyColumns) != 1 {
		return optionError("key.format", "format 'raw' carries exactly one column in the key; the key holds %d", len(cfg.KeyColumns))
	}
	return nil
}

// badRows reads errors.bad-rows and Flink's *.ignore-parse-errors, which must agree.
func (cfg *SourceConfig) badRows(opts map[string]string) error {
	policy, flinkKey, flink := "", "", ""
	if v, ok := opts["errors.bad-rows"]; ok {
		switch p := strings.ToLower(v); p {
		case file.BadRowsSkip, file.BadRowsFail:
			policy = p
		default:
			return optionError("errors.bad-rows", "option 'errors.bad-rows' = '%s': want 'skip' or 'fail'", v)
		}
	}
	formats := map[string]string{"json": FormatJSON, "csv": FormatCSV, "debezium-json": FormatDebezium}
	for _, k := range SourceOptionNames() {
		v, ok := opts[k]
		if !ok || !strings.HasSuffix(k, ".ignore-parse-errors") {
			continue
		}
		name := strings.TrimSuffix(k, ".ignore-parse-errors")
		side := cfg.Value
		if strings.HasPrefix(name, "key.") {
			side = cfg.Key
		}
		if formats[strings.TrimPrefix(strings.TrimPrefix(name, "key."), "value.")] != side {
			return optionError(k, "option '%s' does not apply to the format in use", k)
		}
		b, err := boolOption(k, v)
		if err != nil {
			return err
		}
		p := file.BadRowsFail
		if b {
			p = file.BadRowsSkip
		}
		if flink != "" && flink != p {
			return optionError(k, "options '%s' and '%s' disagree", flinkKey, k)
		}
		flinkKey, flink = k, p
	}
	switch {
	case policy != "" && flink != "" && policy != flink:
		return optionError("errors.bad-rows", "options 'errors.bad-rows' and '%s' disagree", flinkKey)
	case policy != "":
		cfg.BadRows = policy
	case flink != "":
		cfg.BadRows = flink
	}
	return nil
}

// checkColumns checks that the formats can carry the columns they hold (42804 at the column).
func (cfg *SourceConfig) checkColumns() error {
	check := func(format string, idx []int) error {
		if format == FormatRaw {
			c := cfg.Columns[idx[0]]
			if id := c.Field.Type.ID(); id != arrow.STRING && id != arrow.BINARY {
				return columnError(c.Field.Name, "format 'raw' carries a VARCHAR or BYTEA column; %s is %s", c.Field.Name, expr.TypeName(c.Field.Type))
			}
			return nil
		}
		fields := make([]arrow.Field, len(idx))
		for i, j := range idx {
			fields[i] = cfg.Columns[j].Field
		}
		if err := file.CheckTextSchema(arrow.NewSchema(fields, nil)); err != nil {
			for _, f := range fields {
				if file.CheckTextSchema(arrow.NewSchema([]arrow.Field{f}, nil)) != nil {
					return columnError(f.Name, "format '%s': column %s: type %s has no text form", format, f.Name, expr.TypeName(f.Type))
				}
			}
			return err
		}
		return nil
	}
	if err := check(cfg.Value, cfg.ValueColumns); err != nil {
		return err
	}
	if cfg.Key != "" {
		if err := check(cfg.Key, cfg.KeyColumns); err != nil {
			return err
		}
	}
	for _, c := range cfg.Columns {
		if c.MetadataKey == "" {
			continue
		}
		k, ok := LookupMetadata(c.MetadataKey)
		if !ok {
			return columnError(c.Field.Name, "unknown metadata key '%s' (known: %s)", c.MetadataKey, MetadataNames())
		}
		if !metadataTypeOK(k, c.Field.Type) {
			return columnError(c.Field.Name, "metadata column %s ('%s') has type %s", c.Field.Name, k.Name, expr.TypeName(c.Field.Type))
		}
	}
	return nil
}

// metadataTypeOK checks an Arrow type against a key's SQL types.
func metadataTypeOK(k MetadataKey, t arrow.DataType) bool {
	for _, n := range k.Types {
		switch {
		case n == "VARCHAR" || n == "TEXT":
			if t.ID() == arrow.STRING {
				return true
			}
		case n == "INT":
			if t.ID() == arrow.INT32 {
				return true
			}
		case n == "BIGINT":
			if t.ID() == arrow.INT64 {
				return true
			}
		case n == "TIMESTAMP":
			if t.ID() == arrow.TIMESTAMP {
				return true
			}
		}
	}
	return false
}

// Describe is the EXPLAIN details of a source: its topics, startup and end, and formats.
func (cfg SourceConfig) Describe() []string {
	topics := "topics: " + strings.Join(cfg.Topics, ", ")
	if cfg.TopicPattern != nil {
		topics = "topic-pattern: " + strings.TrimSuffix(strings.TrimPrefix(cfg.TopicPattern.String(), "^(?:"), ")$")
	}
	d := []string{topics, "startup: " + cfg.Startup.describe()}
	if cfg.Bounded.Mode != ModeUnbounded {
		d = append(d, "bounded: "+cfg.Bounded.describe())
	}
	f := "format: " + cfg.Value
	if cfg.Key != "" {
		f = "format: key " + cfg.Key + ", value " + cfg.Value
	}
	d = append(d, f)
	if cfg.Upsert || cfg.Value == FormatDebezium {
		d = append(d, "changelog: yes")
	}
	return d
}

func (p Position) describe() string {
	switch p.Mode {
	case ModeTimestamp:
		return fmt.Sprintf("timestamp %d", p.TimestampMillis)
	case ModeSpecific:
		parts := make([]int32, 0, len(p.Offsets))
		for k := range p.Offsets {
			parts = append(parts, k)
		}
		slices.Sort(parts)
		var s []string
		for _, k := range parts {
			s = append(s, fmt.Sprintf("partition:%d,offset:%d", k, p.Offsets[k]))
		}
		return "specific-offsets " + strings.Join(s, ";")
	}
	return p.Mode
}
