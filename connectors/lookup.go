package connectors

import (
	"time"

	"github.com/clinksql/clinksql/exec"
)

// Lookup is implemented by a source connector whose streams are tables of an external system read by key, per
// row of a lookup join's left input (`JOIN dim FOR SYSTEM_TIME AS OF l.proc_time AS d ON l.k = d.id`), and never
// scanned: such a connector's Build refuses (0A000, saying so).
type Lookup interface {
	// BuildLookup makes the lookup table of a stream keyed on its columns keys (indexes into spec.Schema, in the
	// order the join gives their values). It refuses what Validate refuses, except what env.Restoring leaves to
	// the job's own start.
	BuildLookup(spec Spec, opts map[string]string, keys []int, env Env) (LookupPlan, error)
}

// LookupPlan is a built lookup table and the lookup join's cache settings (Flink JDBC's lookup.* options).
type LookupPlan struct {
	New func(subtask int) exec.LookupTable
	// CacheRows bounds the cached rows per subtask (a key the table does not hold counts as one); 0: no cache.
	CacheRows int
	// CacheTTL is how long a cached key's rows are used; 0: until evicted.
	CacheTTL time.Duration
	// MaxRetries is how many times a failed lookup is tried again before the job fails.
	MaxRetries int
	// Details are EXPLAIN lines of the lookup side.
	Details []string
}

// LookupOf returns the lookup side of source connector name, if it has one.
func LookupOf(name string) (Lookup, bool) {
	c, ok := LookupSource(name)
	if !ok {
		return nil, false
	}
	l, ok := c.(Lookup)
	return l, ok
}
