package exec

import (
	"fmt"
	"time"

	"github.com/clinksql/clinksql/checkpoint"
)

// ExchangeKind is how an edge routes rows from the upstream subtasks to the downstream ones.
type ExchangeKind uint8

const (
	// Forward sends subtask i's output to downstream subtask i; both sides have the same parallelism.
	Forward ExchangeKind = iota
	// Hash routes each row by the key group of its key columns to the subtask that owns that key group.
	Hash
	// Broadcast sends every row to every downstream subtask.
	Broadcast
	// Rebalance spreads batches round-robin over the downstream subtasks.
	Rebalance
)

func (k ExchangeKind) String() string {
	return [...]string{"forward", "hash", "broadcast", "rebalance"}[k]
}

// Exchange describes one edge's routing.
type Exchange struct {
	Kind ExchangeKind
	Keys []int // Hash: key column indexes of the upstream output schema
}

// ForwardExchange, HashExchange, BroadcastExchange and RebalanceExchange build exchanges.
func ForwardExchange() Exchange         { return Exchange{Kind: Forward} }
func HashExchange(keys ...int) Exchange { return Exchange{Kind: Hash, Keys: keys} }
func BroadcastExchange() Exchange       { return Exchange{Kind: Broadcast} }
func RebalanceExchange() Exchange       { return Exchange{Kind: Rebalance} }

// String names the exchange as EXPLAIN and the system tables show it: forward, hash[0 2], broadcast, rebalance.
func (e Exchange) String() string {
	if e.Kind == Hash {
		return fmt.Sprintf("%s%v", e.Kind, e.Keys)
	}
	return e.Kind.String()
}

// InputEdge is one logical input of a node: an upstream node and the exchange between them.
type InputEdge struct {
	From     *Node
	Exchange Exchange
}

// From names an upstream node as an input.
func From(n *Node, e Exchange) InputEdge { return InputEdge{From: n, Exchange: e} }

// NodeKind says what a node runs.
type NodeKind uint8

const (
	SourceNode NodeKind = iota
	OperatorNode
	SinkNode
)

// StateKind is the state backend a node's subtasks get.
type StateKind uint8

const (
	// SmallState is an in-memory backend persisted as one file per checkpoint: offsets, bookkeeping, small
	// operator state. Every subtask has at least this.
	SmallState StateKind = iota
	// KeyedState is the Pebble backend with a write-back cache, for state that grows with the keys.
	KeyedState
)

// Node is one operator of the dataflow graph; it runs as Parallelism subtasks.
type Node struct {
	ID string
	// Label says what the node runs, for people (EXPLAIN's name of the operator: "WindowAggregate", "Kafka source").
	Label       string
	Kind        NodeKind
	Parallelism int
	Inputs      []InputEdge
	State       StateKind
	// ModeOverride, when set, re-stamps barriers passing this node's subtasks (e.g. force aligned).
	ModeOverride *checkpoint.Mode
	// IdleTimeout (sources): past this long without data, the source stops holding the watermark back. 0 = never.
	IdleTimeout time.Duration
	// AlignWatermark (sources with a watermark): the source's subtasks take part in the job's watermark alignment
	// (JobConfig.WatermarkMaxDrift, align.go).
	AlignWatermark bool
	// CommitNotRecoverable (sinks): the sink's commit cannot be re-executed after a crash (the seed's
	// commit_recoverable == false; the Kafka transactional sink). Its sinks must implement InDoubtSink, and the job
	// tracks per-subtask confirmations, writes CONFIRMED markers and restores from the newest confirmed checkpoint
	// after in-doubt resolution. Set by the planner from the connector's capability.
	CommitNotRecoverable bool
	// RowTimeColumn (sinks): the index in the sink's input of a timestamp column by which its rows are fired by
	// the watermark, or -1 (none, the default). The rule it promises: a row whose RowTimeColumn value, in
	// microseconds as rowcodec.Micros reads it, is <= W arrived at the sink subtask before the watermark W did,
	// and a row that arrives after the watermark W has a value > W. A window aggregate or window join feeding
	// the sink through forward edges and projections that keep its window_end as a plain column keeps it (they
	// emit a window when the watermark reaches its end, never after, and forward that watermark unchanged).
	// Replay suppression of a CommitNotRecoverable sink drops replayed rows by it. Set by the planner.
	RowTimeColumn int

	newSource   func(subtask int) Source
	newOperator func(subtask int) Operator
	newSink     func(subtask int) Sink
	outputs     []*Node // filled by Validate
	index       int
}

// WithRowTime sets a sink's RowTimeColumn.
func (n *Node) WithRowTime(col int) *Node { n.RowTimeColumn = col; return n }

// WithKeyedState gives the node's subtasks the Pebble backend.
func (n *Node) WithKeyedState() *Node { n.State = KeyedState; return n }

// WithMode overrides the checkpoint mode of barriers passing this node.
func (n *Node) WithMode(m checkpoint.Mode) *Node { n.ModeOverride = &m; return n }

// WithWatermarkAlignment has a source's subtasks take part in the job's watermark alignment.
func (n *Node) WithWatermarkAlignment() *Node { n.AlignWatermark = true; return n }

// WithIdleTimeout sets a source's idle timeout.
func (n *Node) WithIdleTimeout(d time.Duration) *Node { n.IdleTimeout = d; return n }

// WithCommitNotRecoverable marks a sink node whose commit cannot be re-executed after a crash.
func (n *Node) WithCommitNotRecoverable() *Node { n.CommitNotRecoverable = true; return n }

// Graph is a dataflow: sources, operators and sinks connected by exchanges. It is a description; a Job runs it.
type Graph struct {
	Nodes []*Node
	// KeyGroups is the number of key groups (fixed per job).
	KeyGroups int
}

// NewGraph returns an empty graph with the default number of key groups.
func NewGraph() *Graph { return &Graph{KeyGroups: 128} }

func (g *Graph) add(n *Node) *Node {
	n.index = len(g.Nodes)
	n.RowTimeColumn = -1
	g.Nodes = append(g.Nodes, n)
	return n
}

// AddSource adds a source node.
func (g *Graph) AddSource(id string, parallelism int, newSource func(subtask int) Source) *Node {
	return g.add(&Node{ID: id, Kind: SourceNode, Parallelism: parallelism, newSource: newSource})
}

// AddOperator adds an operator fed by the given inputs (logical input i of Process is inputs[i]). A union is an
// operator with several inputs: there is no union runner, its inputs are channels of the consumer.
func (g *Graph) AddOperator(id string, parallelism int, newOperator func(subtask int) Operator, inputs ...InputEdge) *Node {
	return g.add(&Node{ID: id, Kind: OperatorNode, Parallelism: parallelism, newOperator: newOperator, Inputs: inputs})
}

// AddSink adds a two-phase-commit sink node.
func (g *Graph) AddSink(id string, parallelism int, newSink func(subtask int) Sink, inputs ...InputEdge) *Node {
	return g.add(&Node{ID: id, Kind: SinkNode, Parallelism: parallelism, newSink: newSink, Inputs: inputs})
}

// Validate checks the graph and links each node to its outputs.
func (g *Graph) Validate() error {
	if g.KeyGroups <= 0 || g.KeyGroups > 1<<16 {
		// A hash exchange hands each row's key group on in two bytes (Batch.WithKeyGroups).
		return fmt.Errorf("graph: key groups must be in [1, 65536], got %d", g.KeyGroups)
	}
	seen := map[string]bool{}
	for _, n := range g.Nodes {
		n.outputs = nil
	}
	for _, n := range g.Nodes {
		if n.ID == "" || seen[n.ID] {
			return fmt.Errorf("graph: node id %q is empty or not unique", n.ID)
		}
		seen[n.ID] = true
		if n.Parallelism < 1 || n.Parallelism > g.KeyGroups {
			return fmt.Errorf("graph: node %s: parallelism %d out of [1, %d]", n.ID, n.Parallelism, g.KeyGroups)
		}
		switch n.Kind {
		case SourceNode:
			if len(n.Inputs) != 0 {
				return fmt.Errorf("graph: source %s has inputs", n.ID)
			}
		default:
			if len(n.Inputs) == 0 {
				return fmt.Errorf("graph: node %s has no inputs", n.ID)
			}
		}
		for _, in := range n.Inputs {
			if in.From == nil || in.From.index >= len(g.Nodes) || g.Nodes[in.From.index] != in.From {
				return fmt.Errorf("graph: node %s reads a node not in this graph", n.ID)
			}
			if in.From.index >= n.index {
				return fmt.Errorf("graph: node %s reads %s, which is added after it (cycles are not allowed)", n.ID, in.From.ID)
			}
			if in.From.Kind == SinkNode {
				return fmt.Errorf("graph: node %s reads sink %s", n.ID, in.From.ID)
			}
			if in.Exchange.Kind == Forward && in.From.Parallelism != n.Parallelism {
				return fmt.Errorf("graph: forward edge %s -> %s needs equal parallelism (%d vs %d)", in.From.ID, n.ID, in.From.Parallelism, n.Parallelism)
			}
			if in.Exchange.Kind == Hash && len(in.Exchange.Keys) == 0 {
				return fmt.Errorf("graph: hash edge %s -> %s has no key columns", in.From.ID, n.ID)
			}
			in.From.outputs = append(in.From.outputs, n)
		}
	}
	for _, n := range g.Nodes {
		if n.Kind != SinkNode && len(n.outputs) == 0 {
			return fmt.Errorf("graph: node %s feeds nothing (end every path in a sink)", n.ID)
		}
	}
	return nil
}
