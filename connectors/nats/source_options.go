package nats

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/clinksql/clinksql/connectors"
	"github.com/clinksql/clinksql/connectors/file"
	"github.com/clinksql/clinksql/exec/expr"
	"github.com/clinksql/clinksql/sqlerr"
)

// Metadata are the attributes of a JetStream message a source's metadata columns can carry. Headers are a JSON
// object of strings ({"name": "value"}; a repeated header keeps its last value).
var Metadata = []connectors.MetadataKey{
	{Name: "subject", Types: []string{"VARCHAR"}},
	{Name: "stream-sequence", Types: []string{"BIGINT"}},
	{Name: "timestamp", Types: []string{"TIMESTAMP"}},
	{Name: "headers", Types: []string{"VARCHAR"}},
}

// Column is a stream's column with the metadata it carries ("" for a column of the payload).
type Column struct {
	Field       arrow.Field
	MetadataKey string
}

// SourceConfig is a NATS JetStream source.
type SourceConfig struct {
	Client  Client
	Stream  string
	Subject string // the consumer's filter subject; "" for the whole stream
	// Consumer is the durable consumer's name; "" makes an ephemeral consumer per incarnation.
	Consumer string
	Format   string
	BadRows  string
	// AckWait is the consumer's AckWait; AckWaitSet says 'nats.ack-wait' gave it.
	AckWait    time.Duration
	AckWaitSet bool
	// MaxAckPending is the consumer's MaxAckPending (-1: no limit).
	MaxAckPending int
	FetchSize     int
	Startup       string
	Columns       []Column
	Schema        *arrow.Schema
	DataColumns   []int
	BatchRows     int
}

// SourceOptionNames lists the source's options.
func SourceOptionNames() []string { return slices.Sorted(slices.Values(sourceOptions)) }

// SourceConfigFromOptions reads and checks a source's options (without 'connector').
func SourceConfigFromOptions(cols []Column, opts map[string]string, path func(string) (string, error)) (SourceConfig, error) {
	cfg := SourceConfig{Columns: cols, BadRows: file.BadRowsSkip, AckWait: DefaultAckWait, MaxAckPending: -1,
		FetchSize: DefaultFetchSize, Startup: StartEarliest, BatchRows: DefaultBatchRows}
	var err error
	if cfg.Client, err = clientFromOptions("source", opts, path); err != nil {
		return cfg, err
	}
	cfg.Stream = strings.TrimSpace(opts["nats.stream"])
	if cfg.Stream == "" {
		return cfg, optionError("", "connector 'nats' needs 'nats.stream' (the JetStream stream to read)")
	}
	if !validName(cfg.Stream) {
		return cfg, optionError("nats.stream", "option 'nats.stream' = '%s': not a stream name", cfg.Stream)
	}
	if v, ok := opts["nats.subject"]; ok {
		cfg.Subject = strings.TrimSpace(v)
		if !validSubject(cfg.Subject, true) {
			return cfg, optionError("nats.subject", "option 'nats.subject' = '%s': not a subject filter", v)
		}
	}
	if v, ok := opts["nats.consumer"]; ok {
		cfg.Consumer = strings.TrimSpace(v)
		if !validName(cfg.Consumer) {
			return cfg, optionError("nats.consumer", "option 'nats.consumer' = '%s': not a consumer name", v)
		}
	}
	if v, ok := opts["errors.bad-rows"]; ok {
		switch p := strings.ToLower(strings.TrimSpace(v)); p {
		case file.BadRowsSkip, file.BadRowsFail:
			cfg.BadRows = p
		default:
			return cfg, optionError("errors.bad-rows", "option 'errors.bad-rows' = '%s': want 'skip' or 'fail'", v)
		}
	}
	if v, ok := opts["nats.ack-wait"]; ok {
		if cfg.AckWait, err = connectors.DurationOption("nats.ack-wait", v, false); err != nil {
			return cfg, err
		}
		cfg.AckWaitSet = true
	}
	if v, ok := opts["nats.fetch-size"]; ok {
		if cfg.FetchSize, err = intOption("nats.fetch-size", v, 1); err != nil {
			return cfg, err
		}
	}
	if v, ok := opts["nats.max-ack-pending"]; ok {
		if strings.TrimSpace(v) == "-1" {
			cfg.MaxAckPending = -1
		} else if cfg.MaxAckPending, err = intOption("nats.max-ack-pending", v, 1); err != nil {
			return cfg, optionError("nats.max-ack-pending", "option 'nats.max-ack-pending' = '%s': want -1 (no limit) or a positive integer", v)
		}
		if cfg.MaxAckPending > 0 && cfg.MaxAckPending < cfg.FetchSize {
			return cfg, optionError("nats.max-ack-pending",
				"option 'nats.max-ack-pending' = %d is below 'nats.fetch-size' = %d: the source acknowledges only when a checkpoint completes, so the consumer would stall within one pull (raise it, or -1 for no limit)",
				cfg.MaxAckPending, cfg.FetchSize)
		}
	}
	if v, ok := opts["scan.startup.mode"]; ok {
		switch m := strings.ToLower(strings.TrimSpace(v)); m {
		case StartEarliest, StartLatest:
			cfg.Startup = m
		default:
			return cfg, optionError("scan.startup.mode", "option 'scan.startup.mode' = '%s': want 'earliest-offset' or 'latest-offset'", v)
		}
	}
	var data []arrow.Field
	fields := make([]arrow.Field, len(cols))
	for i, c := range cols {
		fields[i] = c.Field
		if c.MetadataKey == "" {
			data = append(data, c.Field)
			cfg.DataColumns = append(cfg.DataColumns, i)
			continue
		}
		k := slices.IndexFunc(Metadata, func(m connectors.MetadataKey) bool { return m.Name == c.MetadataKey })
		if k < 0 {
			return cfg, connectors.ColumnError(c.Field.Name, "unknown metadata key '%s' (known: subject, stream-sequence, timestamp, headers)", c.MetadataKey)
		}
		want := map[string]arrow.Type{"subject": arrow.STRING, "headers": arrow.STRING, "stream-sequence": arrow.INT64, "timestamp": arrow.TIMESTAMP}[c.MetadataKey]
		if c.Field.Type.ID() != want {
			return cfg, connectors.ColumnError(c.Field.Name, "metadata column %s ('%s') has type %s; want %s", c.Field.Name, c.MetadataKey,
				expr.TypeName(c.Field.Type), Metadata[k].Types[0])
		}
	}
	cfg.Schema = arrow.NewSchema(fields, nil)
	if cfg.Format, err = format("source", opts, data); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// CheckAckWait refuses an AckWait that a checkpoint in flight could outlast: a message the server redelivers
// while the checkpoint that covers it is pending would be read twice. The source acknowledges a message only once
// the checkpoint after it completes, which takes up to an interval plus the checkpoint's own duration: AckWait
// must be at least two checkpoint intervals.
func CheckAckWait(ackWait, interval time.Duration) error {
	if interval <= 0 || ackWait >= 2*interval {
		return nil
	}
	return &connectors.ConfigError{Code: sqlerr.InvalidParameter, Option: "nats.ack-wait", Msg: fmt.Sprintf(
		"nats source: 'nats.ack-wait' = %s is less than twice the job's checkpoint interval (SET checkpoint.interval = '%s'): "+
			"messages are acknowledged only when the checkpoint after them completes, and the server would redeliver them "+
			"before; set 'nats.ack-wait' to at least %s or shorten the checkpoint interval", ackWait, interval, 2*interval)}
}

// Describe is the EXPLAIN details.
func (cfg SourceConfig) Describe() []string {
	d := []string{"stream: " + cfg.Stream}
	if cfg.Subject != "" {
		d = append(d, "subject: "+cfg.Subject)
	}
	if cfg.Consumer != "" {
		d = append(d, "consumer: "+cfg.Consumer+" (durable)")
	} else {
		d = append(d, "consumer: ephemeral")
	}
	return append(d, fmt.Sprintf("format: %s, ack-wait: %s", cfg.Format, cfg.AckWait))
}
