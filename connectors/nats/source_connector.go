package nats

import (
	"github.com/clinksql/clinksql/connectors"
)

func init() {
	connectors.RegisterSource(sourceConnector{})
}

// sourceConnector is connector = 'nats' read by a stream.
type sourceConnector struct{}

func (sourceConnector) Name() string { return "nats" }

func (sourceConnector) Options() connectors.OptionNames {
	return connectors.OptionNames{Names: SourceOptionNames(), Unsupported: []string{"scan.parallelism"}}
}

// Capabilities: one subtask (a JetStream consumer delivers in stream order to one reader), unbounded, and
// replayable in the sense the planner means: a restore resets the consumer so that the server delivers again
// everything after the restored checkpoint.
// Capabilities: a durable consumer is one reader's position (two jobs on it would split the messages between
// them, each seeing a part): with 'nats.consumer' the engine allows one live job over the stream.
func (sourceConnector) Capabilities(opts map[string]string) connectors.SourceCapabilities {
	c := connectors.SourceCapabilities{Replayable: true, Metadata: Metadata}
	if opts["nats.consumer"] != "" {
		c.SingleReader = "nats.consumer"
	}
	return c
}

func config(spec connectors.Spec, opts map[string]string, env connectors.Env) (SourceConfig, error) {
	cols := make([]Column, len(spec.Columns))
	for i, sc := range spec.Columns {
		cols[i] = Column{Field: spec.Schema.Field(i), MetadataKey: sc.MetadataKey}
	}
	return SourceConfigFromOptions(cols, opts, env.Path)
}

func (sourceConnector) Validate(spec connectors.Spec, opts map[string]string, env connectors.Env) error {
	_, err := config(spec, opts, env)
	return err
}

// Build also checks AckWait against the job's checkpoint interval (at INSERT; a job planned again to restore it
// is never refused): without 'nats.ack-wait' the consumer's is the larger of DefaultAckWait and three intervals.
func (sourceConnector) Build(spec connectors.Spec, opts map[string]string, env connectors.Env) (connectors.SourcePlan, error) {
	cfg, err := config(spec, opts, env)
	if err != nil {
		return connectors.SourcePlan{}, err
	}
	if !cfg.AckWaitSet {
		cfg.AckWait = max(cfg.AckWait, 3*env.CheckpointInterval)
	} else if !env.Restoring {
		if err := CheckAckWait(cfg.AckWait, env.CheckpointInterval); err != nil {
			return connectors.SourcePlan{}, err
		}
	}
	return connectors.SourcePlan{New: NewSource(cfg), Parallelism: 1, Label: "Source: nats " + spec.Object,
		Details: cfg.Describe()}, nil
}
