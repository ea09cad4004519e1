package difftest

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/clinksql/clinksql/engine"
	"github.com/clinksql/clinksql/sqlerr"
)

// Outcome is what one engine made of a query: rows, or an error with its SQLSTATE.
type Outcome struct {
	Rows Rows
	Code string // SQLSTATE when Err != nil
	Err  error
	// AtCreate: the error came from CREATE MATERIALIZED VIEW (planning), not from the running view.
	AtCreate bool
}

func (o Outcome) String() string {
	if o.Err != nil {
		return fmt.Sprintf("ERROR %s: %v", o.Code, o.Err)
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "%d rows", len(o.Rows))
	for i, r := range o.Rows {
		if i == 50 {
			fmt.Fprintf(&sb, "\n  ... %d more", len(o.Rows)-50)
			break
		}
		vals := make([]string, len(r))
		for j, v := range r {
			if v == nil {
				vals[j] = "NULL"
			} else {
				vals[j] = fmt.Sprintf("%q", *v)
			}
		}
		sb.WriteString("\n  " + strings.Join(vals, " | "))
	}
	return sb.String()
}

// Runner runs generated queries on clinksql (an in-process engine session) and on Postgres, and compares them.
type Runner struct {
	CK   *engine.Session
	PG   *pgx.Conn
	Gaps Gaps
	// Timeout bounds each statement.
	Timeout time.Duration

	views int // materialized views created so far (their names are v<n>)
	// GapHits counts results accepted only because of a gap in force.
	GapHits map[Gap]int
}

// NewRunner returns a runner; PGSetup must have run on pg.
func NewRunner(ck *engine.Session, pg *pgx.Conn, gaps Gaps) *Runner {
	return &Runner{CK: ck, PG: pg, Gaps: gaps, Timeout: time.Minute, GapHits: map[Gap]int{}}
}

// ExecCK runs statements on clinksql.
func (r *Runner) ExecCK(ctx context.Context, sql string) ([]*engine.Result, error) {
	ctx, cancel := context.WithTimeout(ctx, r.Timeout)
	defer cancel()
	return r.CK.Execute(ctx, sql)
}

// ExecPG runs statements on Postgres (simple protocol).
func (r *Runner) ExecPG(ctx context.Context, sql string) error {
	ctx, cancel := context.WithTimeout(ctx, r.Timeout)
	defer cancel()
	_, err := r.PG.PgConn().Exec(ctx, sql).ReadAll()
	return err
}

// QueryCK runs one query on clinksql.
func (r *Runner) QueryCK(ctx context.Context, sql string) Outcome {
	res, err := r.ExecCK(ctx, sql)
	if err != nil {
		return Outcome{Err: err, Code: sqlerr.As(err).Code}
	}
	if len(res) != 1 {
		return Outcome{Err: fmt.Errorf("%d results", len(res)), Code: "harness"}
	}
	return Outcome{Rows: res[0].Rows}
}

// QueryPG runs one query on Postgres, values in text form.
func (r *Runner) QueryPG(ctx context.Context, sql string) Outcome {
	ctx, cancel := context.WithTimeout(ctx, r.Timeout)
	defer cancel()
	res, err := r.PG.PgConn().Exec(ctx, sql).ReadAll()
	if err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) {
			return Outcome{Err: err, Code: pe.Code}
		}
		return Outcome{Err: err, Code: "harness"}
	}
	if len(res) != 1 {
		return Outcome{Err: fmt.Errorf("%d results", len(res)), Code: "harness"}
	}
	var rows Rows
	for _, row := range res[0].Rows {
		vals := make([]*string, len(row))
		for i, v := range row {
			if v != nil {
				s := string(v)
				vals[i] = &s
			}
		}
		rows = append(rows, vals)
	}
	return Outcome{Rows: rows}
}

// Load (re)creates tables on both sides and inserts their rows.
func (r *Runner) Load(ctx context.Context, tables []Table) error {
	for _, t := range tables {
		ck, pg := CreateSQL(t.Name)
		if _, err := r.ExecCK(ctx, "DROP STREAM IF EXISTS "+t.Name+" CASCADE; "+ck); err != nil {
			return fmt.Errorf("clinksql: %s: %v", ck, err)
		}
		if err := r.ExecPG(ctx, "DROP TABLE IF EXISTS "+t.Name+"; "+pg); err != nil {
			return fmt.Errorf("postgres: %s: %v", pg, err)
		}
		ins := InsertSQL(t.Name, t.Rows)
		if _, err := r.ExecCK(ctx, ins); err != nil {
			return fmt.Errorf("clinksql: %s: %v", ins, err)
		}
		if err := r.ExecPG(ctx, ins); err != nil {
			return fmt.Errorf("postgres: %s: %v", ins, err)
		}
	}
	return nil
}

// Mode is how clinksql ran a query.
type Mode string

const (
	AdHoc Mode = "ad hoc"
	View  Mode = "materialized view"
)

// Verdict compares clinksql's outcome of q in mode with Postgres'. It returns "" when they agree:
//   - both gave rows, equal as multisets (Normalize);
//   - Postgres raised a data error (class 22) and, ad hoc, clinksql raised one too (any 22 code). A view runs with
//     errors.mode 'null' (the default): a bad value becomes NULL and the job goes on, so where Postgres fails the
//     view must build and run without error (its rows are not compared), or fail at CREATE with a data error (a
//     constant expression that fails while planning, as Postgres' planner fails on it too).
//
// Otherwise it says what differs. A Postgres error of another class is the generator's fault, reported as such.
func (r *Runner) Verdict(q Query, mode Mode, pg, ck Outcome) string {
	if pg.Err != nil && !strings.HasPrefix(pg.Code, "22") {
		return "generator: Postgres rejected the query: " + pg.String()
	}
	if pg.Err != nil {
		if mode == View {
			if ck.Err != nil && !(ck.AtCreate && strings.HasPrefix(ck.Code, "22")) {
				return "Postgres raised " + pg.Code + "; the view (errors.mode null) failed: " + ck.Code
			}
			return ""
		}
		if ck.Err == nil {
			if q.FloatAvg && pg.Code == "22003" && r.Gaps[GapAvgFloatSquares] {
				r.GapHits[GapAvgFloatSquares]++
				return ""
			}
			return "Postgres raised " + pg.Code + ", clinksql gave rows"
		}
		if !strings.HasPrefix(ck.Code, "22") {
			return "Postgres raised " + pg.Code + ", clinksql " + ck.Code + " (not a data error)"
		}
		return ""
	}
	if ck.Err != nil {
		if mode == AdHoc && q.OuterJoin && strings.HasPrefix(ck.Code, "22") && r.Gaps[GapTransientRowError] {
			r.GapHits[GapTransientRowError]++
			return ""
		}
		return "Postgres gave rows, clinksql raised " + ck.Code
	}
	rules := ColumnRules{Approx: q.Approx, Real: q.Real, Numeric: q.Numeric, NegZero: r.Gaps[GapNegativeZero],
		TrimNumeric: r.Gaps[GapNumericScaleMix]}
	a := Normalize(pg.Rows, rules)
	b := Normalize(ck.Rows, rules)
	onlyPG, onlyCK := Diff(a, b)
	if len(onlyPG) == 0 && len(onlyCK) == 0 {
		return ""
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "rows differ (%d in Postgres, %d in clinksql)", len(pg.Rows), len(ck.Rows))
	for i, l := range onlyPG {
		if i == 20 {
			sb.WriteString("\n    ...")
			break
		}
		sb.WriteString("\n    only in Postgres: " + l)
	}
	for i, l := range onlyCK {
		if i == 20 {
			sb.WriteString("\n    ...")
			break
		}
		sb.WriteString("\n    only in clinksql: " + l)
	}
	return sb.String()
}

// Case is one query's run in one mode.
type Case struct {
	Q       Query
	Mode    Mode
	PG, CK  Outcome
	Verdict string
}

// RunAdHoc runs q on Postgres and as an ad-hoc SELECT on clinksql.
func (r *Runner) RunAdHoc(ctx context.Context, q Query) Case {
	c := Case{Q: q, Mode: AdHoc, PG: r.QueryPG(ctx, q.PG), CK: r.QueryCK(ctx, q.CK)}
	c.Verdict = r.Verdict(q, AdHoc, c.PG, c.CK)
	r.foldingGap(ctx, &c)
	return c
}

// foldingGap clears c's verdict when GapConstantFolding explains it: one engine raised a data error while
// planning alone (EXPLAIN raises it too) and the other gave rows.
func (r *Runner) foldingGap(ctx context.Context, c *Case) {
	if c.Verdict == "" || !r.Gaps[GapConstantFolding] {
		return
	}
	planErr := func(o Outcome) bool { return o.Err != nil && strings.HasPrefix(o.Code, "22") }
	switch {
	case planErr(c.PG) && c.CK.Err == nil:
		if plan := r.QueryPG(ctx, "EXPLAIN "+c.Q.PG); plan.Err == nil || plan.Code != c.PG.Code {
			return
		}
	case planErr(c.CK) && c.PG.Err == nil:
		if !c.CK.AtCreate {
			if plan := r.QueryCK(ctx, "EXPLAIN "+c.Q.CK); plan.Err == nil || plan.Code != c.CK.Code {
				return
			}
		}
	default:
		return
	}
	r.GapHits[GapConstantFolding]++
	c.Verdict = ""
}

// RunViews runs each query as a materialized view: all are created, one FLUSH, then each is read and dropped.
// pg holds each query's Postgres outcome.
func (r *Runner) RunViews(ctx context.Context, qs []Query, pg []Outcome) []Case {
	cases := make([]Case, len(qs))
	names := make([]string, len(qs))
	for i, q := range qs {
		cases[i] = Case{Q: q, Mode: View, PG: pg[i]}
		r.views++
		names[i] = fmt.Sprintf("v%d", r.views)
		if _, err := r.ExecCK(ctx, "CREATE MATERIALIZED VIEW "+names[i]+" AS "+q.CK); err != nil {
			cases[i].CK = Outcome{Err: err, Code: sqlerr.As(err).Code, AtCreate: true}
			names[i] = ""
		}
	}
	if _, err := r.ExecCK(ctx, "FLUSH"); err != nil {
		for i := range cases {
			if names[i] != "" {
				cases[i].CK = Outcome{Err: fmt.Errorf("FLUSH: %w", err), Code: sqlerr.As(err).Code}
			}
		}
	} else {
		for i := range cases {
			if names[i] != "" {
				cases[i].CK = r.QueryCK(ctx, "SELECT * FROM "+names[i])
			}
		}
	}
	for i := range cases {
		if names[i] != "" {
			if _, err := r.ExecCK(ctx, "DROP MATERIALIZED VIEW "+names[i]); err != nil && cases[i].CK.Err == nil {
				cases[i].CK = Outcome{Err: fmt.Errorf("DROP: %w", err), Code: sqlerr.As(err).Code}
			}
		}
		cases[i].Verdict = r.Verdict(cases[i].Q, View, cases[i].PG, cases[i].CK)
		r.foldingGap(ctx, &cases[i])
	}
	return cases
}

// Rerun runs c's query again in c's mode (one view alone) and returns the new case.
func (r *Runner) Rerun(ctx context.Context, q Query, mode Mode) Case {
	if mode == AdHoc {
		return r.RunAdHoc(ctx, q)
	}
	pg := r.QueryPG(ctx, q.PG)
	return r.RunViews(ctx, []Query{q}, []Outcome{pg})[0]
}

var tableRef = regexp.MustCompile(`\bt([0-9])\b`)

// Rename rewrites the table names t<i> of q to prefix_t<i>.
func Rename(q Query, prefix string) Query {
	q.CK = tableRef.ReplaceAllString(q.CK, prefix+"_t$1")
	q.PG = tableRef.ReplaceAllString(q.PG, prefix+"_t$1")
	var ts []string
	for _, t := range q.Tables {
		ts = append(ts, prefix+"_"+t)
	}
	q.Tables = ts
	return q
}

// Minimize shrinks the rows of the tables q reads while its verdict in mode stays a mismatch (at most budget
// reruns, on copies of the tables under fresh names), and returns the smallest tables and that run.
func (r *Runner) Minimize(ctx context.Context, q Query, mode Mode, tables []Table, budget int) ([]Table, Case) {
	byName := map[string]Table{}
	for _, t := range tables {
		byName[t.Name] = t
	}
	var cur []Table
	for _, name := range uniq(q.Tables) {
		cur = append(cur, byName[name])
	}
	attempt := 0
	try := func(cand []Table) (Case, bool) {
		attempt++
		prefix := fmt.Sprintf("m%d", attempt)
		renamed := make([]Table, len(cand))
		for i, t := range cand {
			renamed[i] = Table{Name: prefix + "_" + t.Name, Rows: t.Rows}
		}
		if err := r.Load(ctx, renamed); err != nil {
			return Case{Verdict: err.Error()}, false
		}
		c := r.Rerun(ctx, Rename(q, prefix), mode)
		for _, t := range renamed {
			_, _ = r.ExecCK(ctx, "DROP STREAM "+t.Name+" CASCADE")
			_ = r.ExecPG(ctx, "DROP TABLE "+t.Name)
		}
		return c, c.Verdict != "" && !strings.HasPrefix(c.Verdict, "generator")
	}
	best, ok := try(cur)
	if !ok {
		return cur, best // not reproducible alone: report the full tables
	}
	for ti := range cur {
		// the last row is the sentinel that moves the watermark: kept
		for chunk := (len(cur[ti].Rows) - 1) / 2; chunk >= 1 && attempt < budget; chunk /= 2 {
			for start := 0; start+chunk <= len(cur[ti].Rows)-1 && attempt < budget; {
				cand := slicesClone(cur)
				rows := append([][]string(nil), cur[ti].Rows[:start]...)
				cand[ti] = Table{Name: cur[ti].Name, Rows: append(rows, cur[ti].Rows[start+chunk:]...)}
				if c, ok := try(cand); ok {
					cur, best = cand, c
				} else {
					start += chunk
				}
			}
		}
	}
	return cur, best
}

func uniq(xs []string) []string {
	var out []string
	for _, x := range xs {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

func slicesClone(ts []Table) []Table { return append([]Table(nil), ts...) }

// Repro is a script that reproduces c on clinksql with tables (Postgres: the same with CREATE TABLE and q.PG).
func Repro(c Case, tables []Table) string {
	var sb strings.Builder
	for _, t := range tables {
		ck, _ := CreateSQL(t.Name)
		sb.WriteString(ck + ";\n" + InsertSQL(t.Name, t.Rows) + ";\n")
	}
	if c.Mode == View {
		sb.WriteString("CREATE MATERIALIZED VIEW v AS " + c.Q.CK + ";\nFLUSH;\nSELECT * FROM v;\n")
	} else {
		sb.WriteString(c.Q.CK + ";\n")
	}
	sb.WriteString("-- Postgres:\n")
	for _, t := range tables {
		_, pg := CreateSQL(t.Name)
		sb.WriteString("-- " + pg + ";\n")
	}
	sb.WriteString("-- (the same INSERTs)\n-- " + c.Q.PG + ";\n")
	return sb.String()
}
