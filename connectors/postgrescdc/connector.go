package postgrescdc

import (
	"context"
	"time"

	"github.com/clinksql/clinksql/connectors"
)

func init() { connectors.RegisterSource(sourceConnector{}) }

// sourceConnector is connector = 'postgres-cdc'.
type sourceConnector struct{}

func (sourceConnector) Name() string { return "postgres-cdc" }

func (sourceConnector) Options() connectors.OptionNames {
	return connectors.OptionNames{Names: optionNames, Unsupported: unsupportedOptions}
}

func (sourceConnector) Capabilities(map[string]string) connectors.SourceCapabilities {
	// Not Replayable in the planner's sense of "any offset reproduces the same rows from anywhere": the slot
	// replays only what no completed checkpoint confirmed, which is exactly what a restore needs; the source
	// restores exactly (see doc.go), so it says Replayable.
	// SingleReader: the slot has one reader; the engine refuses a second job over the stream.
	return connectors.SourceCapabilities{Replayable: true, Changelog: true, PrimaryKey: true, SingleReader: OptSlot}
}

// Validate connects and checks the server and table (checkTable): CREATE STREAM fails on what no job could read.
func (sourceConnector) Validate(spec connectors.Spec, opts map[string]string, env connectors.Env) error {
	cfg, err := ParseConfig(opts)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := connect(ctx, cfg)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, _, err = checkTable(ctx, conn, cfg, spec)
	return err
}

// Build reads the options only: the table is checked again when the source opens (a server that is down at a
// restore fails the job's start, which retries, not the engine's).
func (sourceConnector) Build(spec connectors.Spec, opts map[string]string, env connectors.Env) (connectors.SourcePlan, error) {
	cfg, err := ParseConfig(opts)
	if err != nil {
		return connectors.SourcePlan{}, err
	}
	return connectors.SourcePlan{New: NewSource(cfg, spec), Parallelism: 1, Label: "Source: postgres-cdc " + spec.Object,
		Details: cfg.Describe()}, nil
}
