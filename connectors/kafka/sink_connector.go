package kafka

import (
	"fmt"
	"strings"

	"github.com/clinksql/clinksql/connectors"
	"github.com/clinksql/clinksql/exec"
)

func init() {
	connectors.RegisterSink(sinkConnector{name: "kafka"})
	connectors.RegisterSink(sinkConnector{name: "upsert-kafka"})
}

// sinkConnector is connector = 'kafka' (append-only) or 'upsert-kafka' (a changelog keyed by the PRIMARY KEY) as
// a sink.
type sinkConnector struct{ name string }

func (c sinkConnector) Name() string { return c.name }

func (c sinkConnector) Options() connectors.OptionNames {
	return connectors.OptionNames{Names: SinkOptionNames(), Unsupported: []string{"sink.parallelism",
		"sink.buffer-flush.max-rows", "sink.buffer-flush.interval", "key.fields-prefix", "value.format.fields"}}
}

// Capabilities: an exactly-once sink publishes a checkpoint's rows only when it completes, and its commit cannot
// be re-executed after a crash (a new producer of the transactional id aborts the open transaction), so its node
// is marked for CONFIRMED markers and in-doubt resolution. upsert-kafka takes an updating result as it is.
func (c sinkConnector) Capabilities(opts map[string]string) connectors.SinkCapabilities {
	g, _ := lookupFold(opts, "sink.delivery-guarantee")
	exactly := strings.EqualFold(strings.TrimSpace(g), string(ExactlyOnce))
	return connectors.SinkCapabilities{Transactional: exactly, CommitRecoverable: !exactly, Changelog: c.name == "upsert-kafka",
		Metadata: Metadata, PrimaryKey: c.name == "upsert-kafka"}
}

func (c sinkConnector) config(spec connectors.Spec, opts map[string]string, env connectors.Env) (SinkConfig, error) {
	meta := make([]string, len(spec.Columns))
	for i, col := range spec.Columns {
		meta[i] = col.MetadataKey
	}
	return SinkConfigFromOptions(c.name, spec.Schema, meta, spec.PrimaryKey, opts, env.Path)
}

func (c sinkConnector) Validate(spec connectors.Spec, opts map[string]string, env connectors.Env) error {
	_, err := c.config(spec, opts, env)
	return err
}

// Build also checks an exactly-once sink's transaction timeout against the job's checkpoint interval (at INSERT;
// a job planned again to restore it is never refused).
func (c sinkConnector) Build(spec connectors.Spec, opts map[string]string, env connectors.Env) (connectors.SinkPlan, error) {
	cfg, err := c.config(spec, opts, env)
	if err != nil {
		return connectors.SinkPlan{}, err
	}
	var notices []string
	switch cfg.Delivery {
	case AtLeastOnce:
		notices = append(notices, fmt.Sprintf("delivery guarantee: at-least-once, not exactly-once: sink %s ('sink.delivery-guarantee' = 'at-least-once') writes the rows since the last checkpoint again after a failure", spec.Object))
	case None:
		notices = append(notices, fmt.Sprintf("delivery guarantee: none: sink %s ('sink.delivery-guarantee' = 'none') may lose or repeat rows after a failure", spec.Object))
	}
	if cfg.Delivery == ExactlyOnce && env.CheckpointInterval > 0 && !env.Restoring {
		warning, err := CheckTransactionTimeout(cfg.TransactionTimeout, env.CheckpointInterval)
		if err != nil {
			return connectors.SinkPlan{}, err
		}
		if warning != "" {
			notices = append(notices, warning)
		}
	}
	details := []string{fmt.Sprintf("topic: %s, format: %s, delivery: %s", cfg.Topic, cfg.ValueFormat, cfg.Delivery)}
	if len(cfg.KeyFields) > 0 {
		details = append(details, fmt.Sprintf("key: %s (%s)", strings.Join(cfg.KeyFields, ", "), cfg.KeyFormat))
	}
	return connectors.SinkPlan{New: func(int) exec.Sink { return NewSink(cfg) }, Details: details, Notices: notices}, nil
}
