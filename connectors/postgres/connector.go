package postgres

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/clinksql/clinksql/connectors"
	"github.com/clinksql/clinksql/exec"
)

func init() { connectors.RegisterSink(sinkConnector{}) }

// ValidateTimeout bounds the connection and the catalog queries of CREATE SINK and INSERT.
const ValidateTimeout = 15 * time.Second

// sinkConnector is connector = 'postgres' in CREATE SINK: a table written by COPY (append) or by INSERT ... ON
// CONFLICT and DELETE (a PRIMARY KEY: upsert), committed by Postgres' two-phase commit.
type sinkConnector struct{}

func (sinkConnector) Name() string { return "postgres" }

func (sinkConnector) Options() connectors.OptionNames {
	return connectors.OptionNames{Names: []string{optURL, optTable, optUser, optPassword, optMaxRows, optPrefix},
		Unsupported: []string{"driver", "sink.buffer-flush.interval", "sink.max-retries", "sink.parallelism",
			"connection.max-retry-timeout"}}
}

// Capabilities: the commit is Postgres' COMMIT PREPARED, which recovery can run again from pg_prepared_xacts; a
// sink with a PRIMARY KEY takes an updating result as it is (the planner gives the changelog only to one with a
// key).
func (sinkConnector) Capabilities(map[string]string) connectors.SinkCapabilities {
	return connectors.SinkCapabilities{Transactional: true, CommitRecoverable: true, Changelog: true, PrimaryKey: true}
}

// Validate reads the options and asks the server: prepared transactions enabled, the table and its columns, the
// key's unique index.
func (c sinkConnector) Validate(spec connectors.Spec, opts map[string]string, env connectors.Env) error {
	cfg, err := ConfigFromOptions(spec.Schema, spec.PrimaryKey, opts)
	if err != nil {
		return err
	}
	return Check(cfg)
}

// Check connects with cfg and checks the server and the table as Validate does.
func Check(cfg Config) error {
	ctx, cancel := context.WithTimeout(context.Background(), ValidateTimeout)
	defer cancel()
	conn, err := connect(ctx, cfg)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = describe(ctx, conn, cfg)
	return err
}

// Build checks again (the table may have changed since CREATE), except for a job planned again to restore it:
// its subtasks' Open checks and reports.
func (c sinkConnector) Build(spec connectors.Spec, opts map[string]string, env connectors.Env) (connectors.SinkPlan, error) {
	cfg, err := ConfigFromOptions(spec.Schema, spec.PrimaryKey, opts)
	if err == nil && !env.Restoring {
		err = Check(cfg)
	}
	if err != nil {
		return connectors.SinkPlan{}, err
	}
	writes := "writes: COPY (append)"
	if len(cfg.Key) > 0 {
		writes = fmt.Sprintf("writes: INSERT ... ON CONFLICT (%s) DO UPDATE and DELETE, the last change of each key per send", strings.Join(cfg.Key, ", "))
	}
	return connectors.SinkPlan{New: func(int) exec.Sink { return NewSink(cfg) },
		Details: []string{"table: " + cfg.Table.String() + " at " + cfg.Where,
			"commit: two-phase, PREPARE TRANSACTION at the barrier, COMMIT PREPARED when the checkpoint completes", writes}}, nil
}
