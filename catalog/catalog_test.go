package catalog

import (
	"reflect"
	"slices"
	"testing"

	"github.com/clinksql/clinksql/sqlerr"
	"github.com/clinksql/clinksql/state"
)

func bigint() Type { return Type{Name: "BIGINT", Precision: -1, Scale: -1} }

// pins: DDL is durable: a reopened catalog has every object and job, and job ids are never reused.
func TestCatalogPersistsAcrossOpen(t *testing.T) {
	dir := t.TempDir()
	c, err := Open(state.OS, dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(&Object{Kind: Stream, Name: "clicks", Columns: []Column{{Name: "user_id", Type: bigint()},
		{Name: "p", Type: Type{Name: "INT", Precision: -1, Scale: -1}, MetadataKey: "partition", Virtual: true}},
		PrimaryKey: []string{"user_id"}, Watermark: &Watermark{Column: "ts", Expr: "ts - INTERVAL '1' SECOND"}}, false); err != nil {
		t.Fatal(err)
	}
	id, err := c.NewJobID()
	if err != nil || id != "job-1" {
		t.Fatalf("NewJobID = %q, %v", id, err)
	}
	if err := c.AddJob(&JobSpec{ID: id, Statement: "INSERT INTO s SELECT * FROM clicks", Target: "s", Reads: []string{"clicks"}}); err != nil {
		t.Fatal(err)
	}

	c2, err := Open(state.OS, dir)
	if err != nil {
		t.Fatal(err)
	}
	o, ok := c2.Get("clicks")
	if !ok || o.Kind != Stream || o.Watermark == nil || o.Watermark.Expr != "ts - INTERVAL '1' SECOND" || !reflect.DeepEqual(o.Columns[0].Type, bigint()) {
		t.Fatalf("reopened object = %+v", o)
	}
	if c := o.Columns[1]; c.MetadataKey != "partition" || !c.Virtual || len(o.PrimaryKey) != 1 || o.PrimaryKey[0] != "user_id" {
		t.Fatalf("reopened metadata column %+v, primary key %q", c, o.PrimaryKey)
	}
	if j, ok := c2.Job("job-1"); !ok || j.Reads[0] != "clicks" {
		t.Fatalf("reopened job = %+v", j)
	}
	if id, _ := c2.NewJobID(); id != "job-2" {
		t.Fatalf("next id after reopen = %q, want job-2", id)
	}
}

// pins: a sink's PARTITIONED BY columns lost, or reordered, when the catalog is reopened (a restart would write
// its rows unpartitioned, or into dt=.../hm=... swapped).
func TestCatalogPersistsPartitionKeys(t *testing.T) {
	dir := t.TempDir()
	c, err := Open(state.OS, dir)
	if err != nil {
		t.Fatal(err)
	}
	str := Type{Name: "VARCHAR", Precision: -1, Scale: -1}
	if _, err := c.Create(&Object{Kind: Sink, Name: "q10", Columns: []Column{{Name: "v", Type: bigint()},
		{Name: "hm", Type: str}, {Name: "dt", Type: str}}, PartitionKeys: []string{"dt", "hm"},
		Options: map[string]string{"connector": "parquet", "path": "out/q10"}}, false); err != nil {
		t.Fatal(err)
	}
	c2, err := Open(state.OS, dir)
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := c2.Get("q10"); !ok || !slices.Equal(o.PartitionKeys, []string{"dt", "hm"}) {
		t.Fatalf("reopened sink = %+v", o)
	}
}

func TestCreateDuplicate(t *testing.T) {
	c, _ := Open(state.OS, t.TempDir())
	o := &Object{Kind: Stream, Name: "s"}
	if _, err := c.Create(o, false); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(&Object{Kind: Sink, Name: "s"}, false); sqlerr.Code(err) != sqlerr.DuplicateTable {
		t.Fatalf("duplicate create: %v", err)
	}
	if created, err := c.Create(&Object{Kind: Sink, Name: "s"}, true); err != nil || created {
		t.Fatalf("IF NOT EXISTS: created=%v err=%v", created, err)
	}
}

// pins: DROP refuses what a view or job still reads and names the readers; CASCADE takes them, recursively, and
// stops their jobs.
func TestDropRules(t *testing.T) {
	c, _ := Open(state.OS, t.TempDir())
	mustCreate := func(o *Object) {
		t.Helper()
		if _, err := c.Create(o, false); err != nil {
			t.Fatal(err)
		}
	}
	mustCreate(&Object{Kind: Stream, Name: "clicks"})
	mustCreate(&Object{Kind: Sink, Name: "out"})
	mustCreate(&Object{Kind: View, Name: "v1", Reads: []string{"clicks"}})
	mustCreate(&Object{Kind: MaterializedView, Name: "mv", Reads: []string{"v1"}, Job: "job-1"})
	mustCreate(&Object{Kind: MaterializedView, Name: "mv2", Reads: []string{"mv"}, Job: "job-2"})
	_ = c.AddJob(&JobSpec{ID: "job-1", Target: "mv", Reads: []string{"clicks"}})
	_ = c.AddJob(&JobSpec{ID: "job-2", Target: "mv2", Reads: []string{"mv"}})
	_ = c.AddJob(&JobSpec{ID: "job-3", Target: "out", Reads: []string{"clicks"}})

	_, err := c.PlanDrop("clicks", Stream, false)
	if sqlerr.Code(err) != sqlerr.DependentObjects {
		t.Fatalf("drop without cascade: %v", err)
	}
	if want := `cannot drop stream "clicks" because other objects depend on it: v1, job job-1, job job-3`; err.Error() != want {
		t.Fatalf("message:\n got %s\nwant %s", err, want)
	}
	if _, err := c.PlanDrop("clicks", Sink, false); sqlerr.Code(err) != sqlerr.UndefinedTable {
		t.Fatalf("wrong kind: %v", err)
	}
	// The materialized view's own job does not hold the view back; its reader mv2 does.
	if _, err := c.PlanDrop("mv", MaterializedView, false); err == nil {
		t.Fatal("mv read by mv2 dropped without cascade")
	}
	if plan, err := c.PlanDrop("mv2", MaterializedView, false); err != nil || len(plan.Jobs) != 1 || plan.Jobs[0] != "job-2" {
		t.Fatalf("drop mv2: %+v %v", plan, err)
	}

	plan, err := c.PlanDrop("clicks", Stream, true)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, o := range plan.Objects {
		names = append(names, o.Name)
	}
	// Readers before what they read; every job that reads any of them.
	if got, want := names, []string{"mv2", "mv", "v1", "clicks"}; !slices.Equal(got, want) {
		t.Fatalf("cascade objects = %v, want %v", got, want)
	}
	if got, want := plan.Jobs, []string{"job-1", "job-3", "job-2"}; !slices.Equal(got, want) {
		t.Fatalf("cascade jobs = %v, want %v", got, want)
	}
	if err := c.Remove(plan); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Get("v1"); ok {
		t.Fatal("v1 survived the cascade")
	}
	if j, _ := c.Job("job-3"); !j.Stopped || !j.Dropped {
		t.Fatal("job-3 not stopped")
	}
	if _, err := c.PlanDrop("out", Sink, false); err != nil {
		t.Fatalf("sink whose writer was stopped: %v", err)
	}
}
