package catalog

import (
	"reflect"
	"slices"
	"testing"

	"github.com/clinksql/clinksql/sqlerr"
	"github.com/clinksql/clinksql/state"
)

// pins: a function lost or changed when the catalog is reopened (a job inlining it could not be re-planned).
func TestFunctionsPersist(t *testing.T) {
	dir := t.TempDir()
	c, err := Open(state.OS, dir)
	if err != nil {
		t.Fatal(err)
	}
	f := &Function{Name: "add_tax", Params: []Param{{Name: "price", Type: bigint()}, {Name: "rate", Type: Type{Name: "DOUBLE", Precision: -1, Scale: -1}}},
		Returns: Type{Name: "DOUBLE", Precision: -1, Scale: -1}, Language: "sql", Body: "price * (1 + rate)"}
	if err := c.CreateFunction(f, false); err != nil {
		t.Fatal(err)
	}
	w := &Function{Name: "count_char", Params: []Param{{Type: Type{Name: "VARCHAR", Precision: -1, Scale: -1}}}, Returns: bigint(),
		Language: "wasm", Module: "functions/count_char-1.wasm", Checksum: "ab", Export: "count_char", Options: map[string]string{"timeout": "1s"}}
	if err := c.CreateFunction(w, false); err != nil {
		t.Fatal(err)
	}
	if err := c.CreateFunction(&Function{Name: "add_tax"}, false); sqlerr.Code(err) != sqlerr.DuplicateFunction {
		t.Fatalf("duplicate: %v", err)
	}
	c2, err := Open(state.OS, dir)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := c2.Function("add_tax")
	if !ok || !reflect.DeepEqual(got, f) {
		t.Fatalf("reopened %+v, want %+v", got, f)
	}
	if got, _ := c2.Function("count_char"); !reflect.DeepEqual(got, w) {
		t.Fatalf("reopened %+v, want %+v", got, w)
	}
	if names := len(c2.Functions()); names != 2 {
		t.Fatalf("%d functions", names)
	}
	if s := got.Signature(); s != "add_tax(price BIGINT, rate DOUBLE)" {
		t.Fatalf("signature %s", s)
	}
	// A function does not collide with a relation of the same name.
	if _, err := c2.Create(&Object{Kind: Stream, Name: "add_tax"}, false); err != nil {
		t.Fatal(err)
	}
	repl := &Function{Name: "add_tax", Language: "sql", Body: "price"}
	if err := c2.CreateFunction(repl, true); err != nil {
		t.Fatal(err)
	}
	if got, _ := c2.Function("add_tax"); got.Body != "price" {
		t.Fatalf("replaced body %q", got.Body)
	}
}

// pins: DROP FUNCTION of a function that a view or a running job uses: refused naming them, or with CASCADE the
// readers dropped too (and their own readers); a materialized view stands for its own job.
func TestDropFunctionRules(t *testing.T) {
	c, _ := Open(state.OS, t.TempDir())
	_ = c.CreateFunction(&Function{Name: "f", Language: "sql", Body: "1"}, false)
	_ = c.CreateFunction(&Function{Name: "g", Language: "sql", Body: "2"}, false)
	for _, o := range []*Object{{Kind: Stream, Name: "clicks"}, {Kind: Sink, Name: "out"},
		{Kind: View, Name: "v", Reads: []string{"clicks"}, Functions: []string{"f"}},
		{Kind: MaterializedView, Name: "mv", Reads: []string{"v"}, Job: "job-1", Functions: []string{"f"}},
		{Kind: MaterializedView, Name: "mv2", Reads: []string{"mv"}, Job: "job-2"}} {
		if _, err := c.Create(o, false); err != nil {
			t.Fatal(err)
		}
	}
	_ = c.AddJob(&JobSpec{ID: "job-1", Target: "mv", Reads: []string{"clicks"}, Functions: []string{"f"}})
	_ = c.AddJob(&JobSpec{ID: "job-2", Target: "mv2", Reads: []string{"mv"}})
	_ = c.AddJob(&JobSpec{ID: "job-3", Target: "out", Reads: []string{"clicks"}, Functions: []string{"f", "g"}})
	_ = c.AddJob(&JobSpec{ID: "job-4", Target: "out", Reads: []string{"clicks"}, Functions: []string{"g"}, Stopped: true})

	_, err := c.PlanDropFunction("f", false)
	if sqlerr.Code(err) != sqlerr.DependentObjects {
		t.Fatalf("drop without cascade: %v", err)
	}
	if want := "cannot drop function f() because other objects depend on it: mv, v, job job-3"; err.Error() != want {
		t.Fatalf("message:\n got %s\nwant %s", err, want)
	}
	if _, err := c.PlanDropFunction("nope", false); sqlerr.Code(err) != sqlerr.UndefinedFunction {
		t.Fatalf("missing: %v", err)
	}
	plan, err := c.PlanDropFunction("f", true)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, o := range plan.Objects {
		names = append(names, o.Name)
	}
	if want := []string{"mv2", "mv", "v"}; !slices.Equal(names, want) {
		t.Fatalf("cascade objects %v, want %v", names, want)
	}
	if want := []string{"job-3", "job-2", "job-1"}; !slices.Equal(plan.Jobs, want) {
		t.Fatalf("cascade jobs %v, want %v", plan.Jobs, want)
	}
	if err := c.Remove(plan); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Function("f"); ok {
		t.Fatal("f still there")
	}
	if _, ok := c.Get("mv"); ok {
		t.Fatal("mv still there")
	}
	// g's only user left is a stopped job.
	if d := c.FunctionDependents("g"); len(d.Objects)+len(d.Jobs) != 0 {
		t.Fatalf("g dependents %v", d)
	}
}
