package nats

import (
	"fmt"

	"github.com/clinksql/clinksql/connectors"
	"github.com/clinksql/clinksql/exec"
)

func init() {
	connectors.RegisterSink(sinkConnector{})
}

// stagingDir is where the sinks stage checkpoints' messages, under the data directory.
const stagingDir = "_nats_sink"

type sinkConnector struct{}

func (sinkConnector) Name() string { return "nats" }

func (sinkConnector) Options() connectors.OptionNames {
	return connectors.OptionNames{Names: SinkOptionNames(), Unsupported: []string{"sink.parallelism"}}
}

// Capabilities: a checkpoint's messages are published when it completes, and a restart can publish them again
// from the staged file (the stream's duplicate window drops the repeats): a recoverable two-phase commit.
func (sinkConnector) Capabilities(map[string]string) connectors.SinkCapabilities {
	return connectors.SinkCapabilities{Transactional: true, CommitRecoverable: true}
}

func sinkConfig(spec connectors.Spec, opts map[string]string, env connectors.Env) (SinkConfig, error) {
	meta := make([]string, len(spec.Columns))
	for i, c := range spec.Columns {
		meta[i] = c.MetadataKey
	}
	return SinkConfigFromOptions(spec.Schema, meta, opts, env.Path)
}

func (sinkConnector) Validate(spec connectors.Spec, opts map[string]string, env connectors.Env) error {
	_, err := sinkConfig(spec, opts, env)
	return err
}

func (sinkConnector) Build(spec connectors.Spec, opts map[string]string, env connectors.Env) (connectors.SinkPlan, error) {
	cfg, err := sinkConfig(spec, opts, env)
	if err != nil {
		return connectors.SinkPlan{}, err
	}
	cfg.StagingDir = stagingDir
	if env.Path != nil {
		if cfg.StagingDir, err = env.Path(stagingDir); err != nil {
			return connectors.SinkPlan{}, err
		}
	}
	return connectors.SinkPlan{New: func(int) exec.Sink { return NewSink(cfg) },
		Details: []string{fmt.Sprintf("subject: %s, format: %s", cfg.Subject, cfg.Format)}}, nil
}
