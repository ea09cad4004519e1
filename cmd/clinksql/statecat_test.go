package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/clinksql/clinksql/checkpoint"
	"github.com/clinksql/clinksql/engine"
	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/state"
	"github.com/clinksql/clinksql/state/inspect"
)

// stateCat runs the command's function and decodes its JSON document.
func stateCat(t *testing.T, opts inspect.Options) *inspect.Report {
	t.Helper()
	var out bytes.Buffer
	if err := runStateCat(&out, opts, "json"); err != nil {
		t.Fatalf("state-cat %+v: %v", opts, err)
	}
	var r inspect.Report
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("state-cat JSON: %v\n%s", err, out.String())
	}
	return &r
}

func execSQL(t *testing.T, s *engine.Session, sql string) {
	t.Helper()
	if _, err := s.Execute(context.Background(), sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// tree records every file of dir with its size and modification time: state-cat must change none of them.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		m[p] = fmt.Sprintf("%v %d %d", fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func sameTree(t *testing.T, before, after map[string]string) {
	t.Helper()
	for p, v := range before {
		if after[p] != v {
			t.Errorf("%s changed: %q -> %q", p, v, after[p])
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			t.Errorf("%s appeared", p)
		}
	}
}

type groupResult struct{ rows, count, sum int64 }

// flushedGroupBy runs a GROUP BY over a seeded CSV file into a file sink through FLUSH, closes the engine and
// returns the data directory and the aggregates computed here from the input.
func flushedGroupBy(t *testing.T) (string, map[string]groupResult) {
	t.Helper()
	root := t.TempDir()
	data, in, out := filepath.Join(root, "data"), filepath.Join(root, "in"), filepath.Join(root, "out")
	if err := os.MkdirAll(in, 0o755); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(13, 7))
	want := map[string]groupResult{}
	var csv strings.Builder
	for i := range 400 {
		k := fmt.Sprintf("key-%d", rng.IntN(12))
		v := rng.Int64N(2001) - 1000
		fmt.Fprintf(&csv, "%d,%s,%d\n", i, k, v)
		g := want[k]
		want[k] = groupResult{g.rows + 1, g.count + 1, g.sum + v}
	}
	if err := os.WriteFile(filepath.Join(in, "ev.csv"), []byte(csv.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	e, err := engine.Open(engine.Config{DataDir: data, AllowPaths: []string{root}})
	if err != nil {
		t.Fatal(err)
	}
	s := e.NewSession()
	execSQL(t, s, "SET parallelism = 2")
	execSQL(t, s, fmt.Sprintf("CREATE STREAM ev (id BIGINT, k VARCHAR, v BIGINT) WITH (connector = 'file', format = 'csv', path = '%s')", in))
	execSQL(t, s, fmt.Sprintf("CREATE SINK agg (k VARCHAR, n BIGINT, s BIGINT) WITH (connector = 'file', format = 'csv', path = '%s', type = 'upsert', primary_key = 'k')", out))
	execSQL(t, s, "INSERT INTO agg SELECT k, COUNT(*), SUM(v) FROM ev GROUP BY k")
	execSQL(t, s, "FLUSH")
	if err := e.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	return data, want
}

// groupsOf collects the decoded groups of every subtask of operator op: key -> (rows, COUNT(*), SUM(v)).
func groupsOf(t *testing.T, c *inspect.CheckpointSnapshot, op string) map[string]groupResult {
	t.Helper()
	got := map[string]groupResult{}
	for _, st := range c.Subtasks {
		if st.Operator != op {
			continue
		}
		for _, kg := range st.KeyedState {
			if kg.KeyGroup < st.KeyGroups[0] || kg.KeyGroup >= st.KeyGroups[1] {
				t.Errorf("%s holds key group %d outside its range %v", st.Participant, kg.KeyGroup, *st.KeyGroups)
			}
			for _, e := range kg.Entries {
				if e.RawKey != nil || len(e.Key) != 1 || len(e.Value) != 3 {
					t.Fatalf("%s: entry not decoded as a group: %+v", st.Participant, e)
				}
				n := func(i int) int64 {
					v, err := strconv.ParseInt(*e.Value[i].Value, 10, 64)
					if err != nil {
						t.Fatal(err)
					}
					return v
				}
				got[*e.Key[0].Value] = groupResult{n(0), n(1), n(2)}
			}
		}
	}
	return got
}

func subtasksOf(c *inspect.CheckpointSnapshot, op string) []inspect.Subtask {
	var out []inspect.Subtask
	for _, st := range c.Subtasks {
		if st.Operator == op {
			out = append(out, st)
		}
	}
	return out
}

// pins: state-cat lists the jobs of a data directory with their statement and completed checkpoints, and decodes
// the newest completed checkpoint: the source's offset and row count, the group aggregate's keyed state into the
// keys and aggregates the input gives (computed here independently), the sink's committed transaction; reading
// changes nothing in the directory.
func TestStateCatDecodesAGroupByCheckpoint(t *testing.T) {
	data, want := flushedGroupBy(t)
	before := tree(t, data)

	list := stateCat(t, inspect.Options{DataDir: data})
	if len(list.Jobs) != 1 || list.Jobs[0].ID != "job-1" || !strings.Contains(list.Jobs[0].Statement, "GROUP BY k") {
		t.Fatalf("jobs: %+v", list.Jobs)
	}
	cp := filepath.Join(data, "jobs", "job-1", "checkpoints")
	completed, err := checkpoint.CompletedIDs(state.OS, cp)
	if err != nil || len(completed) == 0 {
		t.Fatalf("completed checkpoints %v %v", completed, err)
	}
	if !slices.Equal(list.Jobs[0].Completed, completed) {
		t.Fatalf("listed checkpoints %v, the directory has %v", list.Jobs[0].Completed, completed)
	}

	r := stateCat(t, inspect.Options{DataDir: data, Job: "job-1"})
	j := r.Job
	if j.PlanError != "" || j.Checkpoint == nil || j.Checkpoint.ID != completed[len(completed)-1] {
		t.Fatalf("job: plan error %q, checkpoint %+v, want the newest of %v", j.PlanError, j.Checkpoint, completed)
	}
	// The listing carries what the job's checkpoint history says of each completed checkpoint.
	hist, _, err := checkpoint.ReadHistory(state.OS, cp)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range j.Checkpoints {
		i := slices.IndexFunc(hist, func(r checkpoint.Record) bool { return r.ID == c.ID })
		if c.Status != "completed" || i < 0 {
			continue
		}
		if c.Mode != hist[i].Mode.String() || c.Trigger == nil || !c.Trigger.Equal(hist[i].Trigger) || c.DurationMs == nil {
			t.Fatalf("checkpoint %d listed as %+v, the history has %+v", c.ID, c, hist[i])
		}
	}
	if len(hist) == 0 {
		t.Fatal("the job's checkpoint history is empty")
	}
	srcs := subtasksOf(j.Checkpoint, "source")
	var rows int64
	for _, st := range srcs {
		if st.Source == nil || st.Source.Offset.Len == 0 || st.Counts == nil {
			t.Fatalf("source subtask without an offset: %+v", st)
		}
		rows += st.Counts.Rows
		if st.Source.DecodeError != "" || fieldOf(st.Source.Position, "mode") != "bounded" {
			t.Fatalf("%s: position %+v not decoded by the file source: %s", st.Participant, st.Source.Position, st.Source.DecodeError)
		}
	}
	if len(srcs) == 0 || rows != 400 {
		t.Fatalf("sources %d read %d rows, want 400", len(srcs), rows)
	}
	if got := groupsOf(t, j.Checkpoint, "group-agg"); len(got) != len(want) {
		t.Fatalf("decoded %d groups, want %d: %v", len(got), len(want), got)
	} else {
		for k, w := range want {
			if got[k] != w {
				t.Errorf("group %s: decoded %+v, want %+v", k, got[k], w)
			}
		}
	}
	var committed int
	for _, st := range subtasksOf(j.Checkpoint, "sink") {
		for _, tx := range st.Transactions {
			if tx.State == "committed" {
				if _, err := os.Stat(tx.File); err != nil {
					t.Errorf("committed transaction %s: %v", tx.File, err)
				}
				committed++
			}
		}
	}
	if committed == 0 {
		t.Fatalf("no committed sink transaction listed")
	}

	var table bytes.Buffer
	if err := runStateCat(&table, inspect.Options{DataDir: data, Job: "job-1", Operator: "group-agg"}, "table"); err != nil {
		t.Fatal(err)
	}
	for k, w := range want {
		line := fmt.Sprintf("group k=%s: rows=%d agg0=%d agg1=%d", k, w.rows, w.count, w.sum)
		if !strings.Contains(table.String(), line) {
			t.Errorf("table output lacks %q:\n%s", line, table.String())
		}
	}
	if strings.Contains(table.String(), "source-0") {
		t.Errorf("--operator group-agg printed the source:\n%s", table.String())
	}
	sameTree(t, before, tree(t, data))
}

// pins: a checkpoint that is not completed is refused with the completed ones listed; damage to a subtask's
// snapshot or to a keyed-state table it names is an error naming the file, from the command's exit status too.
func TestStateCatRefusesUnknownCheckpointsAndDamage(t *testing.T) {
	data, _ := flushedGroupBy(t)
	cp := filepath.Join(data, "jobs", "job-1", "checkpoints")
	completed, err := checkpoint.CompletedIDs(state.OS, cp)
	if err != nil {
		t.Fatal(err)
	}
	err = runStateCat(&bytes.Buffer{}, inspect.Options{DataDir: data, Job: "job-1", Checkpoint: 999}, "json")
	if err == nil || !strings.Contains(err.Error(), "checkpoint 999") || !strings.Contains(err.Error(), idList(completed)) {
		t.Fatalf("unknown checkpoint: %v (completed %v)", err, completed)
	}
	latest := completed[len(completed)-1]

	flip := func(path string) func() {
		orig, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		bad := slices.Clone(orig)
		bad[len(bad)/2] ^= 0x40
		if err := os.WriteFile(path, bad, 0o644); err != nil {
			t.Fatal(err)
		}
		return func() { os.WriteFile(path, orig, 0o644) }
	}
	src := checkpoint.SubtaskDir(cp, latest, "source-0")
	restore := flip(src)
	err = runStateCat(&bytes.Buffer{}, inspect.Options{DataDir: data, Job: "job-1"}, "table")
	if c, ok := state.IsCorrupt(err); !ok || c.Path != src {
		t.Fatalf("damaged %s: %v", src, err)
	}
	_, stderr, ok := run(t, "state-cat", "--data-dir", data, "--job", "job-1")
	if ok || !strings.Contains(stderr, src) {
		t.Fatalf("the command exited 0 or did not name %s: %s", src, stderr)
	}
	restore()

	ssts, err := filepath.Glob(filepath.Join(cp, "shared", "group-agg-*", "*.sst"))
	if err != nil || len(ssts) == 0 {
		t.Fatalf("no keyed-state tables: %v", err)
	}
	for _, sst := range ssts {
		restore := flip(sst)
		err := runStateCat(&bytes.Buffer{}, inspect.Options{DataDir: data, Job: "job-1", Checkpoint: latest}, "json")
		restore()
		if err == nil {
			continue // a table of an older checkpoint that the newest one no longer names
		}
		if c, ok := state.IsCorrupt(err); !ok || c.Path != sst {
			t.Fatalf("damaged %s: %v", sst, err)
		}
		return
	}
	t.Fatalf("damaging every table the chains name went unnoticed: %v", ssts)
}

func fieldOf(fs []exec.StateField, name string) string {
	for _, f := range fs {
		if f.Name == name && f.Value != nil {
			return *f.Value
		}
	}
	return ""
}

func idList(ids []uint64) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.FormatUint(id, 10)
	}
	return strings.Join(s, ", ")
}

// pins: on the data directory of a running engine (its lock held), state-cat decodes the newest checkpoint - the
// open windows of a window aggregate, keyed and decoded into the keys, bounds and aggregates of the rows inserted
// (computed here) - changes no file, and the engine goes on and completes a later checkpoint whose firing
// state-cat then shows committed.
func TestStateCatOnARunningEngine(t *testing.T) {
	root := t.TempDir()
	data, out := filepath.Join(root, "data"), filepath.Join(root, "out")
	e, err := engine.Open(engine.Config{DataDir: data, AllowPaths: []string{root}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(context.Background())
	s := e.NewSession()
	execSQL(t, s, "SET checkpoint.interval = '0'") // checkpoints only at FLUSH: the directory is still between them
	execSQL(t, s, "CREATE STREAM ev (k VARCHAR, v BIGINT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts)")
	execSQL(t, s, fmt.Sprintf("CREATE SINK w (k VARCHAR, ws TIMESTAMP(3), we TIMESTAMP(3), n BIGINT, s BIGINT) WITH (connector = 'file', format = 'csv', path = '%s')", out))
	execSQL(t, s, "INSERT INTO w SELECT k, window_start, window_end, COUNT(*), SUM(v) FROM TABLE(TUMBLE(TABLE ev, DESCRIPTOR(ts), INTERVAL '1' HOUR)) GROUP BY k, window_start, window_end")

	rng := rand.New(rand.NewPCG(5, 11))
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	want := map[string]groupResult{} // the open window's groups, 02:00 to 03:00
	var vals []string
	for i := range 90 {
		ts := base.Add(time.Duration(i) * 2 * time.Minute) // 00:00 to 02:58, in order
		k := fmt.Sprintf("k%d", rng.IntN(5))
		v := rng.Int64N(100)
		vals = append(vals, fmt.Sprintf("('%s', %d, TIMESTAMP '%s')", k, v, ts.Format("2006-01-02 15:04:05")))
		if ts.Hour() == 2 {
			g := want[k]
			want[k] = groupResult{0, g.count + 1, g.sum + v}
		}
	}
	execSQL(t, s, "INSERT INTO ev VALUES "+strings.Join(vals, ", "))
	execSQL(t, s, "FLUSH")

	before := tree(t, data)
	r := stateCat(t, inspect.Options{DataDir: data, Job: "job-1"})
	sameTree(t, before, tree(t, data))
	first := r.Job.Checkpoint
	if r.Job.PlanError != "" || first == nil {
		t.Fatalf("plan error %q, checkpoint %+v", r.Job.PlanError, first)
	}
	// One INSERT is segment 1 of the stream's log: the source goes on at segment 2.
	if src := subtasksOf(first, "source"); len(src) != 1 || fieldOf(src[0].Source.Position, "segment") != "2" {
		t.Fatalf("stream source position: %+v", src)
	}
	got := map[string]groupResult{}
	for _, st := range first.Subtasks {
		for _, kg := range st.KeyedState {
			for _, en := range kg.Entries {
				if en.Kind != "window group" || len(en.Key) != 3 || len(en.Value) != 2 {
					t.Fatalf("%s: not a decoded window group: %+v", st.Participant, en)
				}
				if *en.Key[1].Value != "2026-01-01 02:00:00" || *en.Key[2].Value != "2026-01-01 03:00:00" {
					t.Errorf("a window other than the open one in state: %+v", en.Key)
				}
				c, _ := strconv.ParseInt(*en.Value[0].Value, 10, 64)
				sum, _ := strconv.ParseInt(*en.Value[1].Value, 10, 64)
				got[*en.Key[0].Value] = groupResult{0, c, sum}
			}
		}
	}
	if len(got) != len(want) {
		t.Fatalf("decoded windows %v, want %v", got, want)
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("window of %s: %+v, want %+v", k, got[k], w)
		}
	}

	// The engine goes on: a row past the window fires it at the next checkpoint.
	execSQL(t, s, "INSERT INTO ev VALUES ('k0', 1, TIMESTAMP '2026-01-01 04:00:00')")
	execSQL(t, s, "FLUSH")
	r2 := stateCat(t, inspect.Options{DataDir: data, Job: "job-1", Operator: "sink"})
	if r2.Job.Checkpoint == nil || r2.Job.Checkpoint.ID <= first.ID {
		t.Fatalf("no checkpoint after %d: %+v", first.ID, r2.Job.Checkpoint)
	}
	var fired bool
	for _, st := range r2.Job.Checkpoint.Subtasks {
		if st.Operator != "sink" {
			t.Fatalf("--operator sink showed %s", st.Participant)
		}
		for _, tx := range st.Transactions {
			if tx.Checkpoint == r2.Job.Checkpoint.ID && tx.State == "committed" {
				b, err := os.ReadFile(tx.File)
				if err != nil {
					t.Fatal(err)
				}
				fired = strings.Contains(string(b), "2026-01-01 02:00:00")
			}
		}
	}
	if !fired {
		t.Fatalf("checkpoint %d committed no file with the 02:00 window", r2.Job.Checkpoint.ID)
	}
}

// pins: the keyed state of the joins decodes into their inputs' rows: a regular join's sides hold, per key, each
// distinct row of that side with its number of copies; an interval join's sides hold every row still within reach
// of the watermark, with its row time and key; a Top-N's partitions hold their top rows with their copies.
// Expected values are computed here from the seeded input.
func TestStateCatDecodesJoinAndTopNState(t *testing.T) {
	root := t.TempDir()
	data := filepath.Join(root, "data")
	e, err := engine.Open(engine.Config{DataDir: data, AllowPaths: []string{root}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(context.Background())
	s := e.NewSession()
	execSQL(t, s, "SET checkpoint.interval = '0'")
	execSQL(t, s, "CREATE STREAM l (k BIGINT, x VARCHAR, ts TIMESTAMP(3), WATERMARK FOR ts AS ts)")
	execSQL(t, s, "CREATE STREAM r (k BIGINT, y BIGINT)")
	execSQL(t, s, fmt.Sprintf("CREATE SINK rj (k BIGINT, x VARCHAR, y BIGINT) WITH (connector = 'file', format = 'csv', path = '%s', type = 'upsert', primary_key = 'k')", filepath.Join(root, "rj")))
	execSQL(t, s, fmt.Sprintf("CREATE SINK ij (a VARCHAR, b VARCHAR) WITH (connector = 'file', format = 'csv', path = '%s')", filepath.Join(root, "ij")))
	execSQL(t, s, "INSERT INTO rj SELECT l.k, l.x, r.y FROM l JOIN r ON l.k = r.k")                                                         // job-1
	execSQL(t, s, "INSERT INTO ij SELECT p.x, q.x FROM l AS p JOIN l AS q ON p.k = q.k AND q.ts BETWEEN p.ts AND p.ts + INTERVAL '1' HOUR") // job-2
	execSQL(t, s, fmt.Sprintf("CREATE SINK tn (k BIGINT, y BIGINT, rn BIGINT) WITH (connector = 'file', format = 'csv', path = '%s', type = 'upsert', primary_key = 'k,rn')", filepath.Join(root, "tn")))
	execSQL(t, s, "INSERT INTO tn SELECT * FROM (SELECT k, y, ROW_NUMBER() OVER (PARTITION BY k ORDER BY y DESC) AS rn FROM r) WHERE rn <= 2") // job-3

	rng := rand.New(rand.NewPCG(21, 3))
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	leftCopies := map[string]int{} // "k|x" -> copies
	rightCopies := map[string]int{}
	// The interval join keeps a left row p while the watermark has not passed p.ts + 1 hour: every row here; and a
	// right row q while it has not passed q.ts: the newest row only (the watermark is the newest row time).
	leftRows, rightRows := map[string]int{}, map[string]int{} // "k|x|ts" -> rows
	var lv, rv []string
	for i := range 60 {
		k, x := rng.IntN(4), fmt.Sprintf("x%d", rng.IntN(3))
		ts := base.Add(time.Duration(i) * time.Minute).Format("2006-01-02 15:04:05")
		lv = append(lv, fmt.Sprintf("(%d, '%s', TIMESTAMP '%s')", k, x, ts))
		leftCopies[fmt.Sprintf("%d|%s", k, x)]++
		leftRows[fmt.Sprintf("%d|%s|%s", k, x, ts)]++
		if i == 59 {
			rightRows[fmt.Sprintf("%d|%s|%s", k, x, ts)]++
		}
	}
	ys := map[int][]int{}
	for range 30 {
		k, y := rng.IntN(4), rng.IntN(3)
		rv = append(rv, fmt.Sprintf("(%d, %d)", k, y))
		rightCopies[fmt.Sprintf("%d|%d", k, y)]++
		ys[k] = append(ys[k], y)
	}
	// The Top-N over an append-only input keeps its partition's 2 greatest rows, copies counted.
	topRows := map[string]int{}
	for k, v := range ys {
		slices.Sort(v)
		for _, y := range v[max(0, len(v)-2):] {
			topRows[fmt.Sprintf("%d|%d", k, y)]++
		}
	}
	execSQL(t, s, "INSERT INTO l VALUES "+strings.Join(lv, ", "))
	execSQL(t, s, "INSERT INTO r VALUES "+strings.Join(rv, ", "))
	execSQL(t, s, "FLUSH")

	// The regular join: per key and side, each distinct row with its copies.
	r := stateCat(t, inspect.Options{DataDir: data, Job: "job-1"})
	gotCopies := [2]map[string]int{{}, {}}
	for _, st := range r.Job.Checkpoint.Subtasks {
		for _, kg := range st.KeyedState {
			for _, en := range kg.Entries {
				side := map[string]int{"left rows": 0, "right rows": 1}
				sd, ok := side[en.Kind]
				if !ok || len(en.Key) != 1 {
					t.Fatalf("%s: not a decoded regular join side: %+v", st.Participant, en)
				}
				for _, v := range en.Value[1:] { // after last_write_us
					// "(k=1, x=x2) x3"
					desc := *v.Value
					cols, copies, _ := strings.Cut(strings.TrimPrefix(desc, "("), ") x")
					var vals []string
					for _, c := range strings.Split(cols, ", ") {
						_, val, _ := strings.Cut(c, "=")
						vals = append(vals, val)
					}
					if vals[0] != *en.Key[0].Value {
						t.Errorf("row %s kept under key %s", desc, *en.Key[0].Value)
					}
					n, _ := strconv.Atoi(copies)
					gotCopies[sd][vals[0]+"|"+vals[1]] += n
				}
			}
		}
	}
	for sd, want := range []map[string]int{leftCopies, rightCopies} {
		if fmt.Sprint(gotCopies[sd]) != fmt.Sprint(want) {
			t.Errorf("regular join side %d: decoded %v, want %v", sd, gotCopies[sd], want)
		}
	}

	// The interval join.
	r = stateCat(t, inspect.Options{DataDir: data, Job: "job-2"})
	got := [2]map[string]int{{}, {}}
	for _, st := range r.Job.Checkpoint.Subtasks {
		for _, kg := range st.KeyedState {
			for _, en := range kg.Entries {
				sd := map[string]int{"left row": 0, "right row": 1}[en.Kind]
				if en.Kind == "" || len(en.Key) != 2 || len(en.Value) != 5 {
					t.Fatalf("%s: not a decoded interval join row: %+v", st.Participant, en)
				}
				row := en.Value[2:] // after row_time_us, matched: k, x, ts
				if *row[0].Value != *en.Key[1].Value {
					t.Errorf("row %v kept under key %s", row, *en.Key[1].Value)
				}
				got[sd][*row[0].Value+"|"+*row[1].Value+"|"+*row[2].Value]++
			}
		}
		// The join's runner/watermarks: its two inputs', both the newest row time, as is their combination.
		if len(st.KeyedState) > 0 {
			newest := base.Add(59 * time.Minute).UnixMicro()
			if w := st.InputWatermarks; w == nil || len(w.Inputs) != 2 || w.Combined.Micros != newest ||
				w.Inputs[0].Micros != newest || w.Inputs[1].Micros != newest {
				t.Errorf("%s: input watermarks %+v, want %d for the join and both its inputs", st.Participant, w, newest)
			}
		}
	}
	for sd, want := range []map[string]int{leftRows, rightRows} {
		if fmt.Sprint(got[sd]) != fmt.Sprint(want) {
			t.Errorf("interval join side %d: decoded %v, want %v", sd, got[sd], want)
		}
	}

	r = stateCat(t, inspect.Options{DataDir: data, Job: "job-3"})
	gotTop := map[string]int{}
	for _, st := range r.Job.Checkpoint.Subtasks {
		for _, kg := range st.KeyedState {
			for _, en := range kg.Entries {
				// An append-only Top-N of small N keeps a partition as one entry: per row k, y, copies.
				if en.Kind != "top-n partition" || len(en.Key) != 1 || len(en.Value) == 0 || len(en.Value)%3 != 0 {
					t.Fatalf("%s: not a decoded Top-N partition: %+v", st.Participant, en)
				}
				for v := en.Value; len(v) > 0; v = v[3:] {
					if *en.Key[0].Value != *v[0].Value {
						t.Fatalf("%s: a row of another partition: %+v", st.Participant, en)
					}
					n, _ := strconv.Atoi(*v[2].Value)
					gotTop[*v[0].Value+"|"+*v[1].Value] += n
				}
			}
		}
	}
	if fmt.Sprint(gotTop) != fmt.Sprint(topRows) {
		t.Errorf("Top-N: decoded %v, want %v", gotTop, topRows)
	}
}
