package planner

import (
	"testing"

	"github.com/clinksql/clinksql/catalog"
)

// pins: a statement takes one snapshot of a system relation however often it reads it, so that a self-join sees
// the same rows on both sides (each snapshot is of a moving engine).
func TestSystemRelationOneSnapshotPerStatement(t *testing.T) {
	e := newTestEnv(t)
	calls := 0
	e.system = func(name string) (*SystemTable, bool) {
		if name != "jobs" {
			return nil, false
		}
		calls++
		typ := catalog.Type{Name: "BIGINT", Precision: -1, Scale: -1}
		return &SystemTable{Columns: []catalog.Column{{Name: "n", Type: typ}}, Rows: [][]any{{int64(calls)}}}, true
	}
	if _, err := e.explain(`SELECT a.n FROM clink_catalog.jobs a JOIN clink_catalog.jobs b ON a.n = b.n`); err != nil {
		t.Fatal(err)
	}
	if calls != 1 {
		t.Fatalf("clink_catalog.jobs read twice in one statement took %d snapshots, want 1", calls)
	}
}
