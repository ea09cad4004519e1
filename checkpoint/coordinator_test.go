package checkpoint

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clinksql/clinksql/state"
)

type outcome struct {
	id  uint64
	err error
}

// harness runs a Coordinator over a temp dir and turns its callbacks into channels.
type harness struct {
	t         *testing.T
	c         *Coordinator
	dir       string
	hist      *History
	completed chan uint64
	aborted   chan outcome
	failed    chan outcome
}

func newHarness(t *testing.T, mutate func(*Config)) *harness {
	t.Helper()
	h := &harness{
		t:         t,
		dir:       filepath.Join(t.TempDir(), "checkpoints"),
		completed: make(chan uint64, 64),
		aborted:   make(chan outcome, 64),
		failed:    make(chan outcome, 64),
	}
	cfg := Config{
		Dir:        h.dir,
		OnComplete: func(id uint64) error { h.completed <- id; return nil },
		OnAbort:    func(id uint64, err error) { h.aborted <- outcome{id, err} },
		OnFailure:  func(id uint64, err error) { h.failed <- outcome{id, err} },
	}
	if mutate != nil {
		mutate(&cfg)
	}
	if cfg.Dir != h.dir {
		h.dir = cfg.Dir
	}
	h.hist = cfg.History
	c, err := NewCoordinator(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	h.c = c
	return h
}

// withHistory gives the coordinator a history in its directory (harness.hist). Its writes run on the
// coordinator's callback goroutine: a test using it stops and drains the coordinator before it ends.
func withHistory(t *testing.T, also func(*Config)) func(*Config) {
	return func(c *Config) {
		if also != nil {
			also(c)
		}
		hist, err := OpenHistory(c.FS, c.Dir, 0)
		if err != nil {
			t.Fatal(err)
		}
		c.History = hist
	}
}

func (h *harness) trigger() uint64 {
	h.t.Helper()
	b, err := h.c.Trigger()
	if err != nil {
		h.t.Fatal(err)
	}
	return b.ID
}

func (h *harness) wait(id uint64) error {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := h.c.WaitCompleted(ctx, id)
	if errors.Is(err, context.DeadlineExceeded) {
		h.t.Fatalf("checkpoint %d never decided", id)
	}
	return err
}

// noMore fails if the channel holds anything. Callbacks run in decision order on one goroutine, so callers first
// wait for a later outcome (a fence) to be sure everything earlier has run.
func noMore[T any](t *testing.T, what string, ch chan T) {
	t.Helper()
	select {
	case v := <-ch:
		t.Fatalf("unexpected %s: %v", what, v)
	default:
	}
}

// persist writes a participant's snapshot file, as a SnapshotWorker would before acking.
func (h *harness) persist(id uint64, p ParticipantID) {
	h.t.Helper()
	d := SubtaskDir(h.dir, id, p)
	if err := os.MkdirAll(d, 0o755); err != nil {
		h.t.Fatal(err)
	}
	if err := state.WriteFsyncRename(state.OS, filepath.Join(d, "state"), []byte("x")); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) ackAll(id uint64, ps ...ParticipantID) {
	for _, p := range ps {
		h.persist(id, p)
		h.c.Acknowledge(id, p, nil)
	}
}

// Pins the on-disk layout sinks and restore read (chk-<id>/<participant>, COMPLETED-<id>), and that a job with no
// checkpoint directory yet starts at id 1 with no restore point.
func TestCheckpointDirHelpers(t *testing.T) {
	dir := "/data/jobs/j1/checkpoints"
	if got := SubtaskDir(dir, 12, "agg-3"); got != "/data/jobs/j1/checkpoints/chk-12/agg-3" {
		t.Fatalf("SubtaskDir = %s", got)
	}
	if got := MarkerPath(dir, 12); got != "/data/jobs/j1/checkpoints/COMPLETED-12" {
		t.Fatalf("MarkerPath = %s", got)
	}
	// A job that never checkpointed has no directory: restore point none, first id 1.
	missing := filepath.Join(t.TempDir(), "none")
	if _, ok, err := LatestCompleted(nil, missing); ok || err != nil {
		t.Fatalf("LatestCompleted(missing) = %v, %v", ok, err)
	}
	if id, err := NextID(nil, missing); id != 1 || err != nil {
		t.Fatalf("NextID(missing) = %d, %v", id, err)
	}
}

// Pins the completion order: COMPLETED-<id> is durable and the restore point advanced before sinks commit
// (OnComplete), and not a moment earlier than the last ack.
func TestMarkerDurableBeforeOnComplete(t *testing.T) {
	var h *harness
	var sawMarker, sawRestorePoint bool
	h = newHarness(t, withHistory(t, func(c *Config) {
		c.OnComplete = func(id uint64) error {
			sawMarker = IsCompleted(nil, h.dir, id)
			sawRestorePoint = h.c.LastCompleted() == id
			h.completed <- id
			return nil
		}
	}))
	h.c.Register("src-0")
	h.c.Register("sink-0")
	id := h.trigger()
	h.ackAll(id, "src-0")
	if IsCompleted(nil, h.dir, id) || h.c.LastCompleted() != 0 {
		t.Fatal("checkpoint completed with an ack missing")
	}
	h.ackAll(id, "sink-0")
	if err := h.wait(id); err != nil {
		t.Fatal(err)
	}
	if <-h.completed != id || !sawMarker || !sawRestorePoint {
		t.Fatalf("OnComplete saw marker=%v restorePoint=%v, want both", sawMarker, sawRestorePoint)
	}
	if latest, ok, _ := LatestCompleted(nil, h.dir); !ok || latest != id {
		t.Fatalf("LatestCompleted = %d, %v", latest, ok)
	}
	h.c.Stop()
	h.c.Drain()
	if tot := h.hist.Totals(); tot.Outcomes(Completed) != 1 || tot.Duration.Count != 1 {
		t.Fatal("completion not counted")
	}
	if len(h.c.Durations()) != 1 {
		t.Fatalf("Durations = %v", h.c.Durations())
	}
}

// gateFS holds the rename that publishes a COMPLETED marker until released.
type gateFS struct {
	state.FS
	renaming chan struct{}
	release  chan struct{}
}

func (g gateFS) Rename(o, n string) error {
	if strings.HasPrefix(filepath.Base(n), markerPrefix) {
		g.renaming <- struct{}{}
		<-g.release
	}
	return g.FS.Rename(o, n)
}

// Pins "the restore point advances with the marker, not before it": while the marker write is in progress,
// LastCompleted has not moved and sinks have not been told to commit (a restart deciding its restore point in
// that window would otherwise use a checkpoint its successor cannot see).
func TestRestorePointAdvancesOnlyAfterMarkerDurable(t *testing.T) {
	g := gateFS{FS: state.OS, renaming: make(chan struct{}), release: make(chan struct{})}
	h := newHarness(t, func(c *Config) { c.FS = g })
	h.c.Register("p")
	id := h.trigger()
	h.c.Acknowledge(id, "p", nil)
	<-g.renaming
	if h.c.LastCompleted() != 0 {
		t.Fatal("restore point advanced before the marker was durable")
	}
	noMore(t, "OnComplete before the marker", h.completed)
	close(g.release)
	if err := h.wait(id); err != nil {
		t.Fatal(err)
	}
	if h.c.LastCompleted() != id || <-h.completed != id {
		t.Fatal("checkpoint did not complete after the marker landed")
	}
}

// Pins that a marker that could not be made durable fails the checkpoint: no restore point, no sink commit, an
// abort of its staged output and a whole-job rewind.
func TestMarkerWriteFailureFailsCheckpoint(t *testing.T) {
	// Mutating call 1 is NewCoordinator's MkdirAll; the marker's temp-file create is call 2.
	ffs := &state.FaultFS{Inner: state.OS, FailAfter: 1}
	h := newHarness(t, func(c *Config) { c.FS = ffs })
	h.c.Register("p")
	id := h.trigger()
	h.c.Acknowledge(id, "p", nil)
	err := h.wait(id)
	if !errors.Is(err, state.ErrInjected) {
		t.Fatalf("WaitCompleted = %v, want the injected fault", err)
	}
	if h.c.LastCompleted() != 0 || IsCompleted(nil, h.dir, id) {
		t.Fatal("restore point advanced or marker present after a failed marker write")
	}
	noMore(t, "OnComplete", h.completed)
	if a := <-h.aborted; a.id != id {
		t.Fatalf("OnAbort(%d), want %d", a.id, id)
	}
	if f := <-h.failed; f.id != id || !errors.Is(f.err, state.ErrInjected) {
		t.Fatalf("OnFailure = %+v", f)
	}
	if _, err := h.c.Trigger(); !errors.Is(err, ErrRewinding) {
		t.Fatalf("Trigger after failure = %v, want ErrRewinding", err)
	}
}

// Pins abort idempotence: sinks hear OnAbort once per checkpoint however often it is aborted, and late acks of
// an aborted checkpoint neither complete nor re-abort it.
func TestAbortIsIdempotent(t *testing.T) {
	h := newHarness(t, nil)
	h.c.Register("p")
	first := h.trigger()
	fence := h.trigger()
	boom := errors.New("operator died")
	h.c.Abort(first, boom)
	h.c.Abort(first, boom)
	h.c.Acknowledge(first, "p", nil)
	h.c.Abort(fence, boom) // decided after everything above; its callbacks run after theirs
	if err := h.wait(fence); err == nil {
		t.Fatal("aborted fence completed")
	}
	if err := h.wait(first); !errors.Is(err, boom) {
		t.Fatalf("WaitCompleted(aborted) = %v", err)
	}
	var ids []uint64
	for len(h.aborted) > 0 {
		ids = append(ids, (<-h.aborted).id)
	}
	if !slices.Equal(ids, []uint64{first, fence}) {
		t.Fatalf("OnAbort calls %v, want [%d %d]", ids, first, fence)
	}
	noMore(t, "OnComplete", h.completed)
	// An abort is a failure (its staged output is gone): one rewind, for the first.
	if f := <-h.failed; f.id != first {
		t.Fatalf("OnFailure(%d), want %d", f.id, first)
	}
	noMore(t, "second OnFailure", h.failed)
}

// Pins that acks the coordinator does not expect change nothing: unknown ids, completed ids, participants not
// awaited, duplicate acks.
func TestUnknownAndStaleAcksAreIgnored(t *testing.T) {
	h := newHarness(t, nil)
	h.c.Register("a")
	h.c.Register("b")
	h.c.Acknowledge(999, "a", nil)
	h.c.Acknowledge(999, "a", errors.New("late failure of a checkpoint never issued"))
	one := h.trigger()
	h.c.Acknowledge(one, "a", nil)
	h.c.Acknowledge(one, "a", nil)        // duplicate: b is still owed
	h.c.Acknowledge(one, "stranger", nil) // not a participant of one
	if h.c.InFlight() != 1 {
		t.Fatal("checkpoint completed without b's ack")
	}
	h.c.Acknowledge(one, "b", nil)
	if err := h.wait(one); err != nil {
		t.Fatal(err)
	}
	h.c.Acknowledge(one, "a", errors.New("late failure of a completed checkpoint"))
	two := h.trigger() // not refused: the late failure was ignored
	h.c.Acknowledge(two, "a", nil)
	h.c.Acknowledge(two, "b", nil)
	if err := h.wait(two); err != nil {
		t.Fatal(err)
	}
	if got := []uint64{<-h.completed, <-h.completed}; !slices.Equal(got, []uint64{one, two}) {
		t.Fatalf("completed %v", got)
	}
	noMore(t, "OnAbort", h.aborted)
	noMore(t, "OnFailure", h.failed)
}

// Pins that a checkpoint nobody finishes answering fails like any other instead of leaving staged sink output
// staged forever; a late ack afterwards is ignored.
func TestTimeoutFailsCheckpoint(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Timeout = time.Millisecond })
	h.c.Register("fast")
	h.c.Register("stuck")
	id := h.trigger()
	h.c.Acknowledge(id, "fast", nil)
	f := <-h.failed
	if f.id != id || !errors.Is(f.err, ErrTimeout) || !strings.Contains(f.err.Error(), "stuck") {
		t.Fatalf("OnFailure = %+v, want a timeout naming the participant it waited on", f)
	}
	if a := <-h.aborted; a.id != id {
		t.Fatalf("OnAbort(%d)", a.id)
	}
	h.c.Acknowledge(id, "stuck", nil)
	if err := h.wait(id); !errors.Is(err, ErrTimeout) {
		t.Fatalf("WaitCompleted = %v", err)
	}
	if h.c.LastCompleted() != 0 || IsCompleted(nil, h.dir, id) {
		t.Fatal("timed-out checkpoint completed")
	}
}

// Pins the rewind floor (CheckpointCompletion.ACheckpointAboveAFailedOneIsDiscardedDuringTheRewind): a checkpoint
// above a failed one that finishes collecting acks during the rewind is discarded - no marker, an abort of its
// staged output - or it would become a restore point past the failed checkpoint's lost interval. A checkpoint
// below the failed one still completes (its cut precedes the loss), but is not broadcast while the job drains.
func TestCheckpointAboveFailedOneIsDiscardedDuringRewind(t *testing.T) {
	h := newHarness(t, nil)
	h.c.Register("a")
	h.c.Register("b")
	below, failed, above := h.trigger(), h.trigger(), h.trigger()
	h.c.Acknowledge(below, "a", nil)
	h.c.Acknowledge(failed, "a", errors.New("snapshot failed"))
	if f := <-h.failed; f.id != failed {
		t.Fatalf("OnFailure(%d), want %d", f.id, failed)
	}
	h.ackAll(below, "b")
	if err := h.wait(below); !errors.Is(err, ErrCommitDeferred) || !IsCompleted(nil, h.dir, below) {
		t.Fatalf("checkpoint below the floor: %v, want completed with its commit deferred", err)
	}
	h.ackAll(above, "a", "b")
	if err := h.wait(above); !errors.Is(err, ErrRewinding) {
		t.Fatalf("checkpoint above the floor: %v, want discarded", err)
	}
	if IsCompleted(nil, h.dir, above) || h.c.LastCompleted() != below {
		t.Fatalf("restore point %d, marker of %d present=%v", h.c.LastCompleted(), above, IsCompleted(nil, h.dir, above))
	}
	var aborted []uint64
	for len(h.aborted) > 0 {
		aborted = append(aborted, (<-h.aborted).id)
	}
	if !slices.Equal(aborted, []uint64{failed, above}) {
		t.Fatalf("aborted %v, want [%d %d]", aborted, failed, above)
	}
	noMore(t, "second OnFailure", h.failed)
	if _, err := h.c.Trigger(); !errors.Is(err, ErrRewinding) {
		t.Fatalf("Trigger during rewind = %v", err)
	}
}

// Pins id uniqueness across incarnations: a dead incarnation left chk-7 (no marker, it never completed) above the
// restore point 3; the successor numbers from 8, never reusing 7 (its files would mix with the dead ones), and
// ignores temp files.
func TestIDsNumberedAboveDeadIncarnationFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "checkpoints")
	for _, d := range []string{"chk-3/src-0", "chk-7/src-0", "chk-notanid"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{".COMPLETED-9.part", ".HIGHWATER.part"} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := WriteMarker(nil, dir, 3); err != nil {
		t.Fatal(err)
	}
	if id, err := NextID(nil, dir); id != 8 || err != nil {
		t.Fatalf("NextID = %d, %v; want 8", id, err)
	}
	for _, tc := range []struct {
		firstID, want uint64
	}{{0, 8}, {2, 8}, {20, 20}} {
		h := newHarness(t, func(c *Config) { c.Dir, c.FirstID = dir, tc.firstID })
		h.c.Register("src-0") // never acks: this incarnation dies without completing anything
		if h.c.LastCompleted() != 3 {
			t.Fatalf("restore point %d, want 3", h.c.LastCompleted())
		}
		if id := h.trigger(); id != tc.want {
			t.Fatalf("FirstID %d: first id %d, want %d", tc.firstID, id, tc.want)
		}
		h.c.Stop()
	}
}

// recordFS logs the mutating calls under dir, in order.
type recordFS struct {
	state.FS
	mu  sync.Mutex
	ops []string
}

func (r *recordFS) log(op, name string) {
	r.mu.Lock()
	r.ops = append(r.ops, op+" "+filepath.Base(name))
	r.mu.Unlock()
}
func (r *recordFS) Rename(o, n string) error { r.log("rename", n); return r.FS.Rename(o, n) }
func (r *recordFS) Remove(n string) error    { r.log("remove", n); return r.FS.Remove(n) }
func (r *recordFS) RemoveAll(n string) error { r.log("removeall", n); return r.FS.RemoveAll(n) }

// Pins that ids stay unique after retention deleted older checkpoints: the high-water mark is durable before the
// first deletion and alone keeps NextID above every id ever issued.
func TestHighWaterKeepsIDsUniqueAfterRetention(t *testing.T) {
	rfs := &recordFS{FS: state.OS}
	h := newHarness(t, func(c *Config) { c.FS, c.Retain = rfs, 1 })
	h.c.Register("p")
	var last uint64
	for range 3 {
		last = h.trigger()
		h.ackAll(last, "p")
		if err := h.wait(last); err != nil {
			t.Fatal(err)
		}
	}
	rfs.mu.Lock()
	ops := slices.Clone(rfs.ops)
	rfs.mu.Unlock()
	hw := slices.Index(ops, "rename "+highWater)
	del := slices.IndexFunc(ops, func(s string) bool { return strings.HasPrefix(s, "remove") })
	if hw < 0 || del < 0 || hw > del {
		t.Fatalf("HIGHWATER must be durable before the first deletion; ops: %v", ops)
	}
	// Everything retention kept goes away too (a wiped restore point, a crash mid-sweep): HIGHWATER still names
	// the newest id, so a successor never reuses it.
	for _, p := range []string{MarkerPath(h.dir, last), chkDir(h.dir, last)} {
		if err := os.RemoveAll(p); err != nil {
			t.Fatal(err)
		}
	}
	entries, _ := os.ReadDir(h.dir)
	if len(entries) != 1 || entries[0].Name() != highWater {
		t.Fatalf("dir holds %v, want only HIGHWATER", entries)
	}
	if id, err := NextID(nil, h.dir); err != nil || id != last+1 {
		t.Fatalf("NextID = %d, %v; want %d", id, err, last+1)
	}
}

// Pins retention: the newest Retain completed checkpoints stay (marker and files), older completed ones and
// uncompleted directories below them go, and a checkpoint still collecting acks keeps its directory even when
// newer ones completed first.
func TestRetentionKeepsNewestN(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "checkpoints")
	if err := os.MkdirAll(filepath.Join(dir, "chk-1", "p"), 0o755); err != nil { // a dead incarnation's
		t.Fatal(err)
	}
	h := newHarness(t, func(c *Config) { c.Dir, c.Retain = dir, 2 })
	h.c.Register("p")
	h.c.Register("q")
	for range 2 { // 2, 3
		id := h.trigger()
		h.ackAll(id, "p", "q")
		if err := h.wait(id); err != nil {
			t.Fatal(err)
		}
	}
	slow := h.trigger() // 4: q is slow
	h.ackAll(slow, "p")
	for range 2 { // 5, 6 complete while 4 is still in flight
		id := h.trigger()
		h.ackAll(id, "p", "q")
		if err := h.wait(id); err != nil {
			t.Fatal(err)
		}
	}
	list := func() []string {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		return names
	}
	want := []string{"COMPLETED-5", "COMPLETED-6", "HIGHWATER", "chk-4", "chk-5", "chk-6"}
	if got := list(); !slices.Equal(got, want) {
		t.Fatalf("after 6: %v, want %v", got, want)
	}
	h.ackAll(slow, "q")
	if err := h.wait(slow); err != nil {
		t.Fatal(err)
	}
	if h.c.LastCompleted() != 6 {
		t.Fatalf("restore point went back to %d", h.c.LastCompleted())
	}
	// 4 completed after 5 and 6: it is the oldest of three completed, so it goes.
	want = []string{"COMPLETED-5", "COMPLETED-6", "HIGHWATER", "chk-5", "chk-6"}
	if got := list(); !slices.Equal(got, want) {
		t.Fatalf("after 4: %v, want %v", got, want)
	}
	if got, _ := CompletedIDs(nil, dir); !slices.Equal(got, []uint64{5, 6}) {
		t.Fatalf("CompletedIDs = %v", got)
	}
}

// Pins mode resolution: an explicit override beats the resolver, the resolver beats DefaultMode, terminal
// barriers are always aligned; the history records each checkpoint's mode.
func TestModeResolutionOrder(t *testing.T) {
	h := newHarness(t, withHistory(t, func(c *Config) { c.DefaultMode = Unaligned }))
	mode := func(b Barrier, err error) Mode {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return b.Mode
	}
	if m := mode(h.c.Trigger()); m != Unaligned {
		t.Fatalf("default: %s", m)
	}
	resolved := 0
	h.c.SetModeResolver(func() Mode { resolved++; return Aligned })
	if m := mode(h.c.Trigger()); m != Aligned {
		t.Fatalf("resolver over default: %s", m)
	}
	if m := mode(h.c.TriggerMode(Unaligned)); m != Unaligned {
		t.Fatalf("override over resolver: %s", m)
	}
	if resolved != 1 {
		t.Fatalf("resolver consulted %d times, want 1 (not for the override)", resolved)
	}
	h.c.SetModeResolver(func() Mode { return Unaligned })
	b, err := h.c.TriggerFinal()
	if err != nil || !b.Terminal || b.Mode != Aligned {
		t.Fatalf("TriggerFinal = %v, %v; want a terminal aligned barrier", b, err)
	}
	if _, err := h.c.Trigger(); !errors.Is(err, ErrFinished) {
		t.Fatalf("Trigger after the final one = %v", err)
	}
	h.c.Stop()
	h.c.Drain()
	modes := map[Mode]int{}
	for _, r := range h.hist.Records() {
		modes[r.Mode]++
	}
	if modes[Aligned] != 2 || modes[Unaligned] != 2 {
		t.Fatalf("history by mode %v, want 2 aligned and 2 unaligned", modes)
	}
}

// Pins the adaptive wiring: pressure is sampled once per trigger, the hysteresis decides the stamp, and every flip
// counts in the history's total of switches.
func TestEnableAdaptiveStampsAndCountsSwitches(t *testing.T) {
	h := newHarness(t, withHistory(t, nil))
	pressures := []float64{0.9, 0.1, 0.9, 0.9, 0.9, 0.2, 0.2}
	want := []Mode{Aligned, Aligned, Aligned, Unaligned, Unaligned, Unaligned, Aligned}
	i := 0
	p := h.c.EnableAdaptive(func() float64 { v := pressures[i]; i++; return v },
		AdaptiveConfig{PressureThreshold: 0.5, WindowsToUnaligned: 2, WindowsToAligned: 2})
	for n := range pressures {
		b, err := h.c.Trigger()
		if err != nil {
			t.Fatal(err)
		}
		if b.Mode != want[n] {
			t.Fatalf("trigger %d (pressure %v): %s, want %s", n, pressures[n], b.Mode, want[n])
		}
	}
	h.c.Stop()
	h.c.Drain()
	if got := h.hist.Totals().AdaptiveSwitches; p.Switches() != 2 || got != 2 {
		t.Fatalf("switches %d, history total %d; want 2", p.Switches(), got)
	}
}

// Pins the callback rule: callbacks never run under the coordinator's lock, so one that calls back into it
// (a sink commit that triggers, acks or stops) does not deadlock.
func TestCallbacksMayCallBackIntoCoordinator(t *testing.T) {
	var c *Coordinator
	next := make(chan uint64, 1)
	stopped := make(chan struct{})
	cfg := Config{
		Dir: filepath.Join(t.TempDir(), "checkpoints"),
		OnComplete: func(id uint64) error {
			_ = c.LastCompleted()
			c.Acknowledge(id, "p", nil) // stale: ignored
			b, err := c.Trigger()
			if err != nil {
				t.Error(err)
			}
			next <- b.ID
			return nil
		},
		OnFailure: func(uint64, error) { c.Stop(); close(stopped) },
	}
	c, err := NewCoordinator(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.Register("p")
	b, _ := c.Trigger()
	c.Acknowledge(b.ID, "p", nil)
	id := <-next
	c.Acknowledge(id, "p", errors.New("fail"))
	<-stopped
	if _, err := c.Trigger(); !errors.Is(err, ErrStopped) {
		t.Fatalf("Trigger after Stop = %v", err)
	}
}

// Pins that a finished subtask does not wedge checkpoints: Deregister removes it from the ack set of the
// checkpoints still waiting for it and of later ones.
func TestDeregisterLeavesAckSets(t *testing.T) {
	h := newHarness(t, nil)
	h.c.Register("a")
	h.c.Register("b")
	id := h.trigger()
	h.c.Acknowledge(id, "a", nil)
	h.c.Deregister("b")
	if err := h.wait(id); err != nil {
		t.Fatal(err)
	}
	next := h.trigger()
	h.c.Acknowledge(next, "a", nil)
	if err := h.wait(next); err != nil {
		t.Fatal(err)
	}
}

// Pins the in-flight cap of the periodic trigger: a tick does not wait for the previous checkpoint's acks, but
// skips while MaxInFlight checkpoints are undecided.
func TestPeriodicTickCapsInFlight(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxInFlight = 2 })
	h.c.Register("p")
	for n, want := range []bool{true, true, false} {
		if ok, err := h.c.tick(); ok != want || err != nil {
			t.Fatalf("tick %d = %v, %v; want %v", n, ok, err, want)
		}
	}
	h.c.Acknowledge(h.c.firstID, "p", nil)
	if err := h.wait(h.c.firstID); err != nil {
		t.Fatal(err)
	}
	if ok, _ := h.c.tick(); !ok {
		t.Fatal("tick skipped with room under the cap")
	}
}

// Pins that Start pushes periodic barriers, in id order, into every injector, and Stop ends it.
func TestStartTriggersPeriodically(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Interval = time.Millisecond })
	barriers := make(chan Barrier, 8)
	h.c.SetInjectors([]func(Barrier){func(b Barrier) {
		select {
		case barriers <- b:
		default:
		}
	}})
	h.c.Register("p")
	h.c.Start(context.Background())
	first := <-barriers
	h.c.Acknowledge(first.ID, "p", nil)
	second := <-barriers
	if second.ID <= first.ID {
		t.Fatalf("barrier %d after %d", second.ID, first.ID)
	}
	h.c.Stop()
	if _, err := h.c.Trigger(); !errors.Is(err, ErrStopped) {
		t.Fatalf("Trigger after Stop = %v", err)
	}
}

// Pins Stop: in-flight checkpoints are aborted (sinks discard staged output) without a rewind, and late acks are
// ignored.
func TestStopAbortsInFlightWithoutRewind(t *testing.T) {
	h := newHarness(t, nil)
	h.c.Register("p")
	id := h.trigger()
	h.c.Stop()
	if err := h.wait(id); !errors.Is(err, ErrStopped) {
		t.Fatalf("WaitCompleted = %v", err)
	}
	if a := <-h.aborted; a.id != id {
		t.Fatalf("OnAbort(%d)", a.id)
	}
	h.c.Acknowledge(id, "p", nil)
	noMore(t, "OnFailure", h.failed)
	noMore(t, "OnComplete", h.completed)
}

// Pins WaitCompleted's answers for ids it does not track.
func TestWaitCompletedUnknownIDs(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "checkpoints")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := WriteMarker(nil, dir, 4); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, func(c *Config) { c.Dir = dir })
	if err := h.c.WaitCompleted(context.Background(), 4); err != nil {
		t.Fatalf("earlier incarnation's completed checkpoint: %v", err)
	}
	if err := h.c.WaitCompleted(context.Background(), 3); !errors.Is(err, ErrUnknownCheckpoint) {
		t.Fatalf("never completed: %v", err)
	}
	if err := h.c.WaitCompleted(context.Background(), 5); !errors.Is(err, ErrUnknownCheckpoint) {
		t.Fatalf("not issued yet: %v", err)
	}
}

// Pins that a job restarted (a new Coordinator over the same directory, with the history reopened) keeps
// counting into the same totals.
func TestHistoryTotalsSurviveNewCoordinator(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "checkpoints")
	for range 2 {
		hist, err := OpenHistory(nil, dir, 0)
		if err != nil {
			t.Fatal(err)
		}
		c, err := NewCoordinator(Config{Dir: dir, History: hist})
		if err != nil {
			t.Fatal(err)
		}
		c.Register("p")
		b, err := c.Trigger()
		if err != nil {
			t.Fatal(err)
		}
		c.Acknowledge(b.ID, "p", nil)
		if err := c.WaitCompleted(context.Background(), b.ID); err != nil {
			t.Fatal(err)
		}
		c.Stop()
	}
	_, tot, err := ReadHistory(nil, dir)
	if err != nil || tot.Outcomes(Completed) != 2 {
		t.Fatalf("completed %d (%v), want 2", tot.Outcomes(Completed), err)
	}
}

// Pins the seed's draining exception to the commit broadcast: a checkpoint whose marker write was in progress
// when the job started draining (a failure rewinding it, or Stop) keeps its marker and becomes the restore point,
// but the sinks are not told to commit it (a broadcast into a half-torn-down job commits some sinks and not
// others); WaitCompleted says so, and the restart's sink recovery commits it.
func TestCheckpointCompletingWhileDrainingIsNotBroadcast(t *testing.T) {
	for _, drain := range []string{"rewind", "stop"} {
		t.Run(drain, func(t *testing.T) {
			g := gateFS{FS: state.OS, renaming: make(chan struct{}), release: make(chan struct{})}
			h := newHarness(t, func(c *Config) { c.FS = g })
			h.c.Register("p")
			id := h.trigger()
			above := h.trigger()
			h.c.Acknowledge(id, "p", nil)
			<-g.renaming // id's marker is being written
			stopped := make(chan struct{})
			switch drain {
			case "rewind":
				h.c.Abort(above, errors.New("operator died")) // a failure: the job rewinds
			case "stop":
				go func() { h.c.Stop(); close(stopped) }()
				for { // Stop marks the coordinator stopped before it waits out the marker write
					if _, err := h.c.Trigger(); errors.Is(err, ErrStopped) {
						break
					}
					time.Sleep(time.Millisecond)
				}
			}
			close(g.release)
			if err := h.wait(id); !errors.Is(err, ErrCommitDeferred) {
				t.Fatalf("WaitCompleted = %v, want ErrCommitDeferred", err)
			}
			if !IsCompleted(nil, h.dir, id) || h.c.LastCompleted() != id {
				t.Fatal("the checkpoint lost its marker or restore point")
			}
			noMore(t, "OnComplete (commit broadcast) while draining", h.completed)
			if drain == "stop" {
				<-stopped
			}
		})
	}
}

// syncDirFailFS fails every fsync of one directory: a disk whose directory metadata cannot be made durable.
type syncDirFailFS struct {
	state.FS
	dir string
}

var errDirSync = errors.New("injected directory fsync failure")

func (f syncDirFailFS) SyncDir(name string) error {
	if name == f.dir {
		return errDirSync
	}
	return f.FS.SyncDir(name)
}

// Pins the strict directory fsync of the COMPLETED marker: a marker whose name may not survive a power loss is no
// restore point (the sinks' commits are strictly durable, so a marker that vanishes under them makes the restore
// publish the interval twice). The checkpoint fails, the job rewinds, the marker is taken back, and the staged
// output is kept for the next incarnation's recovery (the marker might still be on disk after all).
func TestMarkerDirectoryFsyncFailureFailsCheckpoint(t *testing.T) {
	t.Setenv("CLINK_STATE_FSYNC", "1")
	var h *harness
	h = newHarness(t, func(c *Config) { c.FS = syncDirFailFS{FS: state.OS, dir: c.Dir} })
	h.c.Register("p")
	id := h.trigger()
	h.c.Acknowledge(id, "p", nil)
	if err := h.wait(id); !errors.Is(err, errDirSync) {
		t.Fatalf("WaitCompleted = %v, want the directory fsync failure", err)
	}
	if IsCompleted(nil, h.dir, id) || h.c.LastCompleted() != 0 {
		t.Fatal("a marker whose directory fsync failed is still a restore point")
	}
	noMore(t, "OnComplete", h.completed)
	noMore(t, "OnAbort (the staged output must stay for recovery)", h.aborted)
	if f := <-h.failed; f.id != id || !errors.Is(f.err, errDirSync) {
		t.Fatalf("OnFailure = %+v", f)
	}
}

// Pins that OnComplete's error (a sink commit that failed) is what WaitCompleted reports: a FLUSH must not
// succeed over a commit that did not happen.
func TestOnCompleteErrorReachesWaitCompleted(t *testing.T) {
	boom := errors.New("commit failed")
	h := newHarness(t, func(c *Config) { c.OnComplete = func(uint64) error { return boom } })
	h.c.Register("p")
	id := h.trigger()
	h.c.Acknowledge(id, "p", nil)
	if err := h.wait(id); !errors.Is(err, boom) {
		t.Fatalf("WaitCompleted = %v, want the commit error", err)
	}
	if !IsCompleted(nil, h.dir, id) {
		t.Fatal("the marker must stay: recovery commits what the broadcast could not")
	}
}
