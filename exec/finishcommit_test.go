package exec_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clinksql/clinksql/exec"
)

// wmSource emits one batch whose watermark is its subtask's, then stays idle (taking barriers) until released.
type wmSource struct {
	seqSource
	wm      int64
	emitted bool
	release chan struct{}
}

func (s *wmSource) Produce(ctx context.Context) (exec.SourceResult, error) {
	if !s.emitted {
		s.emitted = true
		rec := eventRecord(s.alloc, []event{{key: int64(s.sub), ts: s.wm}})
		return exec.SourceResult{Status: exec.Produced, Batch: exec.Batch{Rec: rec}, WM: s.wm}, nil
	}
	select {
	case <-s.release:
		return exec.SourceResult{Status: exec.Finished}, nil
	default:
		return exec.SourceResult{Status: exec.Idle, WM: s.wm}, nil
	}
}

// finishLog is what the sinks of TestCommitFinisherGetsNodeWatermarkAfterEveryCommit saw.
type finishLog struct {
	mu       sync.Mutex
	commits  map[uint64]int // checkpoint -> subtasks whose Commit ran
	finishes []string       // "<sub>: <id> wm=<wm> after <n> commits"
	written  atomic.Int64
}

type finishingSink struct {
	memSink
	log     *finishLog
	failFor uint64 // Commit of this checkpoint fails (0: never)
}

func (f *finishingSink) Write(b exec.Batch) error {
	f.log.written.Add(int64(b.Rows()))
	b.Release()
	return nil
}

func (f *finishingSink) Commit(id uint64) error {
	f.log.mu.Lock()
	f.log.commits[id]++
	f.log.mu.Unlock()
	if id == f.failFor {
		return errors.New("injected commit failure")
	}
	return f.memSink.Commit(id)
}

func (f *finishingSink) FinishCommit(id uint64, wm int64) error {
	f.log.mu.Lock()
	defer f.log.mu.Unlock()
	f.log.finishes = append(f.log.finishes, fmt.Sprintf("%d: %d wm=%d after %d commits", f.sub, id, wm, f.log.commits[id]))
	return nil
}

// Pins exec.CommitFinisher: FinishCommit called before every subtask of the sink committed the checkpoint, with a
// subtask's own watermark instead of the node's minimum at the barrier, after a failed commit, or not at the
// final checkpoint (whose watermark is MaxWatermark: every input ended).
func TestCommitFinisherGetsNodeWatermarkAfterEveryCommit(t *testing.T) {
	for _, failing := range []bool{false, true} {
		t.Run(fmt.Sprintf("failing=%v", failing), func(t *testing.T) {
			release := make(chan struct{})
			wms := []int64{5_000, 3_000}
			log := &finishLog{commits: map[uint64]int{}}
			store := newTxnStore()
			g := exec.NewGraph()
			src := g.AddSource("gen", 2, func(sub int) exec.Source {
				return &wmSource{seqSource: seqSource{sub: sub}, wm: wms[sub], release: release}
			})
			g.AddSink("sink", 2, func(sub int) exec.Sink {
				f := &finishingSink{memSink: memSink{store: store, sub: sub}, log: log}
				if failing && sub == 1 {
					f.failFor = 1
				}
				return f
			}, exec.From(src, exec.ForwardExchange()))
			cfg := jobConfig(t, t.TempDir())
			cfg.CheckpointInterval = 0
			j, err := exec.NewJob(g, cfg)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			j.Start(ctx)
			defer j.Cancel()
			// Each source's watermark follows its batch on the channel, ahead of any barrier triggered now.
			waitFor(t, func() bool { return log.written.Load() == 2 })
			id, err := j.TriggerCheckpoint()
			if err != nil {
				t.Fatal(err)
			}
			err = j.WaitCheckpoint(ctx, id)
			log.mu.Lock()
			got := append([]string(nil), log.finishes...)
			log.mu.Unlock()
			if failing {
				if err == nil {
					t.Fatal("the failed commit was not reported")
				}
				if len(got) != 0 {
					t.Fatalf("FinishCommit ran after a failed commit: %v", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := []string{"0: 1 wm=3000 after 2 commits", "1: 1 wm=3000 after 2 commits"}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("finishes %v, want %v", got, want)
			}
			close(release)
			if err := j.Wait(ctx); err != nil {
				t.Fatal(err)
			}
			log.mu.Lock()
			defer log.mu.Unlock()
			last := log.finishes[len(log.finishes)-1]
			if want := fmt.Sprintf("1: %d wm=%d after 2 commits", j.Status().LastCompleted, exec.MaxWatermark); last != want {
				t.Fatalf("last finish %q, want %q (all: %v)", last, want, log.finishes)
			}
		})
	}
}
