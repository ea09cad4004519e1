package connectors

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/state"
)

// What the sources share: their task context and offsets.

// RestoreOffset decodes an offset for Open to restore: *restored becomes it, or stays as it was on an error.
func RestoreOffset[T any](restored **T, b []byte, decode func([]byte) (T, error)) error {
	o, err := decode(b)
	if err != nil {
		return err
	}
	*restored = &o
	return nil
}

// CheckSubtask reports a task context whose subtask is not one of its parallelism's; who starts the message.
func CheckSubtask(who string, ctx *exec.TaskContext) error {
	if ctx.Parallelism < 1 || ctx.Subtask < 0 || ctx.Subtask >= ctx.Parallelism {
		return fmt.Errorf("%s: subtask %d of %d", who, ctx.Subtask, ctx.Parallelism)
	}
	return nil
}

// TaskFS is the task's file system, the operating system's when it has none.
func TaskFS(ctx *exec.TaskContext) state.FS {
	if ctx.FS == nil {
		return state.OS
	}
	return ctx.FS
}

// TaskAlloc is the task's allocator, memory.DefaultAllocator when it has none.
func TaskAlloc(ctx *exec.TaskContext) memory.Allocator {
	if ctx.Alloc == nil {
		return memory.DefaultAllocator
	}
	return ctx.Alloc
}

// CheckOffsetSubtask refuses an offset of subtask sub0 of par0 restored into subtask sub of par.
func CheckOffsetSubtask(who string, sub0, par0, sub, par int) error {
	if sub0 != sub || par0 != par {
		return fmt.Errorf("%s: offset of subtask %d of %d restored into subtask %d of %d: "+
			"restore at the same parallelism", who, sub0, par0, sub, par)
	}
	return nil
}

// FilterRows is rec with the rows whose keep is false dropped (a source dropping the rows it could not read).
func FilterRows(alloc memory.Allocator, rec arrow.RecordBatch, keep []bool) (arrow.RecordBatch, error) {
	mb := array.NewBooleanBuilder(alloc)
	defer mb.Release()
	mb.AppendValues(keep, nil)
	mask := mb.NewArray()
	defer mask.Release()
	return compute.FilterRecordBatch(compute.WithAllocator(context.Background(), alloc), rec, mask, compute.DefaultFilterOptions())
}
