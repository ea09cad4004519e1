package blackhole

import (
	"sync/atomic"

	"github.com/clinksql/clinksql/connectors"
	"github.com/clinksql/clinksql/exec"
)

func init() { connectors.RegisterSink(connector{}) }

// Sink discards what it receives, counting the rows.
type Sink struct {
	rows atomic.Int64
}

var _ exec.Sink = (*Sink)(nil)

// New returns a sink that discards what it receives.
func New() *Sink { return &Sink{} }

// Rows returns how many rows the sink has discarded.
func (b *Sink) Rows() int64 { return b.rows.Load() }

func (b *Sink) Open(*exec.TaskContext) error { return nil }

func (b *Sink) Write(batch exec.Batch) error {
	b.rows.Add(int64(batch.Rows()))
	batch.Release()
	return nil
}

func (b *Sink) PreCommit(uint64) error { return nil }
func (b *Sink) Commit(uint64) error    { return nil }
func (b *Sink) Abort(uint64) error     { return nil }
func (b *Sink) Close() error           { return nil }

// connector is connector = 'blackhole'.
type connector struct{}

func (connector) Name() string                    { return "blackhole" }
func (connector) Options() connectors.OptionNames { return connectors.OptionNames{} }
func (connector) Capabilities(map[string]string) connectors.SinkCapabilities {
	return connectors.SinkCapabilities{CommitRecoverable: true, Changelog: true}
}

func (connector) Validate(connectors.Spec, map[string]string, connectors.Env) error { return nil }

func (connector) Build(connectors.Spec, map[string]string, connectors.Env) (connectors.SinkPlan, error) {
	return connectors.SinkPlan{New: func(int) exec.Sink { return New() }}, nil
}
