package operators

import (
	"cmp"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/expr"
	"github.com/clinksql/clinksql/exec/textform"
)

// Row is one row a CollectSink committed, with Go values: nil for NULL, bool, int64 (every signed integer),
// uint64 (unsigned), float32 (REAL), float64 (DOUBLE), string, []byte, time.Time in UTC (TIMESTAMP, and DATE at
// midnight), and the Postgres text form as a string for DECIMAL and INTERVAL.
type Row struct {
	Kind   exec.RowKind
	Values []any
}

func (r Row) String() string { return fmt.Sprintf("%s%v", r.Kind, r.Values) }

// Collector holds what the CollectSinks of a test committed. It outlives sink instances, like the files of a file
// sink outlive a crash: staged (pre-committed) transactions stay in it, so a restarted job's sinks can recover
// them at Open exactly as the file sinks do. Safe for concurrent use.
type Collector struct {
	mu        sync.Mutex
	staged    map[collectKey][]Row
	committed map[uint64][]Row
	commits   int // transactions committed, for tests of idempotence
}

type collectKey struct {
	op  string
	sub int
	id  uint64
}

// NewCollector returns an empty collector.
func NewCollector() *Collector {
	return &Collector{staged: map[collectKey][]Row{}, committed: map[uint64][]Row{}}
}

// Rows returns every committed row, by checkpoint id, then in commit order.
func (c *Collector) Rows() []Row {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Row
	for _, id := range c.checkpointsLocked() {
		out = append(out, c.committed[id]...)
	}
	return out
}

// RowsAt returns the rows committed under checkpoint id.
func (c *Collector) RowsAt(id uint64) []Row {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.committed[id])
}

// Checkpoints returns the ids under which rows were committed, ascending.
func (c *Collector) Checkpoints() []uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.checkpointsLocked()
}

func (c *Collector) checkpointsLocked() []uint64 {
	ids := make([]uint64, 0, len(c.committed))
	for id := range c.committed {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Staged returns how many transactions are pre-committed and neither committed nor aborted.
func (c *Collector) Staged() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.staged)
}

// Commits returns how many transactions have been committed.
func (c *Collector) Commits() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.commits
}

// settleLocked resolves the staged transactions match selects, in checkpoint order: committed when keep says so,
// dropped otherwise.
func (c *Collector) settleLocked(match func(collectKey) bool, keep func(collectKey) bool) {
	keys := make([]collectKey, 0)
	for k := range c.staged {
		if match(k) {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b collectKey) int { return cmp.Or(cmp.Compare(a.id, b.id), a.sub-b.sub) })
	for _, k := range keys {
		if keep(k) {
			c.committed[k.id] = append(c.committed[k.id], c.staged[k]...)
			c.commits++
		}
		delete(c.staged, k)
	}
}

// CollectSink is a two-phase sink for tests that keeps rows in a Collector: Write adds to the open transaction,
// PreCommit seals it under the checkpoint id, Commit(id) moves every sealed transaction <= id to the committed
// rows, Abort drops one. It accepts every row kind (so updating queries can be tested) and converts values to Go
// values, boxing each one: a test tool, not a production path.
type CollectSink struct {
	c   *Collector
	op  string
	sub int
	par int

	mu   sync.Mutex
	open []Row
}

// NewCollectSink returns a sink subtask collecting into c; make one per subtask and per incarnation.
func NewCollectSink(c *Collector) *CollectSink { return &CollectSink{c: c} }

// Open recovers the transactions an earlier incarnation of this subtask sealed: committed when their checkpoint
// completed, dropped otherwise. Subtask 0 also recovers subtasks beyond the current parallelism.
func (s *CollectSink) Open(ctx *exec.TaskContext) error {
	s.op, s.sub, s.par = ctx.Operator, ctx.Subtask, ctx.Parallelism
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	s.c.settleLocked(s.mine, func(k collectKey) bool { return ctx.IsCompleted != nil && ctx.IsCompleted(k.id) })
	return nil
}

func (s *CollectSink) mine(k collectKey) bool {
	return k.op == s.op && (k.sub == s.sub || s.sub == 0 && s.par > 0 && k.sub >= s.par)
}

func (s *CollectSink) Write(b exec.Batch) error {
	defer b.Release()
	rows, err := GoRows(b)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.open = append(s.open, rows...)
	s.mu.Unlock()
	return nil
}

func (s *CollectSink) PreCommit(id uint64) error {
	s.mu.Lock()
	rows := s.open
	s.open = nil
	s.mu.Unlock()
	if len(rows) == 0 {
		return nil
	}
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	k := collectKey{s.op, s.sub, id}
	if _, dup := s.c.staged[k]; dup {
		return fmt.Errorf("collect sink: checkpoint %d sealed twice by subtask %d", id, s.sub)
	}
	s.c.staged[k] = rows
	return nil
}

func (s *CollectSink) Commit(id uint64) error {
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	s.c.settleLocked(func(k collectKey) bool { return k.op == s.op && k.sub == s.sub && k.id <= id },
		func(collectKey) bool { return true })
	return nil
}

func (s *CollectSink) Abort(id uint64) error {
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	delete(s.c.staged, collectKey{s.op, s.sub, id})
	return nil
}

func (s *CollectSink) Close() error {
	s.mu.Lock()
	s.open = nil
	s.mu.Unlock()
	return nil
}

// GoRows converts a batch to rows of Go values (the Row form tests compare).
func GoRows(b exec.Batch) ([]Row, error) {
	n := b.Rows()
	if n == 0 {
		return nil, nil
	}
	rows := make([]Row, n)
	values := make([]any, n*int(b.Rec.NumCols()))
	for i := range rows {
		rows[i] = Row{Kind: b.Kind(i), Values: values[i*int(b.Rec.NumCols()) : (i+1)*int(b.Rec.NumCols()) : (i+1)*int(b.Rec.NumCols())]}
	}
	for c, arr := range b.Rec.Columns() {
		conv, err := goValueOf(arr)
		if err != nil {
			return nil, fmt.Errorf("collect sink: column %s: %w", b.Rec.ColumnName(c), err)
		}
		for i := range rows {
			if !arr.IsNull(i) {
				rows[i].Values[c] = conv(i)
			}
		}
	}
	return rows, nil
}

func goValueOf(arr arrow.Array) (func(i int) any, error) {
	switch a := arr.(type) {
	case *array.Null:
		return func(int) any { return nil }, nil
	case *array.Boolean:
		return func(i int) any { return a.Value(i) }, nil
	case *array.Int8:
		return func(i int) any { return int64(a.Value(i)) }, nil
	case *array.Int16:
		return func(i int) any { return int64(a.Value(i)) }, nil
	case *array.Int32:
		return func(i int) any { return int64(a.Value(i)) }, nil
	case *array.Int64:
		return func(i int) any { return a.Value(i) }, nil
	case *array.Uint8:
		return func(i int) any { return uint64(a.Value(i)) }, nil
	case *array.Uint16:
		return func(i int) any { return uint64(a.Value(i)) }, nil
	case *array.Uint32:
		return func(i int) any { return uint64(a.Value(i)) }, nil
	case *array.Uint64:
		return func(i int) any { return a.Value(i) }, nil
	case *array.Float32:
		return func(i int) any { return a.Value(i) }, nil
	case *array.Float64:
		return func(i int) any { return a.Value(i) }, nil
	case *array.String:
		return func(i int) any { return a.Value(i) }, nil
	case *array.LargeString:
		return func(i int) any { return a.Value(i) }, nil
	case *array.Binary:
		return func(i int) any { return slices.Clone(a.Value(i)) }, nil
	case *array.LargeBinary:
		return func(i int) any { return slices.Clone(a.Value(i)) }, nil
	case *array.Date32:
		return func(i int) any { return time.Unix(int64(a.Value(i))*86400, 0).UTC() }, nil
	case *array.Timestamp:
		toMicros := expr.TimeUnitToMicros(a.DataType().(*arrow.TimestampType).Unit)
		if a.DataType().(*arrow.TimestampType).Unit == arrow.Nanosecond {
			return func(i int) any { return time.Unix(0, int64(a.Value(i))).UTC() }, nil
		}
		return func(i int) any { return time.UnixMicro(toMicros(int64(a.Value(i)))).UTC() }, nil
	}
	// Everything else in its Postgres text form.
	tc, err := textform.NewColumn(arr)
	if err != nil {
		return nil, err
	}
	return func(i int) any { return string(tc.Append(nil, i)) }, nil
}
