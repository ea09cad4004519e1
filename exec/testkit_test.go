package exec_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/state"
)

// tsType is TIMESTAMP(6) without time zone.
var tsType = &arrow.TimestampType{Unit: arrow.Microsecond}

// The test pipelines' rows: (key, ts, val). ts is microseconds since the epoch.
var eventSchema = arrow.NewSchema([]arrow.Field{
	{Name: "key", Type: arrow.PrimitiveTypes.Int64},
	{Name: "ts", Type: tsType},
	{Name: "val", Type: arrow.PrimitiveTypes.Int64},
}, nil)

// Window results: (key, window_start, count, sum).
var resultSchema = arrow.NewSchema([]arrow.Field{
	{Name: "key", Type: arrow.PrimitiveTypes.Int64},
	{Name: "window_start", Type: tsType},
	{Name: "cnt", Type: arrow.PrimitiveTypes.Int64},
	{Name: "sum", Type: arrow.PrimitiveTypes.Int64},
}, nil)

// event is one generated row; rows of a seqSource are a pure function of (seed, subtask, index).
type event struct{ key, ts, val int64 }

func mix(x uint64) uint64 { return state.MixInt64(x + 0x9e3779b97f4a7c15) }

type seqConfig struct {
	name      string
	seed      uint64
	rows      int // per subtask
	batchRows int
	keys      int
	tsStep    int64 // microseconds between consecutive rows of one subtask
	// gate, when set, must yield a token before each batch (a test holds the source behind it).
	gate chan struct{}
	// snapshotted, when set, is told every offset the runtime staged.
	snapshotted func(sub int, next int)
}

func (c seqConfig) event(sub, i int) event {
	h := mix(c.seed ^ uint64(sub)<<40 ^ uint64(i))
	return event{key: int64(h % uint64(c.keys)), ts: int64(i) * c.tsStep, val: int64(sub)*1_000_000 + int64(i)}
}

// all returns every row all subtasks produce.
func (c seqConfig) all(parallelism int) []event {
	var out []event
	for sub := 0; sub < parallelism; sub++ {
		for i := 0; i < c.rows; i++ {
			out = append(out, c.event(sub, i))
		}
	}
	return out
}

// seqSource produces c.rows rows in batches; its offset is the next row index.
type seqSource struct {
	c     seqConfig
	sub   int
	next  int
	alloc memory.Allocator
}

func newSeqSource(c seqConfig) func(int) exec.Source {
	return func(sub int) exec.Source { return &seqSource{c: c, sub: sub} }
}

func (s *seqSource) RestoreOffset(b []byte) error {
	if len(b) != 8 {
		return fmt.Errorf("bad offset %x", b)
	}
	s.next = int(binary.BigEndian.Uint64(b))
	return nil
}

func (s *seqSource) Open(ctx *exec.TaskContext) error { s.alloc = ctx.Alloc; return nil }

func (s *seqSource) Produce(ctx context.Context) (exec.SourceResult, error) {
	if s.next >= s.c.rows {
		return exec.SourceResult{Status: exec.Finished}, nil
	}
	if s.c.gate != nil {
		select {
		case <-s.c.gate:
		case <-ctx.Done():
			return exec.SourceResult{}, ctx.Err()
		}
	}
	n := min(s.c.batchRows, s.c.rows-s.next)
	events := make([]event, n)
	for i := range events {
		events[i] = s.c.event(s.sub, s.next+i)
	}
	s.next += n
	return exec.SourceResult{Status: exec.Produced, Batch: exec.Batch{Rec: eventRecord(s.alloc, events)},
		WM: events[n-1].ts}, nil
}

// eventRecord builds a batch of events (eventSchema).
func eventRecord(alloc memory.Allocator, events []event) arrow.RecordBatch {
	kb := array.NewInt64Builder(alloc)
	tb := array.NewTimestampBuilder(alloc, tsType)
	vb := array.NewInt64Builder(alloc)
	defer kb.Release()
	defer tb.Release()
	defer vb.Release()
	for _, e := range events {
		kb.Append(e.key)
		tb.Append(arrow.Timestamp(e.ts))
		vb.Append(e.val)
	}
	cols := []arrow.Array{kb.NewArray(), tb.NewArray(), vb.NewArray()}
	rec := array.NewRecordBatch(eventSchema, cols, int64(len(events)))
	for _, c := range cols {
		c.Release()
	}
	return rec
}

func (s *seqSource) SnapshotOffset() ([]byte, error) {
	if s.c.snapshotted != nil {
		s.c.snapshotted(s.sub, s.next)
	}
	return binary.BigEndian.AppendUint64(nil, uint64(s.next)), nil
}

func (s *seqSource) Close() error { return nil }

// windowKey identifies one tumbling window of one key.
type windowKey struct{ key, start int64 }

type windowAcc struct{ cnt, sum int64 }

// windowSum is a keyed tumbling-window COUNT/SUM over any number of inputs of eventSchema: the keyed aggregate of
// the runtime's tests. Its working set lives in Go maps (windows by start, then by key); changed windows are
// written to the state backend at each barrier (the write-back discipline), and a restore rebuilds the maps with
// a Scan.
type windowSum struct {
	size    int64
	ctx     *exec.TaskContext
	windows map[int64]map[int64]*windowAcc // start -> key -> accumulator
	dirty   map[windowKey]bool
	wm      int64
	late    int64
	// slow, when set, is called for every batch of the given input before it is processed.
	slowInput int
	slow      func()
}

func newWindowSum(size int64) func(int) exec.Operator {
	return func(int) exec.Operator { return &windowSum{size: size} }
}

const windowState = 1

var keyWindowWM = state.OperatorKey("windowsum/wm")

func encodeWindowKey(k windowKey) []byte {
	b := binary.BigEndian.AppendUint64(make([]byte, 0, 16), uint64(k.key))
	return binary.BigEndian.AppendUint64(b, uint64(k.start))
}

func (w *windowSum) keyGroup(key int64) int {
	return state.KeyGroupOf(state.CombineHash(0, state.MixInt64(uint64(key))), w.ctx.MaxKeyGroups)
}

func (w *windowSum) acc(k windowKey) *windowAcc {
	win := w.windows[k.start]
	if win == nil {
		win = map[int64]*windowAcc{}
		w.windows[k.start] = win
	}
	a := win[k.key]
	if a == nil {
		a = &windowAcc{}
		win[k.key] = a
	}
	return a
}

func (w *windowSum) Open(ctx *exec.TaskContext) error {
	w.ctx = ctx
	w.windows = map[int64]map[int64]*windowAcc{}
	w.dirty = map[windowKey]bool{}
	w.wm = exec.MinWatermark
	if v, ok, err := ctx.State.Get(keyWindowWM); err != nil {
		return err
	} else if ok {
		w.wm = int64(binary.BigEndian.Uint64(v))
	}
	for kg := ctx.KeyGroups.Start; kg < ctx.KeyGroups.End; kg++ {
		prefix := state.KeyedKey(kg, windowState, nil)
		err := ctx.State.Scan(prefix, func(k, v []byte) error {
			uk := k[len(prefix):]
			a := w.acc(windowKey{int64(binary.BigEndian.Uint64(uk)), int64(binary.BigEndian.Uint64(uk[8:]))})
			a.cnt, a.sum = int64(binary.BigEndian.Uint64(v)), int64(binary.BigEndian.Uint64(v[8:]))
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func (w *windowSum) Process(input int, b exec.Batch, out exec.Emitter) error {
	defer b.Release()
	if w.slow != nil && input == w.slowInput {
		w.slow()
	}
	keys := b.Rec.Column(0).(*array.Int64).Int64Values()
	tss := b.Rec.Column(1).(*array.Timestamp).TimestampValues()
	vals := b.Rec.Column(2).(*array.Int64).Int64Values()
	for i := range keys {
		start := int64(tss[i]) - int64(tss[i])%w.size
		if start+w.size <= w.wm {
			w.late++
			continue
		}
		if kg := w.keyGroup(keys[i]); !w.ctx.KeyGroups.Contains(kg) {
			return fmt.Errorf("key %d (group %d) reached subtask %d owning %v", keys[i], kg, w.ctx.Subtask, w.ctx.KeyGroups)
		}
		k := windowKey{keys[i], start}
		a := w.acc(k)
		a.cnt++
		a.sum += vals[i]
		w.dirty[k] = true
	}
	return nil
}

func (w *windowSum) OnWatermark(wm int64, out exec.Emitter) error {
	w.wm = wm
	var starts []int64
	for start := range w.windows {
		if start+w.size <= wm {
			starts = append(starts, start)
		}
	}
	if len(starts) == 0 {
		return nil
	}
	slices.Sort(starts)
	rb := newResultBuilder(w.ctx.Alloc)
	for _, start := range starts {
		win := w.windows[start]
		keys := make([]int64, 0, len(win))
		for k := range win {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, key := range keys {
			a := win[key]
			rb.append(key, arrow.Timestamp(start), a.cnt, a.sum)
			w.dirty[windowKey{key, start}] = true
		}
		delete(w.windows, start)
	}
	return out.Emit(rb.batch())
}

func (w *windowSum) OnBarrier(uint64) error {
	for k := range w.dirty {
		key := state.KeyedKey(w.keyGroup(k.key), windowState, encodeWindowKey(k))
		if a := w.windows[k.start][k.key]; a != nil {
			v := binary.BigEndian.AppendUint64(make([]byte, 0, 16), uint64(a.cnt))
			w.ctx.State.Put(key, binary.BigEndian.AppendUint64(v, uint64(a.sum)))
		} else {
			w.ctx.State.Delete(key)
		}
	}
	clear(w.dirty)
	w.ctx.State.Put(keyWindowWM, binary.BigEndian.AppendUint64(nil, uint64(w.wm)))
	return nil
}

func (w *windowSum) Close() error { return nil }

// resultBuilder collects rows of resultSchema into one batch.
type resultBuilder struct {
	key, cnt, sum *array.Int64Builder
	start         *array.TimestampBuilder
	n             int
}

func newResultBuilder(alloc memory.Allocator) *resultBuilder {
	return &resultBuilder{key: array.NewInt64Builder(alloc), start: array.NewTimestampBuilder(alloc, tsType),
		cnt: array.NewInt64Builder(alloc), sum: array.NewInt64Builder(alloc)}
}

func (r *resultBuilder) append(key int64, start arrow.Timestamp, cnt, sum int64) {
	r.key.Append(key)
	r.start.Append(start)
	r.cnt.Append(cnt)
	r.sum.Append(sum)
	r.n++
}

// batch returns the rows appended and releases the builders.
func (r *resultBuilder) batch() exec.Batch {
	cols := []arrow.Array{r.key.NewArray(), r.start.NewArray(), r.cnt.NewArray(), r.sum.NewArray()}
	rec := array.NewRecordBatch(resultSchema, cols, int64(r.n))
	for _, c := range cols {
		c.Release()
	}
	r.key.Release()
	r.start.Release()
	r.cnt.Release()
	r.sum.Release()
	return exec.Batch{Rec: rec}
}

// expectedWindows computes the window results of events directly: the reference the pipelines are checked against.
func expectedWindows(events []event, size int64) []string {
	accs := map[windowKey]*windowAcc{}
	for _, e := range events {
		k := windowKey{e.key, e.ts - e.ts%size}
		a := accs[k]
		if a == nil {
			a = &windowAcc{}
			accs[k] = a
		}
		a.cnt++
		a.sum += e.val
	}
	var out []string
	for k, a := range accs {
		out = append(out, fmt.Sprintf("%d|%d|%d|%d", k.key, k.start, a.cnt, a.sum))
	}
	sort.Strings(out)
	return out
}

// resultRows renders window-result batches as sorted "key|start|cnt|sum" lines.
func resultRows(recs []arrow.RecordBatch) []string {
	var out []string
	for _, rec := range recs {
		k := rec.Column(0).(*array.Int64)
		s := rec.Column(1).(*array.Timestamp)
		c := rec.Column(2).(*array.Int64)
		u := rec.Column(3).(*array.Int64)
		for i := 0; i < int(rec.NumRows()); i++ {
			out = append(out, fmt.Sprintf("%d|%d|%d|%d", k.Value(i), int64(s.Value(i)), c.Value(i), u.Value(i)))
		}
	}
	sort.Strings(out)
	return out
}

// gate holds an operator's input 1 (see gatedOp): each of its batches waits for a token, after saying so on
// entered, so a test knows where the operator stands and moves it on one batch at a time.
type gate struct {
	tokens, entered chan struct{}
	snapshotted     atomic.Uint64 // the last checkpoint the operator wrote its state for
}

func newGate() *gate { return &gate{tokens: make(chan struct{}), entered: make(chan struct{})} }

// wrap puts the input 1 of newOp's subtasks behind g; with a nil g they stay plain.
func (g *gate) wrap(newOp func(int) exec.Operator) func(int) exec.Operator {
	if g == nil {
		return newOp
	}
	return func(sub int) exec.Operator { return &gatedOp{Operator: newOp(sub), gate: g} }
}

// pass lets n batches through the gate and returns once the operator waits at it again.
func (g *gate) pass(n int) {
	for range n {
		g.tokens <- struct{}{}
		<-g.entered
	}
}

// release lets every gated batch through from now on.
func (g *gate) release() {
	go func() {
		for range g.entered {
		}
	}()
	close(g.tokens)
}

// gatedOp is an operator with its input 1 behind a gate. It keeps the operator's watermark hold.
type gatedOp struct {
	exec.Operator
	gate *gate
}

func (o *gatedOp) Process(input int, b exec.Batch, out exec.Emitter) error {
	if input == 1 {
		o.gate.entered <- struct{}{}
		<-o.gate.tokens
	}
	return o.Operator.Process(input, b, out)
}

func (o *gatedOp) OnBarrier(id uint64) error {
	o.gate.snapshotted.Store(id)
	return o.Operator.OnBarrier(id)
}

func (o *gatedOp) OutputWatermark(wm int64) int64 { return heldWatermark(o.Operator, wm) }

// heldWatermark is the watermark op forwards for input watermark wm: for wrappers, which must keep a join's hold.
func heldWatermark(op exec.Operator, wm int64) int64 {
	if h, ok := op.(exec.WatermarkHolder); ok {
		return h.OutputWatermark(wm)
	}
	return wm
}

// txnStore is the "external system" behind memSink: what a sink staged and committed survives the job's
// incarnations, as files on a disk would.
type txnStore struct {
	mu        sync.Mutex
	staged    map[string][]string // "<sub>/<id>" -> rows
	committed map[string][]string
	commits   int
}

func newTxnStore() *txnStore {
	return &txnStore{staged: map[string][]string{}, committed: map[string][]string{}}
}

// rows returns every committed row, sorted.
func (s *txnStore) rows() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, rs := range s.committed {
		out = append(out, rs...)
	}
	sort.Strings(out)
	return out
}

// memSink is a two-phase-commit sink over a txnStore, for runtime tests.
type memSink struct {
	store *txnStore
	sub   int
	open  []string
}

func newMemSink(store *txnStore) func(int) exec.Sink {
	return func(sub int) exec.Sink { return &memSink{store: store, sub: sub} }
}

func txnName(sub int, id uint64) string { return fmt.Sprintf("%d/%d", sub, id) }

// parseTxnName is the inverse of txnName.
func parseTxnName(name string) (sub int, id uint64) {
	fmt.Sscanf(name, "%d/%d", &sub, &id)
	return sub, id
}

func (m *memSink) Open(ctx *exec.TaskContext) error {
	m.store.mu.Lock()
	defer m.store.mu.Unlock()
	for name, rows := range m.store.staged {
		sub, id := parseTxnName(name)
		if sub != m.sub {
			continue
		}
		if ctx.IsCompleted(id) {
			m.store.committed[name] = rows
		}
		delete(m.store.staged, name)
	}
	return nil
}

func (m *memSink) Write(b exec.Batch) error {
	m.open = append(m.open, resultRows([]arrow.RecordBatch{b.Rec})...)
	b.Release()
	return nil
}

func (m *memSink) PreCommit(id uint64) error {
	m.store.mu.Lock()
	defer m.store.mu.Unlock()
	m.store.staged[txnName(m.sub, id)] = m.open
	m.open = nil
	return nil
}

func (m *memSink) Commit(id uint64) error {
	m.store.mu.Lock()
	defer m.store.mu.Unlock()
	for name, rows := range m.store.staged {
		sub, sid := parseTxnName(name)
		if sub == m.sub && sid <= id {
			if _, dup := m.store.committed[name]; dup {
				panic("transaction committed twice: " + name)
			}
			m.store.committed[name] = rows
			m.store.commits++
			delete(m.store.staged, name)
		}
	}
	return nil
}

func (m *memSink) Abort(id uint64) error {
	m.store.mu.Lock()
	defer m.store.mu.Unlock()
	delete(m.store.staged, txnName(m.sub, id))
	return nil
}

func (m *memSink) Close() error { return nil }
