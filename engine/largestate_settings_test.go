package engine

import (
	"context"
	"testing"

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
