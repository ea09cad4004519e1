package planner

import (
	"fmt"
	"strings"
	"testing"

	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/sql/parser"
)

// TestSinkRowTimeColumn checks which sinks get a row time column (exec.Node.RowTimeColumn: the column by which
// their input is fired by the watermark, which replay suppression of an in-doubt sink needs): a window aggregate
// or window join reaching the sink through projections that keep window_end as a plain column, and nothing else.
func TestSinkRowTimeColumn(t *testing.T) {
	env := newTestEnv(t)
	if err := env.run(`
CREATE STREAM clicks (user_id BIGINT, url VARCHAR, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '1' SECOND);
CREATE STREAM views (user_id BIGINT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '1' SECOND);
CREATE SINK per_minute (user_id BIGINT, n BIGINT, window_start TIMESTAMP(3), window_end TIMESTAMP(3))
  WITH (connector = 'parquet', path = 'out/per_minute');
CREATE SINK ends (n BIGINT, window_end TIMESTAMP(3)) WITH (connector = 'parquet', path = 'out/ends');
CREATE SINK counts (user_id BIGINT, n BIGINT) WITH (connector = 'parquet', path = 'out/counts');
CREATE SINK raw (user_id BIGINT, url VARCHAR, ts TIMESTAMP(3)) WITH (connector = 'parquet', path = 'out/raw');
CREATE SINK joined (user_id BIGINT, n BIGINT, m BIGINT, window_end TIMESTAMP(3))
  WITH (connector = 'parquet', path = 'out/joined');
`); err != nil {
		t.Fatal(err)
	}
	const tumble = ` FROM TABLE(TUMBLE(TABLE clicks, DESCRIPTOR(ts), INTERVAL '1' MINUTE))`
	const join = ` FROM
  (SELECT user_id, COUNT(*) AS n, window_start AS ws, window_end AS we
   FROM TABLE(TUMBLE(TABLE clicks, DESCRIPTOR(ts), INTERVAL '1' MINUTE)) GROUP BY user_id, window_start, window_end) c
%s JOIN
  (SELECT user_id, COUNT(*) AS m, window_start AS ws, window_end AS we
   FROM TABLE(TUMBLE(TABLE views, DESCRIPTOR(ts), INTERVAL '1' MINUTE)) GROUP BY user_id, window_start, window_end) v
ON c.user_id = v.user_id AND c.ws = v.ws AND c.we = v.we`
	for _, tc := range []struct {
		name, sql string
		want      int
	}{
		// window aggregate -> projection (reordering, filtering) -> sink: window_end as the projection places it
		{"window agg, projection", `INSERT INTO per_minute SELECT user_id, COUNT(*) AS n, window_start, window_end` +
			tumble + ` GROUP BY user_id, window_start, window_end`, 3},
		{"window agg, filter and projection", `INSERT INTO ends SELECT COUNT(*) AS n, window_end` + tumble +
			` GROUP BY user_id, window_start, window_end HAVING COUNT(*) > 1`, 1},
		// a projection that computes over window_end may move a row across the horizon
		{"computed window_end", `INSERT INTO ends SELECT COUNT(*) AS n, window_end - INTERVAL '1' SECOND` + tumble +
			` GROUP BY user_id, window_start, window_end`, -1},
		// window_end not kept
		{"window_end dropped", `INSERT INTO counts SELECT user_id, COUNT(*) AS n` + tumble +
			` GROUP BY user_id, window_start, window_end`, -1},
		// rows pass as they arrive
		{"no window", `INSERT INTO raw SELECT user_id, url, ts FROM clicks`, -1},
		// a hash exchange and a regular join (rows emitted as they arrive) between the window aggregate and the sink
		{"regular join over window agg", `INSERT INTO per_minute SELECT c.user_id, c.n, c.ws, c.we FROM (SELECT user_id, ` +
			`COUNT(*) AS n, window_start AS ws, window_end AS we` + tumble + ` GROUP BY user_id, window_start, window_end) c ` +
			`JOIN clicks k ON c.user_id = k.user_id`, -1},
		// window join: the window_end of a side never padded with NULLs; a full outer join has none
		{"window join", `INSERT INTO joined SELECT c.user_id, c.n, v.m, c.we` + fmt.Sprintf(join, ""), 3},
		{"right window join", `INSERT INTO joined SELECT v.user_id, c.n, v.m, v.we` + fmt.Sprintf(join, "RIGHT"), 3},
		{"right window join, left end", `INSERT INTO joined SELECT v.user_id, c.n, v.m, c.we` + fmt.Sprintf(join, "RIGHT"), -1},
		{"full window join", `INSERT INTO joined SELECT v.user_id, c.n, v.m, c.we` + fmt.Sprintf(join, "FULL"), -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, g := graphAtParallelism2(t, env, tc.sql)
			var sink *exec.Node
			for _, n := range g.Nodes {
				if n.Kind == exec.SinkNode {
					sink = n
				}
			}
			if sink.RowTimeColumn != tc.want {
				t.Fatalf("sink row time column %d, want %d\n%s", sink.RowTimeColumn, tc.want, p.Explain())
			}
		})
	}
}

// TestSourceWatermarkAlignment checks which sources take part in watermark alignment (exec.Node.AlignWatermark):
// those with a WATERMARK, never one without (it would hold the others back with no event time to catch up with).
func TestSourceWatermarkAlignment(t *testing.T) {
	env := newTestEnv(t)
	if err := env.run(`
CREATE STREAM clicks (user_id BIGINT, url VARCHAR, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '1' SECOND);
CREATE STREAM users (user_id BIGINT, name VARCHAR);
CREATE SINK out (user_id BIGINT, url VARCHAR, name VARCHAR) WITH (connector = 'parquet', path = 'out/o');
`); err != nil {
		t.Fatal(err)
	}
	p, g := graphAtParallelism2(t, env, `INSERT INTO out SELECT c.user_id, c.url, u.name FROM clicks c JOIN users u ON c.user_id = u.user_id`)
	sources, withWM := 0, 0
	for _, n := range g.Nodes {
		if n.Kind != exec.SourceNode {
			continue
		}
		sources++
		hasWM := false
		for _, pn := range p.Nodes {
			if pn.ID == n.ID {
				hasWM = strings.Contains(strings.Join(pn.Details, "\n"), "watermark:")
			}
		}
		if hasWM {
			withWM++
		}
		if n.AlignWatermark != hasWM {
			t.Errorf("source %s: aligned %v, has a watermark %v\n%s", n.ID, n.AlignWatermark, hasWM, p.Explain())
		}
	}
	if sources != 2 || withWM != 1 {
		t.Fatalf("%d sources, %d with a watermark: want 2 and 1\n%s", sources, withWM, p.Explain())
	}
}

// graphAtParallelism2 plans an INSERT at parallelism 2 and builds its runtime graph.
func graphAtParallelism2(t *testing.T, env *testEnv, sql string) (*Physical, *exec.Graph) {
	t.Helper()
	stmts, err := parser.Parse(sql)
	if err != nil {
		t.Fatal(err)
	}
	p, err := PlanInsert(env, stmts[0].(*parser.Insert), Settings{Parallelism: 2})
	if err != nil {
		t.Fatal(err)
	}
	g, err := p.Graph()
	if err != nil {
		t.Fatal(err)
	}
	return p, g
}
