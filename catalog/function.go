package catalog

import (
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/clinksql/clinksql/sqlerr"
)

// Function is a user-defined scalar function (CREATE FUNCTION). Functions have a namespace of their own, as in
// Postgres (a stream and a function may share a name), one function per name (no overloading).
type Function struct {
	Name    string  `json:"name"`
	Params  []Param `json:"params"`
	Returns Type    `json:"returns"`
	// Language is "sql" (the body is inlined where the function is called) or "wasm" (a WebAssembly module).
	Language string `json:"language"`
	// Body is a SQL function's expression as canonical SQL text, its parameters by name or $n.
	Body string `json:"body,omitempty"`
	// Strict: a NULL argument makes the result NULL without evaluating the body (STRICT; a wasm function always is).
	Strict bool `json:"strict,omitempty"`
	// Module is a wasm function's module file, relative to the data directory (functions/<storage>.wasm): a copy
	// made at CREATE, so that a restart does not depend on the original. Checksum is its SHA-256 (hex), checked
	// whenever it is loaded.
	Module   string `json:"module,omitempty"`
	Checksum string `json:"checksum,omitempty"`
	// Export is the module's function the SQL function calls.
	Export string `json:"export,omitempty"`
	// Options are the WITH options as written (export, memory.limit, timeout).
	Options map[string]string `json:"options,omitempty"`
	// Source is where a wasm module came from: the path as written, or "(base64)".
	Source  string    `json:"source,omitempty"`
	Created time.Time `json:"created"`
}

// Param is a parameter of a function: its name ("" when it has none: $n reaches it) and type.
type Param struct {
	Name string `json:"name,omitempty"`
	Type Type   `json:"type"`
}

// Signature is the function as \df and SHOW FUNCTIONS show it: name(type, ...).
func (f *Function) Signature() string { return f.Name + "(" + f.Arguments() + ")" }

// Arguments lists the parameters: "price BIGINT, rate DOUBLE".
func (f *Function) Arguments() string {
	parts := make([]string, len(f.Params))
	for i, p := range f.Params {
		parts[i] = p.Type.String()
		if p.Name != "" {
			parts[i] = p.Name + " " + parts[i]
		}
	}
	return strings.Join(parts, ", ")
}

// Function returns the function named name.
func (c *Catalog) Function(name string) (*Function, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f, ok := c.functions[name]
	return f, ok
}

// Functions returns every function, by name.
func (c *Catalog) Functions() []*Function {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*Function, 0, len(c.functions))
	for _, f := range c.functions {
		out = append(out, f)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Name < out[b].Name })
	return out
}

// CreateFunction adds f. An existing function of that name is an error (42723) unless replace (CREATE OR
// REPLACE), which swaps it for f; the caller checked that the replacement may be made.
func (c *Catalog) CreateFunction(f *Function, replace bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	old, exists := c.functions[f.Name]
	if exists && !replace {
		return sqlerr.New(sqlerr.DuplicateFunction, sqlerr.NoPos, "function %q already exists", f.Name)
	}
	if f.Created.IsZero() {
		f.Created = time.Now().UTC()
	}
	c.functions[f.Name] = f
	if err := c.save(); err != nil {
		if exists {
			c.functions[f.Name] = old
		} else {
			delete(c.functions, f.Name)
		}
		return err
	}
	return nil
}

// FunctionDependents is what uses function name: views and materialized views (by name) and running jobs that
// are not a materialized view's own (by id).
func (c *Catalog) FunctionDependents(name string) Dependents {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.functionDependents(name)
}

func (c *Catalog) functionDependents(name string) Dependents {
	var d Dependents
	views := map[string]bool{} // jobs of materialized views: the view stands for them
	for _, o := range c.objects {
		if slices.Contains(o.Functions, name) {
			d.Objects = append(d.Objects, o.Name)
			if o.Job != "" {
				views[o.Job] = true
			}
		}
	}
	for _, j := range c.jobs {
		if !j.Stopped && !views[j.ID] && slices.Contains(j.Functions, name) {
			d.Jobs = append(d.Jobs, j.ID)
		}
	}
	sort.Strings(d.Objects)
	sort.Slice(d.Jobs, func(a, b int) bool { return jobLess(d.Jobs[a], d.Jobs[b]) })
	return d
}

// PlanDropFunction works out what dropping function name takes: without cascade, a view or running job that uses
// it is an error (2BP01) naming them; with cascade they come too, and whatever reads those views.
func (c *Catalog) PlanDropFunction(name string, cascade bool) (DropPlan, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f, ok := c.functions[name]
	if !ok {
		return DropPlan{}, sqlerr.New(sqlerr.UndefinedFunction, sqlerr.NoPos, "function %s does not exist", name)
	}
	d := c.functionDependents(name)
	if !d.empty() && !cascade {
		e := sqlerr.New(sqlerr.DependentObjects, sqlerr.NoPos, "cannot drop function %s because other objects depend on it: %s", f.Signature(), d)
		e.Hint = "Use DROP ... CASCADE to drop the dependent objects too."
		return DropPlan{}, e
	}
	plan := DropPlan{Functions: []*Function{f}}
	seenObj, seenJob := map[string]bool{}, map[string]bool{}
	for _, j := range d.Jobs {
		seenJob[j] = true
		plan.Jobs = append(plan.Jobs, j)
	}
	for _, o := range d.Objects {
		if err := c.planDrop(o, true, &plan, seenObj, seenJob); err != nil {
			return DropPlan{}, err
		}
	}
	return plan, nil
}
