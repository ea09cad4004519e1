package engine

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// pins: at parallelism 2, keyed operators that read an input already partitioned by their key over a forward edge
// (sql/planner keyedInput: an aggregate over an aggregate on the same key, a Top-N and aggregates over joins keyed
// on the join key of a side that is never NULL-padded) give the results computed here from the same rows. A row
// on the wrong subtask fails the job (its key group is not the subtask's), so a wrong forward edge fails FLUSH.
func TestForwardEdgesOfPartitionedInputs(t *testing.T) {
	_, s := testEngine(t, t.TempDir())
	mustExec(t, s, `SET parallelism = 2`)
	mustExec(t, s, `CREATE STREAM ev (k BIGINT, v BIGINT)`)
	mustExec(t, s, `CREATE STREAM dim (k BIGINT, name VARCHAR)`)
	views := map[string]string{
		"agg_of_agg": `SELECT k, MAX(n) AS mx FROM (SELECT k, COUNT(*) AS n FROM ev GROUP BY k) t GROUP BY k`,
		"top_of_join": `SELECT k, name, v FROM (SELECT e.k, d.name, e.v,
			ROW_NUMBER() OVER (PARTITION BY e.k ORDER BY e.v DESC) AS rn FROM ev e JOIN dim d ON e.k = d.k) t WHERE rn <= 1`,
		"left_by_left":   `SELECT k, COUNT(*) AS n FROM (SELECT e.k, d.k AS dk FROM ev e LEFT JOIN dim d ON e.k = d.k) t GROUP BY k`,
		"right_by_right": `SELECT dk, COUNT(*) AS n FROM (SELECT e.k, d.k AS dk FROM ev e RIGHT JOIN dim d ON e.k = d.k) t GROUP BY dk`,
	}
	// A Top-N behind a hash exchange (the stream's source runs at parallelism 1): the exchange gathers its parts
	// into buffers the Top-N's releases hand back (exec.InputCopier), poisoned on the tests' counting allocator,
	// so a row read after its release would show here.
	mustExec(t, s, `CREATE MATERIALIZED VIEW top2 AS SELECT k, v FROM (SELECT k, v,
		ROW_NUMBER() OVER (PARTITION BY k ORDER BY v DESC) AS rn FROM ev) t WHERE rn <= 2`)
	// The same per-key count twice in one statement: computed once (planner reuse), its output read by both the
	// join and the global maximum; the keys whose count is the largest.
	const busiest = `SELECT c.k, c.n FROM (SELECT k, COUNT(*) AS n FROM ev GROUP BY k) c
		JOIN (SELECT MAX(n) AS mx FROM (SELECT k, COUNT(*) AS n FROM ev GROUP BY k) t) m ON c.n = m.mx`
	mustExec(t, s, "CREATE MATERIALIZED VIEW busiest AS "+busiest)
	if plan := strings.Join(rows(t, s, "EXPLAIN CREATE MATERIALIZED VIEW busiest_x AS "+busiest), "\n"); !strings.Contains(plan, "(shared, above)") ||
		strings.Count(plan, "GroupAggregate [group-agg]") != 2 || strings.Contains(plan, "[group-agg-3]") {
		t.Fatalf("the count per key is not computed once:\n%s", plan)
	}
	// Keyed on the key of the NULL-padded side: not partitioned (a hash exchange), the NULL group included.
	unpartitioned := map[string]string{
		"left_by_right": `SELECT dk, COUNT(*) AS n FROM (SELECT e.k, d.k AS dk FROM ev e LEFT JOIN dim d ON e.k = d.k) t GROUP BY dk`,
		"right_by_left": `SELECT k, COUNT(*) AS n FROM (SELECT e.k, d.k AS dk FROM ev e RIGHT JOIN dim d ON e.k = d.k) t GROUP BY k`,
	}
	for name, q := range unpartitioned {
		mustExec(t, s, "CREATE MATERIALIZED VIEW "+name+" AS "+q)
	}
	for name, q := range views {
		mustExec(t, s, "CREATE MATERIALIZED VIEW "+name+" AS "+q)
		plan := strings.Join(rows(t, s, "EXPLAIN CREATE MATERIALIZED VIEW "+name+"_x AS "+q), "\n")
		if strings.Count(plan, "input=forward(group-agg)")+strings.Count(plan, "input=forward(calc-2)")+
			strings.Count(plan, "input=forward(calc-3)") == 0 || !strings.Contains(plan, "parallelism=2") {
			t.Fatalf("%s: no keyed operator reads its partitioned input forward:\n%s", name, plan)
		}
	}

	r := rand.New(rand.NewPCG(15, 2))
	count := map[int64]int64{}  // ev rows per key
	vals := map[int64][]int64{} // ev values per key
	best := map[int64]int64{}   // highest v per key
	dims := map[int64]bool{}    // dim keys
	for k := int64(25); k < 75; k++ {
		dims[k] = true
	}
	var dimRows []string
	for k := range int64(100) {
		if dims[k] {
			dimRows = append(dimRows, fmt.Sprintf("(%d, 'n%d')", k, k))
		}
	}
	mustExec(t, s, "INSERT INTO dim VALUES "+strings.Join(dimRows, ", "))
	v := int64(0)
	for range 6 {
		var evRows []string
		for range 100 {
			k := r.Int64N(50)
			v += 1 + r.Int64N(5) // distinct values: a Top-1 without ties
			vv := v
			if r.IntN(2) == 0 {
				vv = -v
			}
			count[k]++
			vals[k] = append(vals[k], vv)
			if b, ok := best[k]; !ok || vv > b {
				best[k] = vv
			}
			evRows = append(evRows, fmt.Sprintf("(%d, %d)", k, vv))
		}
		mustExec(t, s, "INSERT INTO ev VALUES "+strings.Join(evRows, ", "))
	}
	mustExec(t, s, "FLUSH")

	var most int64
	for _, n := range count {
		most = max(most, n)
	}
	var busiestWant []string
	for k := range int64(100) {
		if count[k] == most {
			busiestWant = append(busiestWant, fmt.Sprintf("%d|%d", k, most))
		}
	}
	gotBusiest := rows(t, s, "SELECT k, n FROM busiest")
	slices.SortFunc(gotBusiest, func(a, b string) int { return keyOf(a) - keyOf(b) })
	equalLines(t, "busiest", gotBusiest, busiestWant)

	var top2 []string
	for k := range int64(100) {
		vs := slices.Clone(vals[k])
		slices.Sort(vs)
		slices.Reverse(vs)
		for _, x := range vs[:min(2, len(vs))] {
			top2 = append(top2, fmt.Sprintf("%d|%d", k, x))
		}
	}
	got := rows(t, s, "SELECT k, v FROM top2")
	slices.SortFunc(got, func(a, b string) int {
		var ka, va, kb, vb int64
		fmt.Sscanf(a, "%d|%d", &ka, &va)
		fmt.Sscanf(b, "%d|%d", &kb, &vb)
		if ka != kb {
			return int(ka - kb)
		}
		return int(vb - va)
	})
	equalLines(t, "top2", got, top2)

	var aggOfAgg, topOfJoin, leftByLeft, rightByRight, leftByRight, rightByLeft []string
	var leftUnmatched, rightUnmatched int64 // rows of the NULL group
	for k := range int64(100) {
		if n := count[k]; n > 0 {
			aggOfAgg = append(aggOfAgg, fmt.Sprintf("%d|%d", k, n))
			if dims[k] {
				topOfJoin = append(topOfJoin, fmt.Sprintf("%d|n%d|%d", k, k, best[k]))
			}
			leftByLeft = append(leftByLeft, fmt.Sprintf("%d|%d", k, n)) // dim has each key at most once
			if dims[k] {
				leftByRight = append(leftByRight, fmt.Sprintf("%d|%d", k, n))
				rightByLeft = append(rightByLeft, fmt.Sprintf("%d|%d", k, n))
			} else {
				leftUnmatched += n
			}
		}
		if dims[k] {
			rightByRight = append(rightByRight, fmt.Sprintf("%d|%d", k, max(count[k], 1)))
			if count[k] == 0 {
				rightUnmatched++
			}
		}
	}
	leftByRight = append([]string{fmt.Sprintf("NULL|%d", leftUnmatched)}, leftByRight...)
	rightByLeft = append([]string{fmt.Sprintf("NULL|%d", rightUnmatched)}, rightByLeft...)
	for name, want := range map[string][]string{"agg_of_agg": aggOfAgg, "top_of_join": topOfJoin,
		"left_by_left": leftByLeft, "right_by_right": rightByRight, "left_by_right": leftByRight,
		"right_by_left": rightByLeft} {
		got := rows(t, s, "SELECT * FROM "+name)
		slices.SortFunc(got, func(a, b string) int { return keyOf(a) - keyOf(b) })
		equalLines(t, name, got, want)
	}
}

// keyOf is the leading integer of a "k|..." line; -1 for NULL, which sorts first.
func keyOf(line string) int {
	k := -1
	fmt.Sscanf(line, "%d", &k)
	return k
}
