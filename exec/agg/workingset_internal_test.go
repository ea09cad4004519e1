package agg

import (
	"testing"

	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/optest"
	"github.com/clinksql/clinksql/state"
)

// The group aggregate bounds its working set by its subtask's share of the operator's bound
// (exec.WorkingSetShare): half of it at parallelism 2.
func TestWorkingSetIsTheSubtasksShare(t *testing.T) {
	open := func(op exec.Operator, par int) {
		t.Helper()
		be, err := state.OpenMemory(state.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { be.Close() })
		ctx := &exec.TaskContext{State: be, Alloc: optest.CheckedAlloc(t), Parallelism: par, Subtask: 0,
			MaxKeyGroups: state.DefaultKeyGroups, KeyGroups: state.RangeOf(0, state.DefaultKeyGroups, par)}
		if err := op.Open(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { op.Close() })
	}
	gp, err := planGroupAgg(GroupAggConfig{Keys: []int{groupK}, Aggs: []AggSpec{groupSpec(AggCountStar, -1, -1)}}, groupEvents)
	if err != nil {
		t.Fatal(err)
	}
	for _, par := range []int{1, 2} {
		g := newGroupAgg(gp)
		open(g, par)
		if g.maxGroups != defaultMaxGroups/par {
			t.Errorf("parallelism %d: %d groups, want %d", par, g.maxGroups, defaultMaxGroups/par)
		}
	}
}
