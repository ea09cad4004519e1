package engine

import (
	"context"
	"strings"
	"testing"

	"github.com/clinksql/clinksql/sqlerr"
)

// pins: the test clock is for tests only. Without Config.Testing, SET testing.processing_time is refused (42501)
// and changes nothing; with it the setting is kept in the data directory, which then refuses to open without
// Testing (its windows would wait for a clock nobody moves), naming the file to delete; RESET removes it.
func TestTestingClockNeedsTesting(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	e, err := Open(Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.NewSession().Execute(ctx, "SET testing.processing_time = '2026-01-01 00:00:00'")
	if e := sqlerr.As(err); err == nil || e.Code != sqlerr.InsufficientPriv || !strings.Contains(e.Msg, "--testing") {
		t.Fatalf("SET testing.processing_time without Testing: %v", err)
	}
	closeEngine(t, e)
	// nothing was kept: the directory opens without Testing
	if e, err = Open(Config{DataDir: dir}); err != nil {
		t.Fatalf("reopen after a refused SET: %v", err)
	}
	closeEngine(t, e)

	e, err = Open(Config{DataDir: dir, Testing: true})
	if err != nil {
		t.Fatal(err)
	}
	mustExec(t, e.NewSession(), "SET testing.processing_time = '2026-01-01 00:00:00'")
	closeEngine(t, e)
	_, err = Open(Config{DataDir: dir})
	if e := sqlerr.As(err); err == nil || e.Code != sqlerr.InvalidJobState || !strings.Contains(e.Msg, "testing-processing-time") {
		t.Fatalf("open a directory on a test clock without Testing: %v", err)
	}
	e, err = Open(Config{DataDir: dir, Testing: true})
	if err != nil {
		t.Fatal(err)
	}
	mustExec(t, e.NewSession(), "RESET testing.processing_time")
	closeEngine(t, e)
	if e, err = Open(Config{DataDir: dir}); err != nil {
		t.Fatalf("open after RESET: %v", err)
	}
	closeEngine(t, e)
}
