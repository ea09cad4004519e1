package exec

import (
	"fmt"

	"github.com/clinksql/clinksql/state"
)

// CheckKeyGroups checks the key groups a keyed operator's subtask was given; what names the operator.
func CheckKeyGroups(ctx *TaskContext, what string) error {
	if ctx.MaxKeyGroups <= 0 || ctx.KeyGroups.End > ctx.MaxKeyGroups || ctx.KeyGroups.Start >= ctx.KeyGroups.End {
		return fmt.Errorf("%s: key groups %v of %d", what, ctx.KeyGroups, ctx.MaxKeyGroups)
	}
	return nil
}

// OwnedKeyGroup is the key group of a row whose keys hash (exec.HashKeys) to h. The subtask must own it: a row
// of another key group is a routing bug, which fails the operator.
func OwnedKeyGroup(ctx *TaskContext, h uint64, what string) (int, error) {
	kg := state.KeyGroupOf(h, ctx.MaxKeyGroups)
	if !ctx.KeyGroups.Contains(kg) {
		return 0, errKeyGroup(ctx, kg, what)
	}
	return kg, nil
}

func errKeyGroup(ctx *TaskContext, kg int, what string) error {
	return fmt.Errorf("%s: a row of key group %d reached subtask %d, which owns %v", what, kg, ctx.Subtask, ctx.KeyGroups)
}

// BatchKeyGroups gives the key groups of a batch's rows, hashing its key columns once, when the first row needs
// it (an operator that finds most rows' groups in memory never hashes).
// A batch a hash exchange partitioned carries the key groups the exchange routed its rows by, from the hash of the
// same key columns (Batch.KeyGroups): they are used as they are, so the keys are hashed once between the exchange
// and the operator, not twice.
type BatchKeyGroups struct {
	b      Batch // the current batch; zero between batches
	buf    []uint64
	hashes []uint64 // the current batch's, when it carries no key groups
	kgs    []uint16 // the current batch's own, when it does
	hashed bool
}

func (h *BatchKeyGroups) Start(b Batch) { h.b, h.hashed = b, false }

func (h *BatchKeyGroups) End() { h.b, h.hashes, h.kgs = Batch{}, nil, nil }

// Of is the key group Of row i, with keys in columns cols; the subtask must own it (OwnedKeyGroup).
func (h *BatchKeyGroups) Of(ctx *TaskContext, cols []int, i int, what string) (int, error) {
	if !h.hashed {
		h.hashes = nil
		if h.kgs = h.b.KeyGroups(cols); h.kgs == nil {
			var err error
			if h.buf, err = HashKeys(h.b.Rec, cols, h.buf); err != nil {
				return 0, err
			}
			h.hashes = h.buf
		}
		h.hashed = true
	}
	if h.kgs != nil {
		kg := int(h.kgs[i])
		if !ctx.KeyGroups.Contains(kg) || kg >= ctx.MaxKeyGroups {
			return 0, errKeyGroup(ctx, kg, what)
		}
		return kg, nil
	}
	return OwnedKeyGroup(ctx, h.hashes[i], what)
}

// WorkingSetShare is a keyed subtask's share of its operator's working set bound (the groups, partitions or bytes
// it keeps in memory before it evicts to the state backend): the bound divided by the parallelism, and not below
// floor (nor above the bound). The bound is the operator's, not each subtask's, so that raising the parallelism
// on a machine does not multiply what the job holds in memory: with a bound per subtask, Nexmark q17 at
// parallelism 2 kept twice the groups in memory (RSS 1.55 GB against 1.05 GB at parallelism 1), and faulting in
// and collecting that heap cost more than the evictions it saved (6.7-6.9 CPU-s against 6.2 at parallelism 1; with
// shares, 6.1-6.2). The group aggregate takes its share; the Top-N and the regular join keep a bound per subtask
// for now: halved at parallelism 2, they evicted more and cost 3-5% more CPU (q18, q4) for the memory they saved.
func WorkingSetShare(ctx *TaskContext, bound, floor int) int {
	share := bound / max(ctx.Parallelism, 1)
	if share < floor {
		share = min(bound, floor)
	}
	return share
}
