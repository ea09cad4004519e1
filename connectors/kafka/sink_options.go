package kafka

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
)

// DeliveryGuarantee is 'sink.delivery-guarantee' (Flink's names).
type DeliveryGuarantee string

const (
	// ExactlyOnce: one Kafka transaction per subtask per checkpoint, committed when the checkpoint completes; a
	// read_committed consumer sees each row once.
	ExactlyOnce DeliveryGuarantee = "exactly-once"
	// AtLeastOnce: every record is acknowledged before the checkpoint's barrier is (PreCommit flushes); a replay
	// after a restart writes the rows since the last checkpoint again.
	AtLeastOnce DeliveryGuarantee = "at-least-once"
	// None: fire and forget; nothing waits for acknowledgements until the sink closes.
	None DeliveryGuarantee = "none"
)

// Partitioner is 'sink.partitioner'.
type Partitioner string

const (
	// PartitionDefault: by the murmur2 hash of the key when the sink has one (as the Java client, so keyed rows
	// meet Java consumers' expectations), else sticky (a batch of records to one partition, then the next).
	PartitionDefault Partitioner = "default"
	// PartitionFixed: every record of subtask k goes to partition k mod the topic's partitions (Flink's 'fixed').
	PartitionFixed Partitioner = "fixed"
	// PartitionRoundRobin: records in turn over the partitions.
	PartitionRoundRobin Partitioner = "round-robin"
)

// MaxTransactionTimeout is what brokers accept at most by default (transaction.max.timeout.ms): a larger
// 'properties.transaction.timeout.ms' fails every InitProducerID, so it is refused at CREATE.
const MaxTransactionTimeout = 900 * time.Second

// DefaultTransactionTimeout is the transaction timeout when the sink sets none: the brokers' default maximum, the
// longest a restart may take before the broker aborts what the last checkpoint staged.
const DefaultTransactionTimeout = MaxTransactionTimeout

// RestartAllowance is what the transaction timeout must leave for a restart after a crash beside the checkpoints
// themselves: the process coming back, the job's restart backoff and in-doubt resolution committing the staged
// transactions. A transaction the broker aborts by timeout before that is lost output.
const RestartAllowance = 60 * time.Second

// SinkConfig is a Kafka sink: connector 'kafka' (append-only) or 'upsert-kafka' (a changelog keyed by the primary
// key; a delete is a tombstone).
type SinkConfig struct {
	Topic string
	// Client is how the sink reaches the brokers (the 'properties.*' the source reads the same way).
	Client ClientConfig
	Schema *arrow.Schema
	// Metadata is, index for index with Schema, the metadata key a column writes ("" for a column of the data):
	// 'timestamp' (the record's timestamp; NULL: the time of the write) or 'headers' (a JSON object of header
	// names and text values; NULL: none). Metadata columns are in neither the key nor the value.
	Metadata []string
	// ValueFormat and KeyFormat are "json", "csv" or "raw"; KeyFormat is "" without a key.
	ValueFormat string
	KeyFormat   string
	// KeyFields are the columns of the key, in order (an upsert sink's primary key).
	KeyFields []string
	// ValueExceptKey leaves the key's columns out of the value ('value.fields-include' = 'EXCEPT_KEY').
	ValueExceptKey bool
	Partitioner    Partitioner
	Delivery       DeliveryGuarantee
	// TransactionalIDPrefix names the transactions of an exactly-once sink: <prefix>-<job>-<subtask>-<slot>.
	TransactionalIDPrefix string
	TransactionTimeout    time.Duration
	// Upsert is connector 'upsert-kafka': the input is a changelog keyed by KeyFields; +I and +U rows are records,
	// -D a tombstone (a null value) for its key, -U nothing (the +U after it replaces the value).
	Upsert bool
}

// SinkOptionNames are the options a Kafka sink knows beside 'connector': its own and the client's properties.
func SinkOptionNames() []string {
	return append([]string{"topic", "format", "value.format", "key.format", "key.fields", "value.fields-include",
		"sink.partitioner", "sink.delivery-guarantee", "sink.transactional-id-prefix",
		"properties.transaction.timeout.ms"}, clientProperties...)
}

// SinkConfigFromOptions reads the WITH options of a Kafka sink (connector is "kafka" or "upsert-kafka"; metadata the
// metadata key of each column, as SinkConfig.Metadata, nil for none; primaryKey the sink's PRIMARY KEY, the key of
// an upsert sink). Flink's names:
//
//	'topic'                          one topic, required
//	'properties.bootstrap.servers'   host:port[,host:port...], required
//	'format' / 'value.format'        'json', 'csv' or 'raw' (one column of text or bytes), required
//	'key.format', 'key.fields'       the key's format and columns ('a;b'); upsert-kafka: the primary key
//	'value.fields-include'           'ALL' (default) or 'EXCEPT_KEY'
//	'sink.partitioner'               'default' (key hash, else sticky), 'fixed' (subtask -> partition), 'round-robin'
//	'sink.delivery-guarantee'        'exactly-once', 'at-least-once' (default, as Flink) or 'none'
//	'sink.transactional-id-prefix'   required for exactly-once, as in Flink: unique per cluster of clinksql servers
//	'properties.transaction.timeout.ms'  the transactions' timeout, at most 900000 (the brokers' maximum)
//	'properties.*'                   the client's (ClientConfigFromOptions: SASL, TLS, client id); path resolves
//	                                 the truststore's file
//
// 'type' and 'primary_key' are the planner's; any other key is refused with the list of known ones.
func SinkConfigFromOptions(connector string, schema *arrow.Schema, metadata []string, primaryKey []string, opts map[string]string, path func(string) (string, error)) (SinkConfig, error) {
	cfg := SinkConfig{
		Schema:             schema,
		Metadata:           metadata,
		Upsert:             connector == "upsert-kafka",
		Partitioner:        PartitionDefault,
		Delivery:           AtLeastOnce,
		TransactionTimeout: DefaultTransactionTimeout,
	}
	for _, key := range slices.Sorted(maps.Keys(opts)) {
		val := strings.TrimSpace(opts[key])
		lkey := strings.ToLower(key)
		switch lkey {
		case "connector", "type", "primary_key":
		case "topic":
			if val == "" || strings.Contains(val, ";") {
				return cfg, optionError(key, "kafka sink: 'topic' must name one topic, not '%s'", val)
			}
			cfg.Topic = val
		case "format", "value.format":
			f, err := parseFormat(key, val)
			if err != nil {
				return cfg, err
			}
			if cfg.ValueFormat != "" && cfg.ValueFormat != f {
				return cfg, optionError(key, "kafka sink: 'format' and 'value.format' disagree")
			}
			cfg.ValueFormat = f
		case "key.format":
			f, err := parseFormat(key, val)
			if err != nil {
				return cfg, err
			}
			cfg.KeyFormat = f
		case "key.fields":
			for _, name := range strings.Split(val, ";") {
				name = strings.TrimSpace(name)
				if schema.FieldIndices(name) == nil {
					return cfg, optionError(key, "kafka sink: 'key.fields' names column '%s', which the sink does not have", name)
				}
				cfg.KeyFields = append(cfg.KeyFields, name)
			}
		case "value.fields-include":
			switch strings.ToUpper(val) {
			case "ALL":
			case "EXCEPT_KEY":
				cfg.ValueExceptKey = true
			default:
				return cfg, optionError(key, "kafka sink: 'value.fields-include' = '%s' is not supported (ALL or EXCEPT_KEY)", val)
			}
		case "sink.partitioner":
			switch p := Partitioner(strings.ToLower(val)); p {
			case PartitionDefault, PartitionFixed, PartitionRoundRobin:
				cfg.Partitioner = p
			default:
				return cfg, optionError(key, "kafka sink: 'sink.partitioner' = '%s' is not supported (default, fixed or round-robin)", val)
			}
		case "sink.delivery-guarantee":
			switch g := DeliveryGuarantee(strings.ToLower(val)); g {
			case ExactlyOnce, AtLeastOnce, None:
				cfg.Delivery = g
			default:
				return cfg, optionError(key, "kafka sink: 'sink.delivery-guarantee' = '%s' is not supported (exactly-once, at-least-once or none)", val)
			}
		case "sink.transactional-id-prefix":
			if val == "" {
				return cfg, optionError(key, "kafka sink: 'sink.transactional-id-prefix' is empty")
			}
			cfg.TransactionalIDPrefix = val
		case "properties.transaction.timeout.ms":
			ms, err := strconv.ParseInt(val, 10, 64)
			if err != nil || ms <= 0 {
				return cfg, optionError(key, "kafka sink: 'properties.transaction.timeout.ms' = '%s' is not a positive number of milliseconds", val)
			}
			cfg.TransactionTimeout = time.Duration(ms) * time.Millisecond
			if cfg.TransactionTimeout > MaxTransactionTimeout {
				return cfg, optionError(key, "kafka sink: 'properties.transaction.timeout.ms' = %d exceeds the brokers' transaction.max.timeout.ms (%d by default): every transaction would be refused", ms, MaxTransactionTimeout.Milliseconds())
			}
		default:
			if slices.Contains(clientProperties, lkey) {
				continue // ClientConfigFromOptions below
			}
			return cfg, optionError(key, "unknown option '%s' for connector '%s' (known: %s)", key, connector, strings.Join(SinkOptionNames(), ", "))
		}
	}
	if cfg.Topic == "" {
		return cfg, optionError("", "connector '%s' needs 'topic'", connector)
	}
	if cfg.ValueFormat == "" {
		return cfg, optionError("", "connector '%s' needs 'format' (or 'value.format') = 'json', 'csv' or 'raw'", connector)
	}
	lower := make(map[string]string, len(opts))
	for k, v := range opts {
		lower[strings.ToLower(k)] = strings.TrimSpace(v)
	}
	client, err := ClientConfigFromOptions(lower, path)
	if err != nil {
		return cfg, err
	}
	cfg.Client = client
	if cfg.Upsert {
		if len(primaryKey) == 0 {
			return cfg, optionError("", "connector 'upsert-kafka' needs a PRIMARY KEY: it is the records' key")
		}
		if len(cfg.KeyFields) > 0 && !slices.Equal(cfg.KeyFields, primaryKey) {
			return cfg, optionError("key.fields", "upsert-kafka sink: the key is the PRIMARY KEY (%s); 'key.fields' cannot name other columns", strings.Join(primaryKey, ", "))
		}
		cfg.KeyFields = slices.Clone(primaryKey)
		if cfg.KeyFormat == "" {
			return cfg, optionError("", "connector 'upsert-kafka' needs 'key.format'")
		}
	}
	if (cfg.KeyFormat == "") != (len(cfg.KeyFields) == 0) {
		if cfg.KeyFormat == "" {
			return cfg, optionError("key.fields", "kafka sink: 'key.fields' needs 'key.format'")
		}
		return cfg, optionError("key.format", "kafka sink: 'key.format' needs 'key.fields'")
	}
	if cfg.ValueExceptKey && len(cfg.KeyFields) == 0 {
		return cfg, optionError("value.fields-include", "kafka sink: 'value.fields-include' = 'EXCEPT_KEY' needs a key")
	}
	if cfg.Delivery == ExactlyOnce && cfg.TransactionalIDPrefix == "" {
		return cfg, optionError("sink.delivery-guarantee", "kafka sink: 'sink.delivery-guarantee' = 'exactly-once' needs 'sink.transactional-id-prefix' (unique among the jobs writing to the cluster: transactions of the same id fence each other)")
	}
	if cfg.Delivery != ExactlyOnce {
		for _, k := range []string{"sink.transactional-id-prefix", "properties.transaction.timeout.ms"} {
			if _, ok := lookupFold(opts, k); ok {
				return cfg, optionError(k, "kafka sink: '%s' applies only to 'sink.delivery-guarantee' = 'exactly-once'", k)
			}
		}
	}
	if _, err := newRecordEncoder(cfg); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// CheckTransactionTimeout compares an exactly-once sink's transaction timeout with what its transactions need at
// checkpoint interval: a transaction is opened at one barrier, sealed at the next and committed when that
// checkpoint completes (two intervals, one more while the previous checkpoint is still undecided), and after a crash
// it must still be open when the restart's in-doubt resolution commits it (RestartAllowance). Shorter is refused
// (the broker would abort completed checkpoints' output); less than twice that is a warning.
func CheckTransactionTimeout(timeout, interval time.Duration) (warning string, err error) {
	need := 3*interval + RestartAllowance
	switch {
	case timeout < need:
		return "", optionError("properties.transaction.timeout.ms", "kafka sink: 'properties.transaction.timeout.ms' = %d is shorter than a transaction needs at checkpoint.interval %s: %d ms (3 intervals and %s for a restart); the broker would abort committed checkpoints' output", timeout.Milliseconds(), interval, need.Milliseconds(), RestartAllowance)
	case timeout < 2*need:
		return fmt.Sprintf("kafka sink: 'properties.transaction.timeout.ms' = %d leaves little room at checkpoint.interval %s (%d ms needed): a slow checkpoint or restart lets the broker abort a completed checkpoint's output", timeout.Milliseconds(), interval, need.Milliseconds()), nil
	}
	return "", nil
}

func parseFormat(key, val string) (string, error) {
	switch f := strings.ToLower(val); f {
	case "json", "csv", "raw":
		return f, nil
	}
	return "", optionError(key, "kafka sink: '%s' = '%s' is not supported (json, csv or raw)", key, val)
}

func lookupFold(opts map[string]string, key string) (string, bool) {
	for k, v := range opts {
		if strings.EqualFold(k, key) {
			return v, true
		}
	}
	return "", false
}
