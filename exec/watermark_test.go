package exec_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/clinksql/clinksql/exec"
)

// probe forwards batches and records every combined watermark its runner hands it.
type probe struct {
	exec.Stateless
	mu   sync.Mutex
	wms  []int64
	rows int
}

func (p *probe) Open(*exec.TaskContext) error { return nil }
func (p *probe) Process(_ int, b exec.Batch, out exec.Emitter) error {
	p.mu.Lock()
	p.rows += b.Rows()
	p.mu.Unlock()
	b.Release()
	return nil
}
func (p *probe) OnWatermark(wm int64, _ exec.Emitter) error {
	p.mu.Lock()
	p.wms = append(p.wms, wm)
	p.mu.Unlock()
	return nil
}

func (p *probe) state() ([]int64, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.wms), p.rows
}

func probeGraph(p *probe, a, b func(int) exec.Source, idle time.Duration) *exec.Graph {
	g := exec.NewGraph()
	sa := g.AddSource("a", 1, a)
	sb := g.AddSource("b", 1, b).WithIdleTimeout(idle)
	op := g.AddOperator("probe", 1, func(int) exec.Operator { return p },
		exec.From(sa, exec.ForwardExchange()), exec.From(sb, exec.ForwardExchange()))
	g.AddSink("sink", 1, func(int) exec.Sink { return discardSink{} }, exec.From(op, exec.ForwardExchange()))
	return g
}

// The combined watermark is the min over the inputs, so a fast input cannot fire windows a slow one still feeds;
// a finished input counts as +infinity, so it never holds the others back; at the end everything fires.
func TestWatermarkIsMinOverInputsAndFinishedInputIsInfinite(t *testing.T) {
	gateA, gateB := make(chan struct{}), make(chan struct{})
	a := seqConfig{seed: 1, rows: 200, batchRows: 100, keys: 3, tsStep: 10, gate: gateA} // batch 1: ts 0..990
	b := seqConfig{seed: 2, rows: 50, batchRows: 10, keys: 3, tsStep: 1, gate: gateB}    // batch 1: ts 0..9
	p := &probe{}
	cfg := jobConfig(t, t.TempDir())
	cfg.CheckpointInterval = 0
	j, err := exec.NewJob(probeGraph(p, newSeqSource(a), newSeqSource(b), 0), cfg)
	if err != nil {
		t.Fatal(err)
	}
	j.Start(context.Background())
	defer j.Cancel()

	gateA <- struct{}{}
	waitFor(t, func() bool { _, rows := p.state(); return rows == 100 })
	if wms, _ := p.state(); len(wms) != 0 {
		t.Fatalf("watermark advanced to %v while input b had said nothing", wms)
	}
	gateB <- struct{}{}
	waitFor(t, func() bool { wms, _ := p.state(); return slices.Contains(wms, 9) })
	if wms, _ := p.state(); slices.Max(wms) != 9 {
		t.Fatalf("watermarks %v passed the slow input's 9", wms)
	}
	close(gateB) // b runs to its end: it no longer holds a back
	waitFor(t, func() bool { wms, _ := p.state(); return slices.Contains(wms, 990) })
	if wms, _ := p.state(); slices.Max(wms) != 990 {
		t.Fatalf("watermarks %v: want a's 990 once b finished", wms)
	}
	close(gateA)
	if err := j.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	wms, _ := p.state()
	if !slices.IsSorted(wms) || wms[len(wms)-1] != exec.MaxWatermark {
		t.Fatalf("watermarks %v: want increasing, ending at +inf", wms)
	}
}

// idleSource never produces: an input that went quiet.
type idleSource struct{}

func (idleSource) RestoreOffset([]byte) error      { return nil }
func (idleSource) Open(*exec.TaskContext) error    { return nil }
func (idleSource) SnapshotOffset() ([]byte, error) { return []byte{}, nil }
func (idleSource) Close() error                    { return nil }
func (idleSource) Produce(ctx context.Context) (exec.SourceResult, error) {
	return exec.SourceResult{Status: exec.Idle}, nil
}

// A source idle longer than its idle timeout stops holding the watermark back: windows fed by the other inputs
// fire although the idle one never says anything (without the timeout the job would stall forever).
func TestIdleSourceStopsHoldingWatermarkBack(t *testing.T) {
	a := seqConfig{seed: 1, rows: 100, batchRows: 100, keys: 3, tsStep: 10}
	p := &probe{}
	cfg := jobConfig(t, t.TempDir())
	j, err := exec.NewJob(probeGraph(p, newSeqSource(a), func(int) exec.Source { return idleSource{} }, 20*time.Millisecond), cfg)
	if err != nil {
		t.Fatal(err)
	}
	j.Start(context.Background())
	defer j.Cancel()
	waitFor(t, func() bool { wms, _ := p.state(); return slices.Contains(wms, exec.MaxWatermark) })
}

// holder passes batches through and holds its output watermark back by lag (exec.WatermarkHolder).
type holder struct {
	exec.NoTimers
	exec.Stateless
	lag int64
}

func (holder) Open(*exec.TaskContext) error                        { return nil }
func (holder) Process(_ int, b exec.Batch, out exec.Emitter) error { return out.Emit(b) }
func (h holder) OutputWatermark(wm int64) int64                    { return wm - h.lag }

// An operator that emits rows older than its input watermark (an interval join's outer rows) holds the watermark
// it forwards back: downstream sees wm - lag, never the input's wm, and +infinity at the end as it is.
func TestWatermarkHolderHoldsTheForwardedWatermark(t *testing.T) {
	gate := make(chan struct{})
	a := seqConfig{seed: 1, rows: 200, batchRows: 100, keys: 3, tsStep: 10, gate: gate} // batch 1: ts 0..990
	p := &probe{}
	g := exec.NewGraph()
	src := g.AddSource("a", 1, newSeqSource(a))
	h := g.AddOperator("holder", 1, func(int) exec.Operator { return holder{lag: 100} }, exec.From(src, exec.ForwardExchange()))
	op := g.AddOperator("probe", 1, func(int) exec.Operator { return p }, exec.From(h, exec.ForwardExchange()))
	g.AddSink("sink", 1, func(int) exec.Sink { return discardSink{} }, exec.From(op, exec.ForwardExchange()))
	cfg := jobConfig(t, t.TempDir())
	cfg.CheckpointInterval = 0
	j, err := exec.NewJob(g, cfg)
	if err != nil {
		t.Fatal(err)
	}
	j.Start(context.Background())
	defer j.Cancel()
	gate <- struct{}{}
	waitFor(t, func() bool { wms, _ := p.state(); return slices.Contains(wms, 890) })
	if wms, _ := p.state(); slices.Max(wms) != 890 {
		t.Fatalf("downstream watermarks %v: want the input's 990 held back to 890", wms)
	}
	close(gate)
	if err := j.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	wms, _ := p.state()
	if !slices.IsSorted(wms) || wms[len(wms)-1] != exec.MaxWatermark || slices.Contains(wms, exec.MaxWatermark-100) {
		t.Fatalf("watermarks %v: want increasing, ending at +inf (not held)", wms)
	}
}
