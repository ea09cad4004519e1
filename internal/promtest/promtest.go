// Package promtest reads what a Prometheus registry exposes, for the tests of the packages that register metrics:
// the samples of a metric whose labels include given ones. (Not prometheus/testutil: its diff dependency is not
// in go.sum.)
package promtest

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Series returns the samples of metric name in fams whose labels include want: a counter's or gauge's value, a
// histogram's sample count.
func Series(fams map[string]*dto.MetricFamily, name string, want map[string]string) []float64 {
	var out []float64
next:
	for _, m := range fams[name].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if labels[k] != v {
				continue next
			}
		}
		switch {
		case m.GetCounter() != nil:
			out = append(out, m.GetCounter().GetValue())
		case m.GetGauge() != nil:
			out = append(out, m.GetGauge().GetValue())
		case m.GetHistogram() != nil:
			out = append(out, float64(m.GetHistogram().GetSampleCount()))
		}
	}
	return out
}

// Families gathers reg by metric name.
func Families(t testing.TB, reg prometheus.Gatherer) map[string]*dto.MetricFamily {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	fams := map[string]*dto.MetricFamily{}
	for _, f := range mfs {
		fams[f.GetName()] = f
	}
	return fams
}

// Value gathers reg and returns the first sample of metric name whose labels include want (see Series), and
// whether there is one.
func Value(t testing.TB, reg prometheus.Gatherer, name string, want map[string]string) (float64, bool) {
	t.Helper()
	s := Series(Families(t, reg), name, want)
	if len(s) == 0 {
		return 0, false
	}
	return s[0], true
}
