package exec

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

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
type BatchKeyGroups struct {
	rec    arrow.RecordBatch // the current batch; nil between batches
	hashes []uint64
	hashed bool
}

func (h *BatchKeyGroups) Start(rec arrow.RecordBatch) { h.rec, h.hashed = rec, false }

func (h *BatchKeyGroups) End() { h.rec = nil }

// Of is the key group Of row i, with keys in columns cols; the subtask must own it (OwnedKeyGroup).
func (h *BatchKeyGroups) Of(ctx *TaskContext, cols []int, i int, what string) (int, error) {
	if !h.hashed {
		var err error
		if h.hashes, err = HashKeys(h.rec, cols, h.hashes); err != nil {
			return 0, err
		}
		h.hashed = true
	}
	return OwnedKeyGroup(ctx, h.hashes[i], what)
}
