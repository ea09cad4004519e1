package planner

import (
	"strings"
	"testing"

	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/sql/parser"
	"github.com/clinksql/clinksql/sqlerr"
)

// TestProcTimeAttribute: PROCTIME() as a stream's computed column and in a view's SELECT list is a processing-time
// attribute (isProcTime, what windows and lookup joins read), a TIMESTAMPTZ; a window aggregate over it is a
// processing-time window (fired by the clock: no row time for the sink), and the rowtime-only constructs refuse it
// with 0A000 at the position of what uses it.
func TestProcTimeAttribute(t *testing.T) {
	env := newTestEnv(t)
	if err := env.run(`
CREATE STREAM gen (k BIGINT, ts TIMESTAMP(3), p AS PROCTIME(), WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
  WITH (connector = 'datagen', 'number-of-rows' = '10');
CREATE STREAM clicks (user_id BIGINT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts);
CREATE VIEW clicks_p AS SELECT user_id, ts, PROCTIME() AS pt FROM clicks;
CREATE SINK per_window (k BIGINT, n BIGINT, window_start TIMESTAMPTZ, window_end TIMESTAMPTZ)
  WITH (connector = 'parquet', path = 'out/per_window');
`); err != nil {
		t.Fatal(err)
	}
	gen, _ := env.cat.Get("gen")
	if c := gen.Columns[2]; c.Computed != "proctime()" || c.Type.String() != "TIMESTAMP WITH TIME ZONE" {
		t.Fatalf("p is %+v, want a computed TIMESTAMPTZ column proctime()", c)
	}
	b := &binder{env: env, cat: env.Catalog(), fns: newFuncScope(env)}
	for _, tc := range []struct {
		obj  string
		col  int
		proc bool
	}{{"gen", 2, true}, {"gen", 1, false}, {"clicks_p", 2, true}, {"clicks_p", 1, false}} {
		n, err := b.bindTable(&parser.TableName{Name: tc.obj})
		if err != nil {
			t.Fatal(err)
		}
		if got := isProcTime(n, tc.col); got != tc.proc {
			t.Errorf("%s column %d: processing-time attribute %v, want %v", tc.obj, tc.col, got, tc.proc)
		}
	}

	p, g := graphAtParallelism2(t, env, `INSERT INTO per_window SELECT k, COUNT(*), window_start, window_end
FROM TABLE(TUMBLE(TABLE gen, DESCRIPTOR(p), INTERVAL '10' SECOND)) GROUP BY k, window_start, window_end`)
	ex := p.Explain()
	if !strings.Contains(ex, "TUMBLE(p, 10 seconds) on processing time") || !strings.Contains(ex, "processing-time clock passes window_end") {
		t.Fatalf("EXPLAIN does not show a processing-time window:\n%s", ex)
	}
	for _, n := range g.Nodes {
		if n.Kind == exec.SinkNode && n.RowTimeColumn != -1 {
			t.Fatalf("a processing-time window's end is a row time column (%d) of the sink", n.RowTimeColumn)
		}
	}
	// The legacy group window over the view's attribute is one too.
	if ex, err := env.explain(`CREATE MATERIALIZED VIEW v AS SELECT user_id, COUNT(*) AS n, TUMBLE_END(pt, INTERVAL '1' MINUTE) AS e
FROM clicks_p GROUP BY user_id, TUMBLE(pt, INTERVAL '1' MINUTE)`); err != nil || !strings.Contains(ex, "on processing time") {
		t.Fatalf("legacy window over a view's PROCTIME(): %v\n%s", err, ex)
	}

	for _, tc := range []struct{ name, sql, code, at, msg string }{
		{"watermark on proctime", `CREATE STREAM w1 (ts TIMESTAMP(3), p AS PROCTIME(), WATERMARK FOR p AS p) WITH (connector = 'datagen')`,
			sqlerr.FeatureNotSupported, "p AS p)", "processing time has no watermark"},
		{"proctime in watermark", `CREATE STREAM w2 (ts TIMESTAMP(3), WATERMARK FOR ts AS PROCTIME()) WITH (connector = 'datagen')`,
			sqlerr.FeatureNotSupported, "PROCTIME())", "not allowed in a WATERMARK expression"},
		{"over order by proctime", `SELECT k, COUNT(*) OVER (PARTITION BY k ORDER BY p ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) FROM gen`,
			sqlerr.FeatureNotSupported, "p ROWS", "OVER ORDER BY a processing-time attribute"},
		{"interval join on proctime", `SELECT a.k FROM gen a JOIN gen b ON a.k = b.k AND b.p BETWEEN a.p AND a.p + INTERVAL '1' SECOND`,
			sqlerr.FeatureNotSupported, "JOIN gen b", "interval join on a processing-time attribute"},
		{"window assignment without aggregate", `SELECT k, window_start FROM TABLE(TUMBLE(TABLE gen, DESCRIPTOR(p), INTERVAL '10' SECOND))`,
			sqlerr.FeatureNotSupported, "p), INTERVAL", "must be aggregated"},
		{"arguments", `SELECT PROCTIME(1) FROM gen`, sqlerr.UndefinedFunction, "PROCTIME(1)", "takes no arguments"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if strings.HasPrefix(tc.sql, "CREATE STREAM") {
				err = env.run(tc.sql)
			} else {
				_, err = env.explain(tc.sql)
			}
			e := sqlerr.As(err)
			if err == nil || e.Code != tc.code || !strings.Contains(e.Msg, tc.msg) {
				t.Fatalf("got %v, want %s %q", err, tc.code, tc.msg)
			}
			if want := strings.Index(tc.sql, tc.at); e.Pos != want { // Pos is a 0-based offset
				t.Fatalf("error at %d, want %d (%q): %v", e.Pos, want, tc.at, err)
			}
		})
	}
}
