package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	dto "github.com/prometheus/client_model/go"

	"github.com/clinksql/clinksql/engine"
	"github.com/clinksql/clinksql/internal/enginetest"
	"github.com/clinksql/clinksql/internal/promtest"
	"github.com/clinksql/clinksql/pgwire"
)

// metricSpec is one metric of the contract (issue13-contract.md, docs/operations.md): its type and label names.
type metricSpec struct {
	typ    dto.MetricType
	labels []string
}

var (
	counter   = dto.MetricType_COUNTER
	gauge     = dto.MetricType_GAUGE
	histogram = dto.MetricType_HISTOGRAM
)

// contractMetrics are the metrics the engine exposes, as the contract names them.
var contractMetrics = map[string]metricSpec{
	"clinksql_checkpoints_total":                    {counter, []string{"job_id", "mode", "outcome"}},
	"clinksql_checkpoint_duration_seconds":          {histogram, []string{"job_id"}},
	"clinksql_checkpoint_size_bytes":                {histogram, []string{"job_id"}},
	"clinksql_checkpoint_align_wait_seconds":        {histogram, []string{"job_id"}},
	"clinksql_checkpoint_inflight_bytes_total":      {counter, []string{"job_id"}},
	"clinksql_checkpoint_adaptive_switches_total":   {counter, []string{"job_id"}},
	"clinksql_checkpoint_mode":                      {gauge, []string{"job_id", "mode"}},
	"clinksql_operator_rows_in_total":               {counter, []string{"job_id", "operator", "subtask"}},
	"clinksql_operator_rows_out_total":              {counter, []string{"job_id", "operator", "subtask"}},
	"clinksql_operator_busy_seconds_total":          {counter, []string{"job_id", "operator", "subtask"}},
	"clinksql_operator_backpressured_seconds_total": {counter, []string{"job_id", "operator", "subtask"}},
	"clinksql_operator_watermark_seconds":           {gauge, []string{"job_id", "operator", "subtask"}},
	"clinksql_operator_watermark_lag_seconds":       {gauge, []string{"job_id", "operator", "subtask"}},
	"clinksql_operator_state_bytes":                 {gauge, []string{"job_id", "operator", "subtask"}},
	"clinksql_source_records_total":                 {counter, []string{"job_id", "operator", "subtask"}},
	"clinksql_source_lag_records":                   {gauge, []string{"job_id", "operator", "subtask"}},
	"clinksql_source_lag_bytes":                     {gauge, []string{"job_id", "operator", "subtask"}},
	"clinksql_sink_commit_seconds":                  {histogram, []string{"job_id", "operator"}},
	"clinksql_sink_committed_bytes_total":           {counter, []string{"job_id", "operator"}},
	"clinksql_sink_latency_seconds":                 {histogram, []string{"job_id", "operator"}},
	"clinksql_job_late_rows_total":                  {counter, []string{"job_id"}},
	"clinksql_job_bad_values_total":                 {counter, []string{"job_id"}},
	"clinksql_job_restarts_total":                   {counter, []string{"job_id", "cause"}},
	"clinksql_jobs":                                 {gauge, []string{"state"}},
	"clinksql_pgwire_connections_total":             {counter, nil},
	"clinksql_pgwire_connections_open":              {gauge, nil},
	"clinksql_pgwire_statements_total":              {counter, []string{"outcome"}},
}

var (
	promString   = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|` + "`[^`]*`")
	promMatchers = regexp.MustCompile(`\{[^}]*\}`)
	promRange    = regexp.MustCompile(`\[[^\]]*\]`)
	promGrouping = regexp.MustCompile(`(?i)\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	promToken    = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*|(?:[0-9]+(?:ms|[smhdwy]))+|[0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?|\S`)
	promKeywords = map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true,
		"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
		"inf": true, "nan": true}
	labelValues = regexp.MustCompile(`^label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(?:\{[^}]*\})?\s*,\s*[a-zA-Z_][a-zA-Z0-9_]*\s*\)$`)
)

// metricNames returns the metric names a PromQL expression selects: its identifiers that are not a function or
// aggregation (followed by a parenthesis), a keyword, a label (inside {...} or a by/without/on/ignoring list),
// a number or a duration (inside [...]).
func metricNames(expr string) []string {
	s := promString.ReplaceAllString(expr, `""`)
	s = promMatchers.ReplaceAllString(s, " ")
	s = promRange.ReplaceAllString(s, " ")
	s = promGrouping.ReplaceAllString(s, " ")
	toks := promToken.FindAllString(s, -1)
	var names []string
	for i, tok := range toks {
		c := tok[0]
		if !(c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			continue
		}
		if promKeywords[strings.ToLower(tok)] || i+1 < len(toks) && toks[i+1] == "(" {
			continue
		}
		names = append(names, tok)
	}
	return names
}

func TestMetricNames(t *testing.T) {
	for expr, want := range map[string][]string{
		`histogram_quantile(0.99, sum by (job, le) (rate(a_bucket{job=~"$job", x="}{(b)"}[$__rate_interval])))`: {"a_bucket"},
		`sum without (subtask) (rate(b_total[5m] offset 1h)) / on (job) group_left (mode) c == 1`:               {"b_total", "c"},
		`max by(job,mode)(d{job=~"a|b"}) > bool 1e3 and e unless sum(f)`:                                        {"d", "e", "f"},
		`rate(g[1m]) * 100 + -0.5`: {"g"},
	} {
		if got := metricNames(expr); !slices.Equal(got, want) {
			t.Errorf("%s: %q, want %q", expr, got, want)
		}
	}
}

// contractName is the contract metric a series name belongs to (a histogram's _bucket, _sum and _count series
// belong to it), "" if none.
func contractName(name string) string {
	if _, ok := contractMetrics[name]; ok {
		return name
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && contractMetrics[base].typ == histogram {
			if _, ok := contractMetrics[base]; ok {
				return base
			}
		}
	}
	return ""
}

// dashboardQueries returns every PromQL expression of a Grafana dashboard (its panels', rows' panels' included)
// and every metric its template variables read (label_values), by where they are.
func dashboardQueries(t *testing.T, path string) (exprs map[string]string, varMetrics map[string]string) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	type target struct {
		Expr  string `json:"expr"`
		RefID string `json:"refId"`
	}
	type panel struct {
		Title   string   `json:"title"`
		Type    string   `json:"type"`
		Targets []target `json:"targets"`
		Panels  []panel  `json:"panels"`
	}
	var dash struct {
		Title      string  `json:"title"`
		UID        string  `json:"uid"`
		Panels     []panel `json:"panels"`
		Templating struct {
			List []struct {
				Name  string          `json:"name"`
				Type  string          `json:"type"`
				Query json.RawMessage `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if dash.Title == "" || dash.UID == "" || len(dash.Panels) == 0 {
		t.Fatalf("%s: not a dashboard (title %q, uid %q, %d panels)", path, dash.Title, dash.UID, len(dash.Panels))
	}
	exprs, varMetrics = map[string]string{}, map[string]string{}
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			if p.Type != "row" && len(p.Targets) == 0 {
				t.Errorf("panel %q has no query", p.Title)
			}
			for _, tg := range p.Targets {
				if strings.TrimSpace(tg.Expr) == "" {
					t.Errorf("panel %q, query %s: no expression", p.Title, tg.RefID)
				}
				exprs[fmt.Sprintf("panel %q, query %s", p.Title, tg.RefID)] = tg.Expr
			}
			walk(p.Panels)
		}
	}
	walk(dash.Panels)
	for _, v := range dash.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct {
			Query string `json:"query"`
		}
		if err := json.Unmarshal(v.Query, &q); err != nil {
			if err := json.Unmarshal(v.Query, &q.Query); err != nil {
				t.Fatalf("variable %s: query %s", v.Name, v.Query)
			}
		}
		m := labelValues.FindStringSubmatch(strings.TrimSpace(q.Query))
		if m == nil {
			t.Errorf("variable %s: %q is not label_values(metric, label)", v.Name, q.Query)
			continue
		}
		varMetrics["variable "+v.Name] = m[1]
	}
	return exprs, varMetrics
}

// docs/grafana-dashboard.json asks only for metrics of the contract, and a running engine (a job with a
// following file source, a windowed aggregation and a file sink, a paced bounded generator; a pgwire server that
// ran statements) registers
// every metric of the contract, with its type and labels: so every query of the dashboard names a metric that
// exists.
func TestGrafanaDashboard(t *testing.T) {
	exprs, varMetrics := dashboardQueries(t, filepath.Join("..", "docs", "grafana-dashboard.json"))
	used := map[string]bool{}
	for where, expr := range exprs {
		names := metricNames(expr)
		if len(names) == 0 {
			t.Errorf("%s: %q selects no metric", where, expr)
		}
		for _, n := range names {
			if c := contractName(n); c == "" {
				t.Errorf("%s: %q names %s, which is no metric of the engine", where, expr, n)
			} else {
				used[c] = true
			}
		}
	}
	for where, n := range varMetrics {
		if contractName(n) == "" {
			t.Errorf("%s: reads %s, which is no metric of the engine", where, n)
		}
	}

	dir := t.TempDir()
	e := enginetest.Open(t, dir)
	runJob(t, e)
	if err := os.MkdirAll(filepath.Join(dir, "in"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "in", "a.csv"), []byte("1,2026-01-01 00:00:01\n2,2026-01-01 00:00:02\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := e.NewSession()
	for _, sql := range []string{
		`CREATE STREAM files (id BIGINT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts) WITH (connector = 'file', format = 'csv',
			path = 'in', 'source.monitor-interval' = '100 ms')`,
		`CREATE SINK copies (id BIGINT) WITH (connector = 'file', format = 'csv', path = 'copies')`,
		`INSERT INTO copies SELECT id FROM files`,
		// A bounded generator paced far below its end: it knows the records left (clinksql_source_lag_records).
		`CREATE STREAM paced (id BIGINT) WITH (connector = 'datagen', 'number-of-rows' = '1000000', 'rows-per-second' = '100')`,
		`CREATE SINK nowhere (id BIGINT) WITH (connector = 'blackhole')`,
		// Latency markers are off by default; this job's sink records them (clinksql_sink_latency_seconds).
		`SET metrics.latency.interval = '20 ms'`,
		`INSERT INTO nowhere SELECT id FROM paced`,
	} {
		if _, err := s.Execute(context.Background(), sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	pgwireStatements(t, e)

	var missing []string
	var fams map[string]*dto.MetricFamily
	eventually(func() bool {
		fams = promtest.Families(t, e.Registry())
		missing = missing[:0]
		for name := range contractMetrics {
			if len(fams[name].GetMetric()) == 0 {
				missing = append(missing, name)
			}
		}
		return len(missing) == 0
	})
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Fatalf("not registered by a running engine: %s", strings.Join(missing, ", "))
	}
	for name, spec := range contractMetrics {
		f := fams[name]
		if f.GetType() != spec.typ {
			t.Errorf("%s: %s, want %s", name, f.GetType(), spec.typ)
		}
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName())
			}
			sort.Strings(labels)
			want := slices.Sorted(slices.Values(spec.labels))
			if !slices.Equal(labels, want) {
				t.Errorf("%s: a series labelled %q, want %q", name, labels, want)
				break
			}
		}
	}
	var unused []string
	for name := range contractMetrics {
		if !used[name] {
			unused = append(unused, name)
		}
	}
	sort.Strings(unused)
	if len(unused) > 0 {
		t.Errorf("the dashboard shows nothing of %s", strings.Join(unused, ", "))
	}
}

// pgwireStatements serves e over pgwire until the test ends, and runs a statement that succeeds and one that
// fails on a connection it keeps open.
func pgwireStatements(t *testing.T, e *engine.Engine) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := pgwire.NewServer(pgwire.Config{Registerer: e.Registry()}, e)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, fmt.Sprintf("postgres://clinksql@%s/clinksql?sslmode=disable", l.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close(ctx)
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("pgwire shutdown: %v", err)
		}
		if err := <-served; !errors.Is(err, pgwire.ErrServerClosed) {
			t.Errorf("pgwire: %v", err)
		}
	})
	if _, err := c.Exec(ctx, "SELECT 1"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, "SELECT 1 / 0"); err == nil {
		t.Fatal("SELECT 1 / 0 succeeded")
	}
}

// The metric reference of docs/operations.md lists exactly the contract's metrics, with their types and labels.
func TestOperationsMetricTable(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]dto.MetricType{"counter": counter, "gauge": gauge, "histogram": histogram}
	listed := map[string]bool{}
	for _, line := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(line, "| `clinksql_") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) != 4 {
			t.Errorf("want | metric | type | labels | meaning |: %s", line)
			continue
		}
		name := strings.Trim(strings.TrimSpace(cells[0]), "`")
		spec, ok := contractMetrics[name]
		if !ok {
			t.Errorf("docs/operations.md lists %s, which is no metric of the engine", name)
			continue
		}
		listed[name] = true
		if typ, ok := types[strings.TrimSpace(cells[1])]; !ok || typ != spec.typ {
			t.Errorf("%s: type %q, want %s", name, strings.TrimSpace(cells[1]), strings.ToLower(spec.typ.String()))
		}
		var labels []string
		for _, l := range strings.Split(cells[2], ",") {
			if l = strings.TrimSpace(l); l != "" {
				labels = append(labels, l)
			}
		}
		if !slices.Equal(labels, spec.labels) {
			t.Errorf("%s: labels %q, want %q", name, labels, spec.labels)
		}
	}
	for name := range contractMetrics {
		if !listed[name] {
			t.Errorf("docs/operations.md does not list %s", name)
		}
	}
}
