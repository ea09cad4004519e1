package corrupt

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/clinksql/clinksql/tests/clients/testserver"
)

var bin string

func TestMain(m *testing.M) { testserver.Main(m, &bin) }

func seed() int64 {
	if s, err := strconv.ParseInt(os.Getenv("CORRUPT_SEED"), 10, 64); err == nil {
		return s
	}
	return 1
}

// answers is what the probes saw.
type answers struct {
	stream, view, viewAfter []string
	refused                 string // a server that would not start: its output
	errs                    []string
	output                  string // the server's output
}

func connect(t *testing.T, s *testserver.Server) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, s.URL())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// query returns the rows as "a|b" lines, or the error.
func query(c *pgx.Conn, sql string) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rs, err := c.Query(ctx, sql, pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var out []string
	for rs.Next() {
		vals, err := rs.Values()
		if err != nil {
			return nil, err
		}
		parts := make([]string, len(vals))
		for i, v := range vals {
			parts[i] = fmt.Sprint(v)
		}
		out = append(out, strings.Join(parts, "|"))
	}
	return out, rs.Err()
}

func exec(t *testing.T, c *pgx.Conn, sql string) {
	t.Helper()
	if _, err := query(c, sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// insertRows is one seeded INSERT of n rows into s.
func insertRows(rng *rand.Rand, n int) string {
	var vals []string
	for i := 0; i < n; i++ {
		vals = append(vals, fmt.Sprintf("(%d, %d)", rng.Intn(5), rng.Intn(1000)-200))
	}
	return "INSERT INTO s VALUES " + strings.Join(vals, ", ")
}

// setup builds the data directory every case damages a copy of.
func setup(t *testing.T, rng *rand.Rand) string {
	dir := t.TempDir()
	srv, err := testserver.Start(bin, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Kill()
	c := connect(t, srv)
	defer c.Close(context.Background())
	exec(t, c, `SET checkpoint.interval = '0'`)
	exec(t, c, `CREATE STREAM s (k BIGINT, x BIGINT)`)
	exec(t, c, insertRows(rng, 20))
	exec(t, c, `CREATE MATERIALIZED VIEW v AS SELECT k, COUNT(*) AS n, SUM(x) AS sx FROM s GROUP BY k`)
	// Checkpoints: a delta chain, retention and HIGHWATER, and past 16 checkpoints a re-based chain (a Pebble
	// checkpoint as its base) with deltas after it.
	for i := 0; i < 19; i++ {
		exec(t, c, insertRows(rng, 3))
		exec(t, c, `FLUSH`)
	}
	c.Close(context.Background())
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// probe starts the server on dir and runs the probes; insert is the statement run before the last one.
func probe(t *testing.T, dir, insert string) (a answers) {
	srv, err := testserver.Start(bin, dir)
	if err != nil {
		a.refused = err.Error()
		return a
	}
	defer func() {
		if err := srv.Stop(); err != nil {
			a.errs = append(a.errs, "stop: "+lastLine(err.Error()))
		}
		a.output = srv.Output()
	}()
	c := connect(t, srv)
	defer c.Close(context.Background())
	record := func(rows []string, err error) []string {
		if err != nil {
			return []string{"ERROR " + errText(err)}
		}
		return rows
	}
	a.stream = record(query(c, `SELECT COUNT(*), SUM(x), SUM(k * x) FROM s`))
	a.view = record(query(c, `SELECT k, n, sx FROM v ORDER BY k`))
	if jobs, err := query(c, `SHOW JOBS`); err == nil {
		for _, j := range jobs {
			f := strings.Split(j, "|")
			if f[2] != "RUNNING" && f[2] != "FINISHED" {
				a.errs = append(a.errs, fmt.Sprintf("job %s %s: %s", f[0], f[2], f[10]))
			}
		}
	} else {
		a.errs = append(a.errs, "SHOW JOBS: "+errText(err))
	}
	if _, err := query(c, insert); err != nil {
		a.errs = append(a.errs, "INSERT: "+errText(err))
	}
	if _, err := query(c, `FLUSH`); err != nil {
		a.errs = append(a.errs, "FLUSH: "+errText(err))
	}
	a.viewAfter = record(query(c, `SELECT k, n, sx FROM v ORDER BY k`))
	return a
}

func errText(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code + " " + pe.Message
	}
	return err.Error()
}

// A file kind: how to find one file of that kind in the set-up directory (its path relative to the directory).
type kind struct {
	name string
	find func(dir string, rng *rand.Rand) (string, error)
	// deleteAll, when set, makes the kind's only damage the deletion of every match of these patterns (the
	// first one is what the error must name): a whole directory, or every checkpoint at once.
	deleteAll []string
}

func glob(dir, pattern string, rng *rand.Rand) (string, error) {
	ms, err := filepath.Glob(filepath.Join(dir, pattern))
	if err != nil {
		return "", err
	}
	if len(ms) == 0 {
		return "", fmt.Errorf("no %s", pattern)
	}
	sort.Strings(ms)
	return filepath.Rel(dir, ms[rng.Intn(len(ms))])
}

// latestChk is the newest checkpoint directory of job-1 with a COMPLETED marker.
func latestChk(dir string) (string, error) {
	ms, _ := filepath.Glob(filepath.Join(dir, "jobs/job-1/checkpoints/COMPLETED-*"))
	best := -1
	for _, m := range ms {
		if n, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(m), "COMPLETED-")); err == nil && n > best {
			best = n
		}
	}
	if best < 0 {
		return "", errors.New("no completed checkpoint")
	}
	return filepath.Join("jobs/job-1/checkpoints", "chk-"+strconv.Itoa(best)), nil
}

// snapshotFile picks a participant snapshot of the latest checkpoint: keyed (a chain listing) or not.
func snapshotFile(keyed bool) func(string, *rand.Rand) (string, error) {
	return func(dir string, rng *rand.Rand) (string, error) {
		chk, err := latestChk(dir)
		if err != nil {
			return "", err
		}
		es, err := os.ReadDir(filepath.Join(dir, chk))
		if err != nil {
			return "", err
		}
		var picks []string
		for _, e := range es {
			data, err := os.ReadFile(filepath.Join(dir, chk, e.Name()))
			if err != nil || strings.HasSuffix(e.Name(), ".inflight") {
				continue
			}
			if strings.Contains(string(data), "clinksql-chain") == keyed {
				picks = append(picks, filepath.Join(chk, e.Name()))
			}
		}
		if len(picks) == 0 {
			return "", fmt.Errorf("no %v snapshot in %s", keyed, chk)
		}
		return picks[rng.Intn(len(picks))], nil
	}
}

var kinds = []kind{
	{"catalog", func(dir string, rng *rand.Rand) (string, error) { return "catalog/catalog.json", nil }, nil},
	{"stream segment", func(dir string, rng *rand.Rand) (string, error) { return glob(dir, "streams/*/seg-*", rng) }, nil},
	{"stream LAST", func(dir string, rng *rand.Rand) (string, error) { return glob(dir, "streams/*/LAST", rng) }, nil},
	{"view segment", func(dir string, rng *rand.Rand) (string, error) { return glob(dir, "views/*/seg-*", rng) }, nil},
	{"view LAST", func(dir string, rng *rand.Rand) (string, error) { return glob(dir, "views/*/LAST", rng) }, nil},
	{"COMPLETED marker", func(dir string, rng *rand.Rand) (string, error) {
		chk, err := latestChk(dir)
		return strings.Replace(chk, "chk-", "COMPLETED-", 1), err
	}, nil},
	{"HIGHWATER", func(dir string, rng *rand.Rand) (string, error) {
		return glob(dir, "jobs/job-1/checkpoints/HIGHWATER", rng)
	}, nil},
	{"checkpoint history", func(dir string, rng *rand.Rand) (string, error) {
		return glob(dir, "jobs/job-1/checkpoints/history", rng)
	}, nil},
	{"small-state snapshot (offsets)", snapshotFile(false), nil},
	{"keyed-state chain listing", snapshotFile(true), nil},
	{"keyed-state delta sstable", func(dir string, rng *rand.Rand) (string, error) {
		// One the latest checkpoint's listing names (older deltas linger until the next re-base collects them).
		listing, err := snapshotFile(true)(dir, rng)
		if err != nil {
			return "", err
		}
		data, err := os.ReadFile(filepath.Join(dir, listing))
		if err != nil {
			return "", err
		}
		ds := regexp.MustCompile(`delta (\S+)`).FindAllStringSubmatch(string(data), -1)
		if len(ds) == 0 {
			return "", fmt.Errorf("%s names no delta", listing)
		}
		return filepath.Join(filepath.Dir(listing), ds[rng.Intn(len(ds))][1]), nil
	}, nil},
	{"keyed-state base table", func(dir string, rng *rand.Rand) (string, error) {
		return glob(dir, "jobs/job-1/checkpoints/shared/*/base-*/*.sst", rng)
	}, nil},
	{"keyed-state base MANIFEST", func(dir string, rng *rand.Rand) (string, error) {
		return glob(dir, "jobs/job-1/checkpoints/shared/*/base-*/MANIFEST-*", rng)
	}, nil},
	{"keyed-state base OPTIONS", func(dir string, rng *rand.Rand) (string, error) {
		return glob(dir, "jobs/job-1/checkpoints/shared/*/base-*/OPTIONS-*", rng)
	}, nil},
	// Issue 11's first case: every checkpoint of the job deleted while stopped.
	{"every checkpoint of the job", nil, []string{"jobs/job-1/checkpoints", "jobs/job-1/checkpoints/chk-*", "jobs/job-1/checkpoints/COMPLETED-*"}},
	{"the job's directory", nil, []string{"jobs/job-1"}},
	{"the stream's directory", nil, []string{"streams/s-1"}},
	{"the view's directory", nil, []string{"views/v-2"}},
}

type damage struct {
	name string
	do   func(path string, rng *rand.Rand) error
}

var damages = []damage{
	{"delete", func(p string, _ *rand.Rand) error { return os.Remove(p) }},
	{"truncate", func(p string, rng *rand.Rand) error {
		fi, err := os.Stat(p)
		if err != nil {
			return err
		}
		return os.Truncate(p, rng.Int63n(fi.Size()))
	}},
	{"flip a byte", func(p string, rng *rand.Rand) error {
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		data[rng.Intn(len(data))] ^= byte(1 + rng.Intn(255))
		return os.WriteFile(p, data, 0o644)
	}},
}

// verdict classifies a damaged run against the undamaged one; ok false is a wrong answer or an error that does
// not name the damaged file.
func verdict(want, got answers, file string) (outcome string, ok bool) {
	// A missing segment is named by its sequence number (the log cannot know the rest of a name it never saw).
	stem := file
	if i := strings.Index(file, "/seg-"); i >= 0 && len(file) >= i+len("/seg-")+20 {
		stem = file[:i+len("/seg-")+20]
	}
	names := func(s string) bool { return strings.Contains(s, file) || strings.Contains(s, stem) }
	if got.refused != "" {
		if names(got.refused) {
			return "refused to start, names the file", true
		}
		return "refused to start WITHOUT naming the file: " + lastLine(got.refused), false
	}
	var notes []string
	checkRows := func(what string, w, g []string) bool {
		if slices.Equal(w, g) {
			return true
		}
		if len(g) == 1 && strings.HasPrefix(g[0], "ERROR XX001") && names(g[0]) {
			notes = append(notes, what+" XX001")
			return true
		}
		notes = append(notes, fmt.Sprintf("%s WRONG: got %q want %q", what, g, w))
		return false
	}
	ok = checkRows("stream", want.stream, got.stream)
	jobFailed, flushFailed := false, false
	for _, e := range got.errs {
		switch {
		case strings.HasPrefix(e, "job ") && names(e) && strings.Contains(e, "FAILED"):
			jobFailed = true
			notes = append(notes, "job FAILED naming the file")
		case strings.HasPrefix(e, "FLUSH: ") && jobFailed:
			// FLUSH may report the failed job
		case strings.Contains(e, "XX001") && names(e):
			// A FLUSH that fails naming the file: the job met the damage after SHOW JOBS saw it running (a
			// lookup or a background compaction reached the damaged block), and failed.
			flushFailed = flushFailed || strings.HasPrefix(e, "FLUSH: ")
			notes = append(notes, strings.SplitN(e, ":", 2)[0]+" XX001")
		default:
			ok = false
			notes = append(notes, "UNEXPECTED "+e)
		}
	}
	ok = checkRows("view", want.view, got.view) && ok
	afterWant := want.viewAfter
	if jobFailed || flushFailed {
		afterWant = want.view // the failed job publishes nothing more; the view keeps its committed rows
	}
	ok = checkRows("view after insert", afterWant, got.viewAfter) && ok
	if len(notes) == 0 {
		return "same answers", ok
	}
	return strings.Join(notes, "; "), ok
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// Pins issue 11's corruption suite: for every durable file kind and every damage, a restart either answers as
// before or refuses naming the file.
func TestDamagedDataDirectory(t *testing.T) {
	s := seed()
	rng := rand.New(rand.NewSource(s))
	base := setup(t, rng)
	insert := insertRows(rng, 7)

	// The undamaged answers (each probe changes its directory: run it on a copy).
	clean := t.TempDir()
	if err := os.CopyFS(clean, os.DirFS(base)); err != nil {
		t.Fatal(err)
	}
	want := probe(t, clean, insert)
	if want.refused != "" || len(want.errs) > 0 || slices.Equal(want.view, want.viewAfter) {
		t.Fatalf("undamaged run: %+v", want)
	}

	// Every case on its own copy, two at a time (each starts and stops a server).
	var matrix []string
	failed := false
	var mu sync.Mutex
	t.Run("cases", func(t *testing.T) {
		for ki, k := range kinds {
			for di, d := range damages {
				caseSeed := s*1000 + int64(ki*len(damages)+di)
				if only := os.Getenv("CORRUPT_CASE"); only != "" && !strings.Contains(k.name+"/"+d.name, only) {
					continue
				}
				if k.deleteAll != nil && d.name != "delete" {
					continue
				}
				t.Run(k.name+"/"+d.name, func(t *testing.T) {
					t.Parallel()
					caseRng := rand.New(rand.NewSource(caseSeed))
					dir := t.TempDir()
					if err := os.CopyFS(dir, os.DirFS(base)); err != nil {
						t.Fatal(err)
					}
					var rel string
					if k.deleteAll != nil {
						rel = k.deleteAll[0]
						for _, pattern := range k.deleteAll[1:] {
							ms, _ := filepath.Glob(filepath.Join(dir, pattern))
							if len(ms) == 0 {
								t.Fatalf("%s: nothing matches %s", k.name, pattern)
							}
							for _, m := range ms {
								if err := os.RemoveAll(m); err != nil {
									t.Fatal(err)
								}
							}
						}
						if len(k.deleteAll) == 1 {
							if err := os.RemoveAll(filepath.Join(dir, rel)); err != nil {
								t.Fatal(err)
							}
						}
					} else {
						var err error
						if rel, err = k.find(dir, caseRng); err != nil {
							t.Fatalf("%s: %v", k.name, err)
						}
						if err := d.do(filepath.Join(dir, rel), caseRng); err != nil {
							t.Fatalf("%s %s: %v", d.name, rel, err)
						}
					}
					got := probe(t, dir, insert)
					outcome, ok := verdict(want, got, rel)
					mark := "ok  "
					if !ok {
						mark = "FAIL"
						t.Logf("server output:\n%s", got.output)
					}
					mu.Lock()
					defer mu.Unlock()
					failed = failed || !ok
					matrix = append(matrix, fmt.Sprintf("%s | %-32s | %-11s | %-62s | %s", mark, k.name, d.name, rel, outcome))
				})
			}
		}
	})
	sort.Slice(matrix, func(i, j int) bool { return matrix[i][7:] < matrix[j][7:] })
	t.Logf("seed %d: file kind x damage x outcome\n%s", s, strings.Join(matrix, "\n"))
	if failed {
		t.Fatal("a damaged data directory gave a different answer or an error that does not name the file (FAIL rows above)")
	}
}
