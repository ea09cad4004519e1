package web

import (
	"fmt"
	"math"
	"net/http"
	"strings"
	"testing"

	"github.com/clinksql/clinksql/internal/promtest"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrape GETs url (a /metrics) and parses Prometheus' text format.
func scrape(t *testing.T, url string, setAuth func(*http.Request)) map[string]*dto.MetricFamily {
	t.Helper()
	r := get(t, http.DefaultClient, url, setAuth)
	if r.status != 200 {
		t.Fatalf("GET %s: %d %s", url, r.status, r.body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(r.body))
	if err != nil {
		t.Fatalf("GET %s: %v in\n%s", url, err, r.body)
	}
	return fams
}
func sum(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s
}

func maxOf(v []float64) float64 {
	m := math.Inf(-1)
	for _, x := range v {
		m = max(m, x)
	}
	return m
}

// figures are what TestMetricsMove follows from scrape to scrape.
type figures struct {
	checkpoints, durations, rowsIn, rowsOut, busy, watermark float64
}

// /metrics with a running job: the checkpoint counters and histograms, the operators' rows and busy time and
// the watermark move from one scrape to a later one, and every subtask has its backpressure and watermark lag
// series, labelled with the job, the operator and the subtask.
func TestMetricsMove(t *testing.T) {
	e := openEngine(t)
	s := startServer(t, Config{Addr: "127.0.0.1:0", Engine: e})
	url := "http://" + s.Addr().String() + "/metrics"
	id := runJob(t, e)
	job := map[string]string{"job_id": id}
	read := func() (figures, map[string]*dto.MetricFamily) {
		fams := scrape(t, url, nil)
		return figures{
			checkpoints: sum(promtest.Series(fams, "clinksql_checkpoints_total", map[string]string{"job_id": id, "outcome": "completed"})),
			durations:   sum(promtest.Series(fams, "clinksql_checkpoint_duration_seconds", job)),
			rowsIn:      sum(promtest.Series(fams, "clinksql_operator_rows_in_total", job)),
			rowsOut:     sum(promtest.Series(fams, "clinksql_operator_rows_out_total", job)),
			busy:        sum(promtest.Series(fams, "clinksql_operator_busy_seconds_total", job)),
			watermark:   maxOf(promtest.Series(fams, "clinksql_operator_watermark_seconds", job)),
		}, fams
	}
	var first figures
	var fams map[string]*dto.MetricFamily
	await(t, "a completed checkpoint, rows and a watermark in /metrics", func() bool {
		first, fams = read()
		return first.checkpoints > 0 && first.rowsOut > 0 && !math.IsInf(first.watermark, -1)
	})
	// Every subtask of the job has its series, under the contract's labels.
	subtasks := 0
	for _, m := range fams["clinksql_operator_rows_in_total"].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["job_id"] != id || labels["operator"] == "" || labels["subtask"] == "" {
			t.Fatalf("clinksql_operator_rows_in_total series labelled %v", labels)
		}
		one := map[string]string{"job_id": id, "operator": labels["operator"], "subtask": labels["subtask"]}
		for _, name := range []string{"clinksql_operator_rows_out_total", "clinksql_operator_busy_seconds_total",
			"clinksql_operator_backpressured_seconds_total"} {
			if len(promtest.Series(fams, name, one)) != 1 {
				t.Errorf("%s: no series for %v", name, one)
			}
		}
		subtasks++
	}
	if subtasks < 2 || len(promtest.Series(fams, "clinksql_operator_watermark_lag_seconds", job)) == 0 {
		t.Errorf("%d subtasks with rows_in, %d with a watermark lag", subtasks,
			len(promtest.Series(fams, "clinksql_operator_watermark_lag_seconds", job)))
	}
	if modes := promtest.Series(fams, "clinksql_checkpoint_mode", map[string]string{"job_id": id, "mode": "aligned"}); len(modes) != 1 || modes[0] != 1 {
		t.Errorf("clinksql_checkpoint_mode{mode=aligned}: %v, want 1", modes)
	}
	await(t, fmt.Sprintf("every figure to move past %+v", first), func() bool {
		now, _ := read()
		return now.checkpoints > first.checkpoints && now.durations > first.durations && now.rowsIn > first.rowsIn &&
			now.rowsOut > first.rowsOut && now.busy > first.busy && now.watermark > first.watermark
	})
}
