package agg

import (
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/expr"
	"github.com/clinksql/clinksql/exec/rowcodec"
	"github.com/clinksql/clinksql/internal/prefault"
	"github.com/clinksql/clinksql/sqlerr"
)

// GroupAggregate: GROUP BY keys without a window, and SELECT DISTINCT (keys and no aggregates).
//
// Contract:
//
//   - Input: one logical input, append-only or (InputUpdating) a changelog: +I and +U add a row to its group, -U
//     and -D take one out. The planner projects first, so keys, aggregate arguments and FILTER conditions are plain
//     columns. An append-only input receiving -U or -D fails the operator. A retraction reaching a group that holds
//     no row (a changelog inconsistent upstream) is ignored, as Flink does, and counted in TaskContext.Errors.
//   - Output: the key columns (names and types of the input), then one column per aggregate with the window
//     aggregate's result types and names (window.go), as a changelog computed per input batch (Flink's
//     mini-batch): for each group the batch touched, in the order of first touch, its result before the batch is
//     compared with its result after it: absent -> present is +I new, present -> absent is -D old, a changed
//     result is -U old then +U new, an unchanged one emits nothing. A group exists while it holds at least one row
//     (its row count, independent of the aggregates and their FILTERs); a global aggregate (no keys) is one group
//     that always exists: it emits its row over no rows (COUNT 0, SUM NULL) at Start, before any input (not
//     again after a restore), and keeps a row when every row is retracted again. So DISTINCT over an append-only
//     input emits only +I. An output batch whose rows are all +I carries nil Kinds.
//   - Aggregates: COUNT, COUNT(*), COUNT(DISTINCT), SUM, AVG, MIN, MAX with FILTER (WHERE c) (a row feeds the
//     aggregate only where c is TRUE), all retractable: SUM and AVG keep the count of non-NULL values (none: NULL);
//     COUNT(DISTINCT) a count per distinct value; MIN/MAX over a changelog the multiset of values with their counts
//     (over an append-only input only the extreme). SUM(int) is summed in 128 bits and fails with 22003 when the
//     result leaves BIGINT; decimal results beyond 38 digits fail with 22003. Float sums count NaN and infinities
//     apart, so retracting them restores the finite sum.
//   - Keys: hashable types (exec.HashKeys); NULLs group together. A row's key group is state.KeyGroupOf(hash,
//     MaxKeyGroups), the hash exchange's; a row of a key group the subtask does not own fails the operator. With
//     no keys every row is in key group 0 (the planner runs it at parallelism 1).
//   - State: see group_op.go. Watermarks pass through (OnWatermark does nothing).

// GroupAggConfig is GROUP BY without a window (and SELECT DISTINCT: keys and no aggregates). Its result is a
// changelog: a group's first result is +I, a change is -U old then +U new, a group whose last row was retracted
// is -D.
type GroupAggConfig struct {
	Keys []int
	// Aggs: AggCount, AggCountStar, AggCountDistinct, AggSum, AggMin, AggMax, AggAvg, each with an optional
	// Filter column, as in the window aggregate.
	Aggs []AggSpec
	// InputUpdating says whether the input is a changelog; an append-only input receiving a retraction fails the
	// operator.
	InputUpdating bool
	// Mode is what a float SUM or AVG that overflows does (aggOverflow): NULL and counted, or 22003.
	Mode expr.ErrorMode
}

// defaultMaxGroups bounds the operator's working set, each subtask its share (exec.WorkingSetShare): above it, a
// barrier evicts the groups that were not touched since the previous barrier (they are in the state backend,
// written back just before) and, if that is not enough, all of them. 512k groups rather than 1M: over 50M new keys
// (BenchmarkGroupAggLargeState) the halved working set gave 1.77-1.83M rows/s, a peak RSS of 1314-1401 MB and a
// checkpoint p99 of 1.1-1.4 s, against 1.60-1.70M, 1466-1509 MB and 1.5-2.4 s (two runs each, alternated).
const defaultMaxGroups = 1 << 19

// minGroupsShare is the least working set a subtask gets of defaultMaxGroups at a high parallelism
// (exec.WorkingSetShare).
const minGroupsShare = 4096

// groupPlan is the validated, immutable part of the operator, shared by its subtasks.
type groupPlan struct {
	cfg     GroupAggConfig
	in, out *arrow.Schema
	keyEnc  rowcodec.Encoding
	// resEnc decodes a group's result bytes (one key-column value per aggregate) into the output builders.
	resEnc    rowcodec.Encoding
	aggs      []aggKind
	maxGroups int
}

// NewGroupAggregate validates cfg against the input schema and returns the operator factory and the output schema:
// the key columns, then one column per aggregate with the window aggregate's result types. Errors are sqlerr
// errors: 42883 for an aggregate over a type it does not take, 0A000 for a key type that cannot be grouped, 42804
// for a FILTER that is not boolean, XX000 for a malformed config (a planner bug).
func NewGroupAggregate(cfg GroupAggConfig, in *arrow.Schema) (func(subtask int) exec.Operator, *arrow.Schema, error) {
	p, err := planGroupAgg(cfg, in)
	if err != nil {
		return nil, nil, err
	}
	return func(int) exec.Operator { return newGroupAgg(p) }, p.out, nil
}

func groupInternalf(format string, args ...any) error {
	return sqlerr.New(sqlerr.InternalError, sqlerr.NoPos, "group aggregate: "+format, args...)
}

func planGroupAgg(cfg GroupAggConfig, in *arrow.Schema) (*groupPlan, error) {
	if len(cfg.Keys) == 0 && len(cfg.Aggs) == 0 {
		return nil, groupInternalf("neither keys nor aggregates")
	}
	keyTypes, fields, err := planKeys(in, cfg.Keys, "key", "group by", groupInternalf)
	if err != nil {
		return nil, err
	}
	p := &groupPlan{cfg: cfg, in: in, keyEnc: rowcodec.NewKeyEncoding(keyTypes), maxGroups: defaultMaxGroups}
	aggs, aggFields, err := planAggs(in, cfg.Aggs, groupInternalf)
	if err != nil {
		return nil, err
	}
	var resTypes []arrow.DataType
	for _, k := range aggs {
		resTypes = append(resTypes, k.out)
	}
	p.aggs = aggs
	p.resEnc = rowcodec.Encoding{Types: resTypes, Mode: rowcodec.KeyBytes}
	p.out = arrow.NewSchema(append(fields, aggFields...), nil)
	return p, nil
}

// intTable maps the group aggregate's int64 keys to group ids: open addressing with linear probing, a key and its
// group side by side in one 16-byte slot (four to a cache line), so that a lookup costs one cache miss where a Go
// map's costs a control word and a slot. Deletes shift the probe chain back rather than leaving tombstones, so
// misses do not slow down as groups come and go. prefetch lets a batch start the misses of all its keys before
// looking any of them up.
type intTable struct {
	slots []groupSlot
	mask  uint64
	shift uint8
	n     int
}

type groupSlot struct {
	k int64
	g int32 // group id + 1; 0: empty
}

const intTableMinSlots = 1 << 10

func newIntTable(capacity int) *intTable {
	t := &intTable{}
	t.init(capacity)
	return t
}

func (t *intTable) init(capacity int) {
	size := intTableMinSlots
	for size*3/4 < capacity {
		size *= 2
	}
	t.slots = prefault.Slice(make([]groupSlot, size))
	t.mask = uint64(size - 1)
	t.shift = uint8(64 - bitsLen(uint64(size)-1))
	t.n = 0
}

func bitsLen(x uint64) int {
	n := 0
	for x != 0 {
		x >>= 1
		n++
	}
	return n
}

func (t *intTable) home(k int64) uint64 { return (uint64(k) * 0x9E3779B97F4A7C15) >> t.shift }

func (t *intTable) get(k int64) (int32, bool) {
	for i := t.home(k); ; i = (i + 1) & t.mask {
		s := &t.slots[i]
		if s.g == 0 {
			return 0, false
		}
		if s.k == k {
			return s.g - 1, true
		}
	}
}

// set maps k to g (k must not be in the table).
func (t *intTable) set(k int64, g int32) {
	if (t.n+1)*4 > len(t.slots)*3 {
		t.grow()
	}
	i := t.home(k)
	for t.slots[i].g != 0 {
		if t.slots[i].k == k {
			t.slots[i].g = g + 1
			return
		}
		i = (i + 1) & t.mask
	}
	t.slots[i] = groupSlot{k: k, g: g + 1}
	t.n++
}

func (t *intTable) grow() {
	old := t.slots
	t.init(len(old)) // twice the slots: len(old) > 3/4 of len(old)
	for _, s := range old {
		if s.g != 0 {
			i := t.home(s.k)
			for t.slots[i].g != 0 {
				i = (i + 1) & t.mask
			}
			t.slots[i] = s
			t.n++
		}
	}
}

// delete removes k; a nil table holds nothing (evict drops the table before freeing the groups).
func (t *intTable) delete(k int64) {
	if t == nil {
		return
	}
	i := t.home(k)
	for {
		s := &t.slots[i]
		if s.g == 0 {
			return
		}
		if s.k == k {
			break
		}
		i = (i + 1) & t.mask
	}
	// Backward shift: move up every later entry of the chain whose home is not between the hole and it.
	for j := (i + 1) & t.mask; t.slots[j].g != 0; j = (j + 1) & t.mask {
		h := t.home(t.slots[j].k)
		if (j-h)&t.mask >= (j-i)&t.mask {
			t.slots[i] = t.slots[j]
			i = j
		}
	}
	t.slots[i] = groupSlot{}
	t.n--
}

// prefetch touches the home slot of every key, so that their cache misses overlap (the loads do not depend on
// one another); the lookups that follow find the slots in cache. It returns a value only to keep the loads.
func (t *intTable) prefetch(ks []int64) int64 {
	var x int64
	for _, k := range ks {
		x += t.slots[t.home(k)].k
	}
	return x
}

// prefetchChunk is how many keys a group lookup prefetches at a time (their slots stay in L1/L2 until looked up).
const prefetchChunk = 256

// prefetchSink keeps the prefetches' loads from being optimized away (atomically: subtasks run concurrently).
var prefetchSink atomic.Int64
