package exec

import (
	"sync"
	"sync/atomic"
	"time"
)

// Edge is one edge of a job's graph: node ids and the exchange between them (Exchange.String() is what the
// system tables show).
type Edge struct {
	From, To string
	Exchange Exchange
}

// Restart causes (JobStatus.RestartsByCause, clinksql_job_restarts_total{cause}).
const (
	// RestartFailure: an operator, source or sink subtask failed, or a sink's commit did.
	RestartFailure = "failure"
	// RestartCheckpoint: a checkpoint failed (a participant's snapshot, its timeout, its marker), which rewinds
	// the job to its last completed checkpoint.
	RestartCheckpoint = "checkpoint"
	// RestartDeploy: the incarnation could not be deployed (the restore point, in-doubt resolution, opening state).
	RestartDeploy = "deploy"
)

// restartCause maps the failing operator a runIncarnation reports to a restart cause.
func restartCause(op string) string {
	switch op {
	case "checkpoint":
		return RestartCheckpoint
	case "deploy", "in-doubt resolution":
		return RestartDeploy
	}
	return RestartFailure
}

// Sampling of the rates (SubtaskStats' per-second figures and ratios): a ticker of the running job takes a sample
// of every subtask's counts every sampleEvery, keeping the last sampleKeep; a rate is the change from the oldest
// kept sample to the figures read now, so it covers the last few seconds.
const (
	sampleEvery = time.Second
	sampleKeep  = 5
)

type sample struct {
	t                      time.Time
	in, out, busy, blocked int64
}

// subStats is one subtask's figures, owned by the Job (they outlive incarnations): the counts are totals of the
// job, rewound at each deploy to the restored checkpoint's (keyCounts); times are of this process.
type subStats struct {
	node    *Node
	subtask int

	// rowsIn: rows taken from the inputs; rowsOut: rows emitted (a source's output counts in the job's rows in, a
	// sink's written rows in its rows out: their parents). late and bad: the job's late rows and bad values.
	rowsIn, rowsOut, late, bad Counter
	wm                         atomic.Int64 // last watermark emitted (a sink: its input watermark)
	stateBytes                 atomic.Int64 // size of the last persisted snapshot
	lastCommit                 atomic.Int64 // nanoseconds of the sink's last commit
	// busy and blocked: nanoseconds in the subtask's work (operator code and routing, blocked time excluded) and
	// blocked on a full output channel, up to the last call that ended; busySince and blockedSince are the start
	// (unix nanoseconds, 0 for none) of the call in progress, and busyBlocked what blocked was when it started,
	// so that a call stuck for long shows as it goes.
	busy, blocked, busySince, blockedSince, busyBlocked atomic.Int64

	mu     sync.Mutex // guards the fields below
	source SourceProgress
	sink   SinkProgress
	// hasSink: a sink subtask of this node implements SinkProgress; committedBase is what the sinks of torn-down
	// incarnations had committed, so the bytes committed are a total of the job in this process.
	hasSink       bool
	committedBase int64
	samples       [sampleKeep]sample
	nSamples      int
	next          int
}

func (st *subStats) setProgress(src SourceProgress, sink SinkProgress) {
	st.mu.Lock()
	if st.sink != nil {
		st.committedBase += st.sink.CommittedBytes()
	}
	st.source, st.sink = src, sink
	st.hasSink = st.hasSink || sink != nil
	st.mu.Unlock()
}

// committedBytes is what the subtask's sinks committed in this process, and whether the sink counts it.
func (st *subStats) committedBytes() (int64, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	n := st.committedBase
	if st.sink != nil {
		n += st.sink.CommittedBytes()
	}
	return n, st.hasSink
}

func (st *subStats) current(t time.Time) sample {
	s := sample{t: t, in: st.rowsIn.Load(), out: st.rowsOut.Load(), busy: st.busy.Load(), blocked: st.blocked.Load()}
	now := t.UnixNano()
	if since := st.blockedSince.Load(); since > 0 {
		s.blocked += max(now-since, 0)
	}
	if since := st.busySince.Load(); since > 0 {
		s.busy += max(now-since-(s.blocked-st.busyBlocked.Load()), 0)
	}
	return s
}

// startBusy and endBusy bracket the subtask's work on one element (a batch, a watermark, a barrier) or one
// Produce: two clock reads per batch, none per row.
func (st *subStats) startBusy() {
	st.busyBlocked.Store(st.blocked.Load())
	st.busySince.Store(time.Now().UnixNano())
}

func (st *subStats) endBusy() {
	since := st.busySince.Swap(0)
	if since == 0 {
		return
	}
	el := time.Now().UnixNano() - since
	st.busy.Add(max(el-(st.blocked.Load()-st.busyBlocked.Load()), 0))
}

// blockedFrom records a send that found its channel full; blockedFor ends it.
func (st *subStats) blockedFrom() int64 {
	now := time.Now().UnixNano()
	st.blockedSince.Store(now)
	return now
}

func (st *subStats) blockedFor(start int64) {
	st.blockedSince.Store(0)
	st.blocked.Add(max(time.Now().UnixNano()-start, 0))
}

// takeSample records the subtask's figures at t.
func (st *subStats) takeSample(t time.Time) {
	s := st.current(t)
	st.mu.Lock()
	st.samples[st.next] = s
	st.next = (st.next + 1) % sampleKeep
	st.nSamples = min(st.nSamples+1, sampleKeep)
	st.mu.Unlock()
}

// resetSamples forgets the samples: the counts were rewound, a rate across the rewind means nothing.
func (st *subStats) resetSamples() {
	st.mu.Lock()
	st.nSamples, st.next = 0, 0
	st.mu.Unlock()
}

// rates returns the per-second rates of rows in and out and the busy and backpressured shares of wall time from
// the oldest kept sample to now; zero without a sample.
func (st *subStats) rates(now sample) (in, out, busy, blocked float64) {
	st.mu.Lock()
	var old sample
	ok := st.nSamples > 0
	if ok {
		old = st.samples[(st.next-st.nSamples+sampleKeep)%sampleKeep]
	}
	st.mu.Unlock()
	if !ok {
		return 0, 0, 0, 0
	}
	dt := now.t.Sub(old.t)
	if dt <= 0 {
		return 0, 0, 0, 0
	}
	sec := dt.Seconds()
	rate := func(a, b int64) float64 { return float64(max(b-a, 0)) / sec }
	share := func(a, b int64) float64 { return min(float64(max(b-a, 0))/float64(dt), 1) }
	return rate(old.in, now.in), rate(old.out, now.out), share(old.busy, now.busy), share(old.blocked, now.blocked)
}

// newSubStats builds the figures of every subtask of g, in graph order.
func newSubStats(g *Graph, stats *jobStats) [][]*subStats {
	out := make([][]*subStats, len(g.Nodes))
	for _, n := range g.Nodes {
		out[n.index] = make([]*subStats, n.Parallelism)
		for sub := range out[n.index] {
			st := &subStats{node: n, subtask: sub}
			st.late.parent, st.bad.parent = &stats.late, &stats.errors
			switch n.Kind {
			case SourceNode:
				st.rowsOut.parent = &stats.rowsIn
			case SinkNode:
				st.rowsOut.parent = &stats.rowsOut
			}
			st.wm.Store(MinWatermark)
			out[n.index][sub] = st
		}
	}
	return out
}

// rewindSubStats zeroes the counts before a deploy, whose subtasks add back what their restored checkpoint
// counted, and forgets the samples.
func (j *Job) rewindSubStats() {
	for _, subs := range j.subs {
		for _, st := range subs {
			st.rowsIn.Store(0)
			st.rowsOut.Store(0)
			st.late.Store(0)
			st.bad.Store(0)
			st.wm.Store(MinWatermark)
			st.stateBytes.Store(0) // the restored snapshot's, set at deploy
			st.resetSamples()
		}
	}
}

// sampleLoop samples every subtask's figures every sampleEvery until the job ends.
func (j *Job) sampleLoop() {
	t := time.NewTicker(sampleEvery)
	defer t.Stop()
	for {
		select {
		case <-j.done:
			return
		case now := <-t.C:
			j.sample(now)
		}
	}
}

func (j *Job) sample(now time.Time) {
	for _, subs := range j.subs {
		for _, st := range subs {
			st.takeSample(now)
		}
	}
}

// Subtasks returns the figures of every subtask of every node, in graph order (valid at any time: a job not
// running shows its last counts, no rates and no source lag). Rates and ratios cover the last few seconds: a
// ticker samples the counts every second while the job runs, and a rate is taken from the oldest of the last
// five samples to the figures read now.
func (j *Job) Subtasks() []SubtaskStats {
	return j.subtasksAt(time.Now())
}

func (j *Job) subtasksAt(now time.Time) []SubtaskStats {
	var out []SubtaskStats
	for _, subs := range j.subs {
		for _, st := range subs {
			cur := st.current(now)
			in, outRate, busy, blocked := st.rates(cur)
			n := st.node
			s := SubtaskStats{
				Node: n.ID, Label: n.Label, Kind: n.Kind, Subtask: st.subtask, Parallelism: n.Parallelism,
				RowsIn: cur.in, RowsOut: cur.out, RowsInPerSec: in, RowsOutPerSec: outRate,
				Busy: time.Duration(cur.busy), Backpressured: time.Duration(cur.blocked), BusyRatio: busy, BackpressureRatio: blocked,
				Watermark: st.wm.Load(), StateBytes: st.stateBytes.Load(), LateRows: st.late.Load(), BadValues: st.bad.Load(),
				LagRecords: -1, LagBytes: -1, Total: -1,
				LastCommit: time.Duration(st.lastCommit.Load()),
			}
			st.mu.Lock()
			src := st.source
			st.mu.Unlock()
			if src != nil {
				s.LagRecords, s.LagBytes, s.Total = src.Progress()
			}
			s.CommittedBytes, _ = st.committedBytes()
			out = append(out, s)
		}
	}
	return out
}

// Edges returns the edges of the job's graph, in graph order.
func (j *Job) Edges() []Edge {
	var out []Edge
	for _, n := range j.g.Nodes {
		for _, in := range n.Inputs {
			out = append(out, Edge{From: in.From.ID, To: n.ID, Exchange: in.Exchange})
		}
	}
	return out
}

// Checkpoints returns the job's last checkpoints (JobConfig.HistorySize), oldest first. The history is persisted
// in the job's checkpoint directory, so it covers earlier runs of the job too.
func (j *Job) Checkpoints() CheckpointHistory { return j.history.Records() }

// sinkWatermark is the min input watermark over the job's sink subtasks, MinWatermark if none.
func (j *Job) sinkWatermark() int64 {
	wm, any := MaxWatermark, false
	for _, subs := range j.subs {
		for _, st := range subs {
			if st.node.Kind == SinkNode {
				any = true
				wm = min(wm, st.wm.Load())
			}
		}
	}
	if !any {
		return MinWatermark
	}
	return wm
}
