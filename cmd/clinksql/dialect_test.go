package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// step is one statement of a script run by `clinksql exec --format csv`, and what it prints: an exact CSV result
// set, a regexp over the result set, or nothing (statements without rows print nothing in CSV).
type step struct {
	sql   string
	want  string // exact CSV (header and rows), "" for no result set
	match string // a regexp the result set must match instead
	job   string // the id of the job the statement starts, which it prints as a notice on stderr
}

// runScript writes the steps to a file, runs them in one `clinksql exec` and checks each printed result set.
func runScript(t *testing.T, dir string, steps []step) {
	t.Helper()
	var sb strings.Builder
	var blocks []step
	var jobs []string
	for _, s := range steps {
		if s.job != "" {
			jobs = append(jobs, "NOTICE:  started job "+s.job)
		}
		sb.WriteString(s.sql)
		sb.WriteString("\n;\n") // on its own line: a statement may end in a -- comment
		if s.want != "" || s.match != "" {
			blocks = append(blocks, s)
		}
	}
	file := filepath.Join(t.TempDir(), "script.sql")
	if err := os.WriteFile(file, []byte(sb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, ok := run(t, "exec", "--data-dir", dir, "--format", "csv", "-f", file)
	if !ok {
		t.Fatalf("exec failed:\n%s\noutput so far:\n%s", errOut, out)
	}
	started := regexp.MustCompile(`(?m)^NOTICE:  started job .*$`).FindAllString(errOut, -1)
	if !slices.Equal(started, jobs) {
		t.Errorf("job notices %q, want %q", started, jobs)
	}
	got := strings.Split(strings.TrimSuffix(out, "\n"), "\n\n")
	if len(got) != len(blocks) {
		t.Fatalf("%d result sets, want %d:\n%s", len(got), len(blocks), out)
	}
	for i, b := range blocks {
		g := got[i] + "\n"
		if b.want != "" && g != b.want {
			t.Errorf("%s\n got:\n%s\nwant:\n%s", b.sql, g, b.want)
		}
		if b.match != "" && !regexp.MustCompile(b.match).MatchString(g) {
			t.Errorf("%s\n got:\n%s\nwant match of %s", b.sql, g, b.match)
		}
	}
}

// pins: every example of DESIGN.md "The dialect" (but the nexmark connector) runs through `clinksql exec` and gives
// the right answer, and the jobs it starts resume where they were when the data directory is opened again.
//
// The clicks, all in 2026-01-01: (1,a,00:00:01) (2,b,00:00:20) (1,c,00:00:50) (1,d,00:01:10) (2,e,00:02:30).
// The watermark after them is 00:02:29 (ts - 1 s), so windows ending at or before it have fired in the jobs.
func TestDialectExamples(t *testing.T) {
	dir := t.TempDir()
	rows := `INSERT INTO clicks VALUES (2, 'b', TIMESTAMP '2026-01-01 00:00:20'), (1, 'c', TIMESTAMP '2026-01-01 00:00:50'),
		(1, 'd', TIMESTAMP '2026-01-01 00:01:10'), (2, 'e', TIMESTAMP '2026-01-01 00:02:30')`
	runScript(t, dir, []step{
		{sql: `CREATE STREAM clicks (user_id BIGINT, url VARCHAR, ts TIMESTAMP(3),
                      WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)   -- no WITH: fed by INSERT ... VALUES`},
		{sql: `INSERT INTO clicks VALUES (1, 'a', TIMESTAMP '2026-01-01 00:00:01')`},
		{sql: `CREATE SINK per_minute (user_id BIGINT, n BIGINT, window_start TIMESTAMP(3), window_end TIMESTAMP(3))
  WITH (connector = 'parquet', path = 'out/per_minute')`},
		{sql: `INSERT INTO per_minute
SELECT user_id, COUNT(*), window_start, window_end
FROM TABLE(TUMBLE(TABLE clicks, DESCRIPTOR(ts), INTERVAL '1' MINUTE))
GROUP BY user_id, window_start, window_end`, job: "job-1"},
		// HOP 30 s / 1 min: each click is in two windows.
		{sql: `CREATE MATERIALIZED VIEW top AS
SELECT user_id, COUNT(*) AS clicks, window_start, window_end
FROM TABLE(HOP(TABLE clicks, DESCRIPTOR(ts), INTERVAL '30' SECOND, INTERVAL '1' MINUTE))
GROUP BY user_id, window_start, window_end`, job: "job-2"},
		{sql: `CREATE VIEW v AS SELECT user_id, url FROM clicks WHERE url <> 'b'`},
		{sql: `SET checkpoint.interval = '10s'`},
		{sql: `SET checkpoint.mode = 'unaligned'`},
		{sql: `SET parallelism = 2`},
		{sql: `CREATE SINK sessions_csv (user_id BIGINT, n BIGINT, s TIMESTAMP(3), e TIMESTAMP(3))
  WITH (connector = 'file', format = 'csv', path = 'out/sessions')`},
		{sql: `INSERT INTO sessions_csv SELECT user_id, COUNT(*), window_start, window_end
FROM TABLE(SESSION(TABLE clicks PARTITION BY user_id, DESCRIPTOR(ts), INTERVAL '10' SECOND))
GROUP BY user_id, window_start, window_end`, job: "job-3"},
		{sql: `SET checkpoint.mode = 'adaptive'`},
		{sql: `CREATE MATERIALIZED VIEW cum AS SELECT COUNT(*) AS n, window_start, window_end
FROM TABLE(CUMULATE(TABLE clicks, DESCRIPTOR(ts), INTERVAL '30' SECOND, INTERVAL '1' MINUTE))
GROUP BY window_start, window_end`, job: "job-4"},
		{sql: rows},
		{sql: `FLUSH`},
		// HOP windows that ended by 00:02:29: [-30s,30s): a | b; [0,60s): a c | b; [30s,90s): c d; [60s,120s): d.
		{sql: `SELECT * FROM top ORDER BY window_start, user_id`, want: `user_id,clicks,window_start,window_end
1,1,2025-12-31 23:59:30,2026-01-01 00:00:30
2,1,2025-12-31 23:59:30,2026-01-01 00:00:30
1,2,2026-01-01 00:00:00,2026-01-01 00:01:00
2,1,2026-01-01 00:00:00,2026-01-01 00:01:00
1,2,2026-01-01 00:00:30,2026-01-01 00:01:30
1,1,2026-01-01 00:01:00,2026-01-01 00:02:00
`},
		{sql: `SELECT * FROM v ORDER BY url`, want: "user_id,url\n1,a\n1,c\n1,d\n2,e\n"},
		// CUMULATE 30 s up to 1 min: [0,30): a b; [0,60): a b c; [60,90): d; [60,120): d ([120,150) has no row: e is
		// at 150; [120,180) has not ended).
		{sql: `SELECT * FROM cum ORDER BY window_end`, want: `n,window_start,window_end
2,2026-01-01 00:00:00,2026-01-01 00:00:30
3,2026-01-01 00:00:00,2026-01-01 00:01:00
1,2026-01-01 00:01:00,2026-01-01 00:01:30
1,2026-01-01 00:01:00,2026-01-01 00:02:00
`},
		// The Parquet sink, read back: minute 0 has user 1 twice (a, c) and user 2 once (b); minute 1 user 1 (d).
		{sql: `CREATE STREAM pm_back (user_id BIGINT, n BIGINT, window_start TIMESTAMP(3), window_end TIMESTAMP(3))
  WITH (connector = 'parquet', path = 'out/per_minute')`},
		{sql: `SELECT * FROM pm_back ORDER BY window_start, user_id`, want: `user_id,n,window_start,window_end
1,2,2026-01-01 00:00:00,2026-01-01 00:01:00
2,1,2026-01-01 00:00:00,2026-01-01 00:01:00
1,1,2026-01-01 00:01:00,2026-01-01 00:02:00
`},
		// Ad-hoc reads run to the end of the stream, so every window fires. Short forms and INTERVAL n UNIT:
		{sql: `SELECT window_start, COUNT(*) AS n FROM TUMBLE(clicks, ts, INTERVAL 1 MINUTE) GROUP BY window_start, window_end ORDER BY window_start`,
			want: "window_start,n\n2026-01-01 00:00:00,3\n2026-01-01 00:01:00,1\n2026-01-01 00:02:00,1\n"},
		// HOP 1 min / 2 min: [-1m,1m) a b c = 3, [0,2m) a b c d = 4, [1m,3m) d e = 2, [2m,4m) e = 1.
		{sql: `SELECT COUNT(*) AS n FROM HOP(clicks, ts, INTERVAL '1' MINUTE, INTERVAL '2' MINUTE) GROUP BY window_start, window_end ORDER BY n DESC LIMIT 2`,
			want: "n\n4\n3\n"},
		// Legacy group windows: sessions of 10 s per user.
		{sql: `SELECT user_id, SESSION_START(ts, INTERVAL '10' SECOND) AS s, SESSION_END(ts, INTERVAL '10' SECOND) AS e, COUNT(*) AS n
FROM clicks GROUP BY user_id, SESSION(ts, INTERVAL '10' SECOND) ORDER BY user_id, s`, want: `user_id,s,e,n
1,2026-01-01 00:00:01,2026-01-01 00:00:11,1
1,2026-01-01 00:00:50,2026-01-01 00:01:00,1
1,2026-01-01 00:01:10,2026-01-01 00:01:20,1
2,2026-01-01 00:00:20,2026-01-01 00:00:30,1
2,2026-01-01 00:02:30,2026-01-01 00:02:40,1
`},
		// Aggregates: user 1 clicked 3 times; 2 users; 1+2+1+1+2 = 7; AVG 7/5 = 1.4 (NUMERIC, 16 places).
		{sql: `SELECT COUNT(*) FILTER (WHERE user_id = 1) AS ones, COUNT(DISTINCT user_id) AS users, SUM(user_id) AS s,
MIN(url) AS lo, MAX(url) AS hi, AVG(user_id) AS a FROM clicks`, want: "ones,users,s,lo,hi,a\n3,2,7,a,e,1.4000000000000000\n"},
		{sql: `SELECT CAST(user_id AS VARCHAR) || '!' AS s, user_id::INT AS i, CAST(ts AS TIMESTAMP(3)) AS t, url::TEXT AS u FROM clicks WHERE url = 'a'`,
			want: "s,i,t,u\n1!,1,2026-01-01 00:00:01,a\n"},
		{sql: `SHOW STREAMS`, want: `name,connector,columns,watermark
clicks,(internal),"user_id BIGINT, url VARCHAR, ts TIMESTAMP(3)",ts AS ts - INTERVAL '1' SECOND
pm_back,parquet,"user_id BIGINT, n BIGINT, window_start TIMESTAMP(3), window_end TIMESTAMP(3)",""
`},
		{sql: `SHOW SINKS`, want: `name,connector,columns,options
per_minute,parquet,"user_id BIGINT, n BIGINT, window_start TIMESTAMP(3), window_end TIMESTAMP(3)",path=out/per_minute
sessions_csv,file,"user_id BIGINT, n BIGINT, s TIMESTAMP(3), e TIMESTAMP(3)","format=csv, path=out/sessions"
`},
		{sql: `SHOW MATERIALIZED VIEWS`, match: `^name,job_id,query\ncum,job-4,"SELECT .*CUMULATE.*"\ntop,job-2,"SELECT .*HOP.*"\n$`},
		{sql: `SHOW JOBS`, match: `^id,query,state,bounded,last_checkpoint,rows_in,rows_out,late_rows,bad_values,suppressed_rows,error,started_at,` +
			`restarts,rows_in_per_sec,rows_out_per_sec,total_rows,watermark,watermark_lag_ms,source_lag_records,` +
			`checkpoints_completed,checkpoints_failed,adaptive_switches,checkpoint_mode\n` +
			`job-1,"INSERT INTO per_minute .*",RUNNING,f,[1-9][0-9]*,5,\d+,0,0,0,"",.*\n` +
			`job-2,"CREATE MATERIALIZED VIEW top .*",RUNNING,f,[1-9][0-9]*,5,\d+,0,0,0,"",.*\n` +
			`job-3,.*,RUNNING,f,[1-9][0-9]*,5,\d+,0,0,0,"",.*\n` +
			`job-4,.*,RUNNING,f,[1-9][0-9]*,5,\d+,0,0,0,"",.*\n$`},
		{sql: `SHOW CHECKPOINTS`, match: `^job_id,checkpoint_id,mode,trigger_time,duration_ms,align_ms,bytes_persisted,inflight_bytes,outcome,reason\n` +
			`(job-[1-4],[0-9]+,(aligned|unaligned),[^\n]*,(COMPLETED,""|FAILED,.*|ABORTED,.*)\n)+$`},
		{sql: `DESCRIBE clicks`, want: `column_name,data_type,is_nullable,extra
user_id,BIGINT,YES,""
url,VARCHAR,YES,""
ts,TIMESTAMP(3),YES,WATERMARK AS ts - INTERVAL '1' SECOND
`},
		{sql: `EXPLAIN INSERT INTO per_minute SELECT user_id, COUNT(*), window_start, window_end
FROM TABLE(TUMBLE(TABLE clicks, DESCRIPTOR(ts), INTERVAL '1' MINUTE)) GROUP BY user_id, window_start, window_end`,
			match: `(?s)^QUERY PLAN\nSink: sink per_minute \[sink\] parallelism=2.*WindowAggregate \[window-agg\] parallelism=2 input=hash\[0\].*Source: stream clicks.*checkpoint participants`},
		{sql: `DROP JOB job-3`},
		{sql: `DROP MATERIALIZED VIEW cum`},
		{sql: `BEGIN`},
		{sql: `COMMIT`},
	})

	// The sessions that ended by 00:02:29 are in the committed CSV files: user 1 [01,11) [50,60) [70,80), user 2
	// [20,30) ([150,160) has not ended).
	var lines []string
	files, _ := filepath.Glob(filepath.Join(dir, "out", "sessions", "*.csv"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, strings.Split(strings.TrimSpace(string(data)), "\n")...)
	}
	slices.Sort(lines)
	want := []string{
		"1,1,2026-01-01 00:00:01,2026-01-01 00:00:11",
		"1,1,2026-01-01 00:00:50,2026-01-01 00:01:00",
		"1,1,2026-01-01 00:01:10,2026-01-01 00:01:20",
		"2,1,2026-01-01 00:00:20,2026-01-01 00:00:30",
	}
	if !slices.Equal(lines, want) {
		t.Fatalf("sessions CSV:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}

	// DROP refuses a stream that jobs and views read, and names them.
	_, errOut, ok := run(t, "exec", "--data-dir", dir, "-c", "DROP STREAM clicks")
	if ok || !strings.Contains(errOut, "SQLSTATE 2BP01") || !strings.Contains(errOut, "job job-1") || !strings.Contains(errOut, "top") {
		t.Fatalf("DROP STREAM clicks: %s", errOut)
	}

	// A new run on the same directory: job-1 and job-2 were re-deployed from their checkpoints (the dropped jobs
	// were not). A click at 00:03:30 moves the watermark to 00:03:29: minute 2 (user 2's e) reaches the Parquet
	// sink, and top's window [120s,180s) (e) fires; [150s,210s) has not ended and [90s,150s) has no click.
	runScript(t, dir, []step{
		{sql: `SHOW JOBS`, match: `^id,query,state,bounded,last_checkpoint,rows_in,rows_out,late_rows,bad_values,suppressed_rows,error,started_at,` +
			`restarts,rows_in_per_sec,rows_out_per_sec,total_rows,watermark,watermark_lag_ms,source_lag_records,` +
			`checkpoints_completed,checkpoints_failed,adaptive_switches,checkpoint_mode\n` +
			`job-1,.*,RUNNING,.*\njob-2,.*,RUNNING,.*\njob-3,.*,DROPPED,.*\njob-4,.*,DROPPED,.*\n$`},
		{sql: `INSERT INTO clicks VALUES (3, 'f', TIMESTAMP '2026-01-01 00:03:30')`},
		{sql: `FLUSH`},
		{sql: `SELECT * FROM pm_back ORDER BY window_start, user_id`, want: `user_id,n,window_start,window_end
1,2,2026-01-01 00:00:00,2026-01-01 00:01:00
2,1,2026-01-01 00:00:00,2026-01-01 00:01:00
1,1,2026-01-01 00:01:00,2026-01-01 00:02:00
2,1,2026-01-01 00:02:00,2026-01-01 00:03:00
`},
		{sql: `SELECT user_id, clicks, window_start FROM top WHERE window_start >= TIMESTAMP '2026-01-01 00:01:00' ORDER BY window_start`,
			want: "user_id,clicks,window_start\n1,1,2026-01-01 00:01:00\n2,1,2026-01-01 00:02:00\n"},
	})
}
