package crash

import (
	"strings"
	"testing"
)

// pins: the comparison counts a row missing from the output as lost, one more copy than expected as duplicated
// (naming the files that hold the copies), and a row nobody expected as unexpected.
func TestDiffReports(t *testing.T) {
	want := []string{"a", "b", "b", "c"}
	if d := diff(&committed{rows: []string{"c", "b", "a", "b"}, files: []string{"1", "1", "2", "2"}, n: 2}, want); d != "" {
		t.Fatalf("equal multisets reported: %s", d)
	}
	got := &committed{rows: []string{"a", "a", "b", "x"}, files: []string{"f-1", "f-2", "f-2", "f-3"}, n: 3}
	d := diff(got, want)
	for _, s := range []string{"4 rows committed in 3 files, 4 expected: 2 lost, 1 duplicated, 1 unexpected",
		"lost: b", "lost: c", "duplicated: a (x2, in f-1 f-2)", "unexpected: x (in f-3)"} {
		if !strings.Contains(d, s) {
			t.Errorf("report lacks %q:\n%s", s, d)
		}
	}
}

// pins: the Go model of the generator's random columns and of the Postgres text form of timestamps.
func TestModelForms(t *testing.T) {
	for ms, want := range map[int64]string{
		epoch.UnixMilli():        "2026-01-01 00:00:00",
		epoch.UnixMilli() + 20:   "2026-01-01 00:00:00.02",
		epoch.UnixMilli() + 1500: "2026-01-01 00:00:01.5",
		epoch.UnixMilli() + 123:  "2026-01-01 00:00:00.123",
	} {
		if got := pgTimestamp(ms); got != want {
			t.Errorf("pgTimestamp(%d) = %q, want %q", ms, got, want)
		}
	}
	key := columnKey(7, "v")
	for r := uint64(0); r < 1000; r++ {
		if v := randomInt(key, r, -3, 3); v < -3 || v > 3 {
			t.Fatalf("row %d: %d outside [-3, 3]", r, v)
		}
		if s := randomString(key, r, 11); len(s) != 11 || strings.Trim(s, alphanumeric) != "" {
			t.Fatalf("row %d: %q", r, s)
		}
	}
}

// Applying a changelog leaves the live rows; a change applied twice (a transaction committed twice) shows as a row
// retracted more often than it was added, or as a row left twice.
func TestApplyChangelog(t *testing.T) {
	log := []string{"+I,1,1,5", "+I,2,1,7", "-U,1,1,5", "+U,1,2,9"}
	got, err := applyChangelog(&committed{rows: log})
	if err != nil {
		t.Fatal(err)
	}
	if d := diff(got, []string{"1,2,9", "2,1,7"}); d != "" {
		t.Fatalf("applied: %s", d)
	}
	twice := append(append([]string{}, log...), "-U,1,1,5", "+U,1,2,9") // the last transaction again
	if _, err := applyChangelog(&committed{rows: twice}); err == nil {
		t.Fatal("a change applied twice went unnoticed")
	}
	if _, err := applyChangelog(&committed{rows: []string{"?,1"}}); err == nil {
		t.Fatal("an unknown row kind went unnoticed")
	}
}
