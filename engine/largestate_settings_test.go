package engine

import (
	"context"
	"testing"
	"time"

	"github.com/clinksql/clinksql/sqlerr"
)

// pins: state.cache_size takes a size of at least 1MB or 'auto' (22023 otherwise), and a job's settings carry it.
func TestStateCacheSizeSetting(t *testing.T) {
	_, s := testEngine(t, t.TempDir())
	for _, bad := range []string{"'10kB'", "'lots'", "0", "'-1MB'"} {
		_, err := s.Execute(context.Background(), "SET state.cache_size = "+bad)
		if e := sqlerr.As(err); e == nil || e.Code != sqlerr.InvalidParameter {
			t.Errorf("SET state.cache_size = %s: %+v, want 22023", bad, e)
		}
	}
	for value, want := range map[string]int64{"'256MB'": 256 << 20, "'2GB'": 2 << 30, "'auto'": 0, "DEFAULT": 0} {
		mustExec(t, s, "SET state.cache_size = "+value)
		js, err := settingsFrom(s.vars.jobSettings())
		if err != nil || js.stateCache != want {
			t.Errorf("SET state.cache_size = %s: %d, %v; want %d", value, js.stateCache, err, want)
		}
	}
}

// pins: metrics.latency.interval takes an interval of at least 1 ms or 0/off (22023 otherwise), and a job's
// settings carry it.
func TestLatencyIntervalSetting(t *testing.T) {
	_, s := testEngine(t, t.TempDir())
	for _, bad := range []string{"'-1s'", "'often'", "'500 us'"} {
		_, err := s.Execute(context.Background(), "SET metrics.latency.interval = "+bad)
		if e := sqlerr.As(err); e == nil || e.Code != sqlerr.InvalidParameter {
			t.Errorf("SET metrics.latency.interval = %s: %+v, want 22023", bad, e)
		}
	}
	for value, want := range map[string]time.Duration{"'200 ms'": 200 * time.Millisecond, "'1s'": time.Second, "'off'": 0, "0": 0, "DEFAULT": 0} {
		mustExec(t, s, "SET metrics.latency.interval = "+value)
		js, err := settingsFrom(s.vars.jobSettings())
		if err != nil || js.latency != want {
			t.Errorf("SET metrics.latency.interval = %s: %v, %v; want %v", value, js.latency, err, want)
		}
	}
}

// pins: watermark.alignment.max_drift takes an interval or 0/off (22023 otherwise), defaults to 1s, and a job's
// settings carry it.
func TestWatermarkMaxDriftSetting(t *testing.T) {
	_, s := testEngine(t, t.TempDir())
	for _, bad := range []string{"'-1s'", "'far'"} {
		_, err := s.Execute(context.Background(), "SET watermark.alignment.max_drift = "+bad)
		if e := sqlerr.As(err); e == nil || e.Code != sqlerr.InvalidParameter {
			t.Errorf("SET watermark.alignment.max_drift = %s: %+v, want 22023", bad, e)
		}
	}
	for value, want := range map[string]time.Duration{"'200 ms'": 200 * time.Millisecond, "'5s'": 5 * time.Second, "'off'": 0, "0": 0, "DEFAULT": time.Second} {
		mustExec(t, s, "SET watermark.alignment.max_drift = "+value)
		js, err := settingsFrom(s.vars.jobSettings())
		if err != nil || js.maxDrift != want {
			t.Errorf("SET watermark.alignment.max_drift = %s: %v, %v; want %v", value, js.maxDrift, err, want)
		}
	}
}
