package sqllogic

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clinksql/clinksql/engine"
	"github.com/clinksql/clinksql/sql/parser"
	"github.com/clinksql/clinksql/sqlerr"
	"github.com/clinksql/clinksql/tests/pgtest"
)

// Each file runs twice: in process (engine.Session) and over pgwire (a real `clinksql serve` process, through
// pgx's simple protocol, results as text), with the same expectations; a file marked `# pg: check` runs a third
// time against PostgreSQL 15 (postgres_test.go). SQLLOGIC_MODES=inproc, =pgwire or =postgres runs one.
const (
	modeInproc = "inproc"
	modePgwire = "pgwire"
)

func modes() []string {
	if m := os.Getenv("SQLLOGIC_MODES"); m != "" {
		return strings.Split(m, ",")
	}
	return []string{modeInproc, modePgwire, modePostgres}
}

func TestSQLLogic(t *testing.T) {
	pattern := "testdata/*.slt"
	if p := os.Getenv("SQLLOGIC_FILES"); p != "" {
		pattern = p // e.g. SQLLOGIC_FILES=/tmp/x.slt to run one file
	}
	files, err := filepath.Glob(pattern)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no .slt files")
	}
	for _, mode := range modes() {
		t.Run(mode, func(t *testing.T) {
			var newTarget func(t *testing.T, dir string) target
			switch mode {
			case modeInproc:
				newTarget = newInprocTarget
			case modePgwire:
				bin := serverBinary(t)
				newTarget = func(t *testing.T, dir string) target { return newPgwireTarget(t, bin, dir) }
			case modePostgres:
				newTarget = newPostgresTarget
			default:
				t.Fatalf("SQLLOGIC_MODES: unknown mode %q (inproc, pgwire, postgres)", mode)
			}
			total := 0
			for _, f := range files {
				if mode == modePostgres && !pgChecked(t, f) {
					continue
				}
				t.Run(strings.TrimSuffix(filepath.Base(f), ".slt"), func(t *testing.T) {
					total += runFile(t, f, newTarget)
				})
			}
			t.Logf("%d query cases", total)
		})
	}
}

// record is one directive of a file.
type record struct {
	line     int
	kind     string // statement, query, flush, sleep, restart, wait
	ok       bool
	errRE    string
	types    string
	sortMode string
	sql      string
	expected []string
	arg      string
	noticeRE string // statement ok notice <regexp>: one of the statement's notices must match
	// pgSkip is set by a `# pg: skip <why>` line before the record: the postgres mode does not run it.
	pgSkip bool
	// expFrom and expTo are the lines (0-based, [from, to)) of a query's expected rows, for SQLLOGIC_FILL.
	expFrom, expTo int
}

func parseFile(t *testing.T, path string) []record {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	var recs []record
	pgSkip := false
	for i := 0; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if strings.HasPrefix(l, "# pg: skip") {
			pgSkip = true
		}
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		fields := strings.Fields(l)
		r := record{line: i + 1, kind: fields[0], pgSkip: pgSkip}
		pgSkip = false
		switch fields[0] {
		case "statement", "query":
			if len(fields) < 2 {
				t.Fatalf("%s:%d: %s needs an argument", path, i+1, fields[0])
			}
			if fields[1] == "error" {
				r.errRE = strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(l, fields[0]), " error"))
			} else if fields[0] == "statement" {
				if fields[1] != "ok" || (len(fields) > 2 && (fields[2] != "notice" || len(fields) < 4)) {
					t.Fatalf("%s:%d: statement ok [notice <regexp>] | error <regexp>", path, i+1)
				}
				r.ok = true
				if len(fields) > 2 {
					r.noticeRE = strings.TrimSpace(l[strings.Index(l, " notice ")+len(" notice "):])
				}
			} else {
				r.types = fields[1]
				if len(fields) > 2 {
					r.sortMode = fields[2]
				}
			}
			var sql []string
			i++
			for ; i < len(lines) && strings.TrimSpace(lines[i]) != "" && strings.TrimSpace(lines[i]) != "----"; i++ {
				sql = append(sql, lines[i])
			}
			r.sql = strings.Join(sql, "\n")
			if r.kind == "query" && r.errRE == "" {
				if i >= len(lines) || strings.TrimSpace(lines[i]) != "----" {
					t.Fatalf("%s:%d: query without ----", path, r.line)
				}
				i++
				r.expFrom = i
				for ; i < len(lines) && strings.TrimSpace(lines[i]) != ""; i++ {
					r.expected = append(r.expected, strings.TrimRight(lines[i], " "))
				}
				r.expTo = i
			}
		case "flush", "restart", "wait":
		case "external":
			if len(fields) != 2 || fields[1] != "postgres" {
				t.Fatalf("%s:%d: external postgres", path, i+1)
			}
			var sql []string
			for i++; i < len(lines) && strings.TrimSpace(lines[i]) != ""; i++ {
				sql = append(sql, lines[i])
			}
			r.sql = strings.Join(sql, "\n")
		case "sleep":
			if len(fields) != 2 {
				t.Fatalf("%s:%d: sleep <duration>", path, i+1)
			}
			r.arg = fields[1]
		default:
			t.Fatalf("%s:%d: unknown directive %q", path, i+1, fields[0])
		}
		recs = append(recs, r)
	}
	return recs
}

// result is one statement's rows in Postgres text form (nil is NULL) and its column types.
type result struct {
	names   []string
	oids    []uint32
	rows    [][]*string
	notices []string
}

// target is where a file's statements run: the in-process engine or a clinksql serve process.
type target interface {
	// exec runs sql (one or more statements) and returns the result of each.
	exec(ctx context.Context, sql string) ([]result, error)
	// errorText is "<SQLSTATE> <line>:<col> <message>" (without "<line>:<col> " when err has no position), the
	// text that statement error and query error match.
	errorText(sql string, err error) string
	// describe renders an unexpected error for the test log.
	describe(where, sql string, err error) string
	// restart stops the engine (jobs stop gracefully) and opens it again on the same data directory.
	restart()
	// wait waits until every job over bounded inputs has finished.
	wait(ctx context.Context) error
	// close stops the engine for good and checks that it stopped cleanly.
	close()
}

// runFile runs one file and returns how many query cases it checked.
func runFile(t *testing.T, path string, newTarget func(t *testing.T, dir string) target) int {
	recs := parseFile(t, path)
	dir := t.TempDir()
	putWasmModules(t, path, dir)
	tg := newTarget(t, dir)
	defer tg.close()
	_, onPostgres := tg.(*postgresTarget)
	var fills map[int][]string // SQLLOGIC_FILL: Postgres' rows per case
	if onPostgres && os.Getenv("SQLLOGIC_FILL") == "1" {
		fills = map[int][]string{}
		defer func() { fillExpected(t, path, recs, fills) }()
	}
	ctx := context.Background()
	queries := 0
	var external *pgtest.Postgres // started by the first external postgres or ${PG_URL}
	startExternal := func() *pgtest.Postgres {
		if external == nil {
			external = pgtest.StartT(t, pgtest.Options{})
		}
		return external
	}
	for _, r := range recs {
		where := fmt.Sprintf("%s:%d", path, r.line)
		if onPostgres && (r.pgSkip || r.errRE != "") {
			continue
		}
		if strings.Contains(r.sql, "${PG_URL}") {
			r.sql = strings.ReplaceAll(r.sql, "${PG_URL}", startExternal().DSN())
		}
		switch r.kind {
		case "external":
			conn := startExternal().ConnectT(t)
			if _, err := conn.PgConn().Exec(ctx, r.sql).ReadAll(); err != nil {
				t.Fatalf("%s: external postgres: %v", where, err)
			}
		case "flush":
			fctx, cancel := context.WithTimeout(ctx, time.Minute)
			_, err := tg.exec(fctx, "FLUSH")
			cancel()
			if err != nil {
				t.Fatalf("%s: flush: %v", where, err)
			}
		case "sleep":
			d, err := time.ParseDuration(r.arg)
			if err != nil {
				t.Fatalf("%s: %v", where, err)
			}
			time.Sleep(d)
		case "restart":
			tg.restart()
		case "wait":
			wctx, cancel := context.WithTimeout(ctx, time.Minute)
			err := tg.wait(wctx)
			cancel()
			if err != nil {
				t.Fatalf("%s: wait: %v", where, err)
			}
		case "statement", "query":
			if r.kind == "query" && r.errRE == "" {
				queries++
			}
			qctx, cancel := context.WithTimeout(ctx, time.Minute)
			results, err := tg.exec(qctx, r.sql)
			cancel()
			if r.errRE != "" {
				if err == nil {
					t.Errorf("%s: expected error %q, got success", where, r.errRE)
					continue
				}
				got := tg.errorText(r.sql, err)
				re, rerr := regexp.Compile(r.errRE)
				if rerr != nil {
					t.Fatalf("%s: bad regexp: %v", where, rerr)
				}
				if !re.MatchString(got) {
					t.Errorf("%s: error %q does not match %q", where, got, r.errRE)
				}
				continue
			}
			if err != nil {
				t.Errorf("%s: %s\n%s", where, r.sql, tg.describe(where, r.sql, err))
				continue
			}
			if r.kind == "statement" {
				if r.noticeRE != "" {
					re, rerr := regexp.Compile(r.noticeRE)
					if rerr != nil {
						t.Fatalf("%s: bad regexp: %v", where, rerr)
					}
					var notices []string
					for _, res := range results {
						notices = append(notices, res.notices...)
					}
					if !slices.ContainsFunc(notices, re.MatchString) {
						t.Errorf("%s: no notice matches %q; notices: %q", where, r.noticeRE, notices)
					}
				}
				continue
			}
			if len(results) != 1 {
				t.Errorf("%s: a query gave %d results", where, len(results))
				continue
			}
			res := results[0]
			if len(res.oids) != len(r.types) {
				t.Errorf("%s: %d columns, types %q", where, len(res.oids), r.types)
				continue
			}
			got := formatRows(maskColumns(res.rows, r.types), r.sortMode)
			if fills != nil {
				fills[r.line] = got
				continue
			}
			want := r.expected
			if r.sortMode == "valuesort" {
				want = sortedValues(want)
			} else if r.sortMode == "rowsort" {
				want = append([]string(nil), want...)
				sort.Strings(want)
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("%s: %s\n got:\n%s\nwant:\n%s", where, r.sql, strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		}
	}
	return queries
}

// inprocTarget runs statements through engine.Session, as the CLI does.
type inprocTarget struct {
	t    *testing.T
	dir  string
	mem  *memory.CheckedAllocator
	e    *engine.Engine
	sess *engine.Session
}

func newInprocTarget(t *testing.T, dir string) target {
	p := &inprocTarget{t: t, dir: dir, mem: memory.NewCheckedAllocator(memory.NewGoAllocator())}
	p.open()
	return p
}

func (p *inprocTarget) open() {
	e, err := engine.Open(engine.Config{DataDir: p.dir, Alloc: p.mem, Testing: true})
	if err != nil {
		p.t.Fatalf("open engine: %v", err)
	}
	p.e, p.sess = e, e.NewSession()
}

func (p *inprocTarget) closeEngine() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := p.e.Close(ctx); err != nil {
		p.t.Errorf("close engine: %v", err)
	}
}

func (p *inprocTarget) exec(ctx context.Context, sql string) ([]result, error) {
	results, err := p.sess.Execute(ctx, sql)
	if err != nil {
		return nil, err
	}
	out := make([]result, len(results))
	for i, r := range results {
		for _, c := range r.Columns {
			out[i].names = append(out[i].names, c.Name)
			out[i].oids = append(out[i].oids, c.OID)
		}
		out[i].rows = r.Rows
		out[i].notices = r.Notices
	}
	return out, nil
}

func (p *inprocTarget) errorText(sql string, err error) string {
	e := sqlerr.As(err)
	if e.Pos == sqlerr.NoPos {
		return e.Code + " " + e.Msg
	}
	pos := parser.PositionOf(sql, e.Pos)
	return fmt.Sprintf("%s %d:%d %s", e.Code, pos.Line, pos.Col, e.Msg)
}

func (p *inprocTarget) describe(where, sql string, err error) string {
	return engine.FormatError(where, sql, err)
}

func (p *inprocTarget) restart() {
	p.closeEngine()
	p.open()
}

func (p *inprocTarget) wait(ctx context.Context) error { return p.e.WaitBounded(ctx, nil) }

func (p *inprocTarget) close() {
	p.closeEngine()
	p.mem.AssertSize(p.t, 0)
}

// maskColumns replaces the values of the columns typed X (a value that varies from run to run, as SUBSCRIBE's
// logical time) by "*", which the expected rows write in their place.
func maskColumns(rows [][]*string, types string) [][]*string {
	if !strings.Contains(types, "X") {
		return rows
	}
	star := "*"
	out := make([][]*string, len(rows))
	for i, row := range rows {
		out[i] = slices.Clone(row)
		for j := range out[i] {
			if j < len(types) && types[j] == 'X' {
				out[i][j] = &star
			}
		}
	}
	return out
}

func formatRows(rows [][]*string, mode string) []string {
	var out []string
	if mode == "valuesort" {
		for _, row := range rows {
			for _, v := range row {
				out = append(out, formatValue(v))
			}
		}
		sort.Strings(out)
		return out
	}
	for _, row := range rows {
		vals := make([]string, len(row))
		for i, v := range row {
			vals[i] = formatValue(v)
		}
		out = append(out, strings.Join(vals, " "))
	}
	if mode == "rowsort" {
		sort.Strings(out)
	}
	return out
}

func sortedValues(lines []string) []string {
	var out []string
	for _, l := range lines {
		out = append(out, strings.Fields(l)...)
	}
	sort.Strings(out)
	return out
}

func formatValue(v *string) string {
	switch {
	case v == nil:
		return "NULL"
	case *v == "":
		return "(empty)"
	}
	return *v
}
