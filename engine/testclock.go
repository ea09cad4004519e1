package engine

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/sqlerr"
	"github.com/clinksql/clinksql/state"
)

// The processing-time clock of the engine's jobs (exec.JobConfig.Clock): the wall clock, unless a test set it by
// hand. Tests drive processing-time windows with `SET testing.processing_time = '<timestamp>'` (UTC): from then on
// every job of the engine reads that time, which only a later SET moves (forward; an earlier time is ignored). The
// setting is kept in <data>/testing-processing-time, so a restarted engine - also a `clinksql serve` started
// again by the pgwire tests - redeploys its jobs on the same hand-set clock rather than the wall clock. It is for
// tests: a server whose clock stands still never fires a processing-time window. Nothing in production sets it;
// RESET testing.processing_time (or SET ... TO DEFAULT) returns every job to the wall clock.

// TestingClockSetting is the name of the setting.
const TestingClockSetting = "testing.processing_time"

const testingClockFile = "testing-processing-time"

// engineClock is the clock every job of an engine gets: the wall clock until a test installs a manual one (which
// jobs already running follow too: they hold this, not the clock behind it).
type engineClock struct {
	manual atomic.Pointer[exec.ManualClock]
}

var _ exec.ProcessingClock = (*engineClock)(nil)

func (c *engineClock) Now() time.Time {
	if m := c.manual.Load(); m != nil {
		return m.Now()
	}
	return time.Now()
}

func (c *engineClock) Until(t time.Time) <-chan struct{} {
	if m := c.manual.Load(); m != nil {
		return m.Until(t)
	}
	return exec.WallClock{}.Until(t)
}

// openTestingClock installs the hand-set clock an earlier run of the data directory left, if any.
func (c *engineClock) open(dir string, testing bool) error {
	b, err := os.ReadFile(filepath.Join(dir, testingClockFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if !testing {
		// its processing-time windows would wait for a clock nobody moves
		return sqlerr.New(sqlerr.InvalidJobState, sqlerr.NoPos, "data directory %s runs on a test clock (SET %s): "+
			"open it with --testing, or delete %s to return its jobs to the wall clock", dir, TestingClockSetting,
			filepath.Join(dir, testingClockFile))
	}
	t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(string(b)))
	if err != nil {
		return errors.New(testingClockFile + ": " + err.Error())
	}
	c.manual.Store(exec.NewManualClock(t))
	return nil
}

// setTestingClock carries out SET testing.processing_time = value, or with wall (SET ... TO DEFAULT, RESET) the
// return to the wall clock: the file goes, and every job reads the wall clock again.
func (e *Engine) setTestingClock(value string, wall bool) error {
	if !e.cfg.Testing {
		return sqlerr.New(sqlerr.InsufficientPriv, sqlerr.NoPos, "%s is for tests: the server must be started with --testing",
			TestingClockSetting)
	}
	if wall {
		e.testClockMu.Lock()
		defer e.testClockMu.Unlock()
		if err := os.Remove(filepath.Join(e.dir, testingClockFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		e.clock.manual.Store(nil)
		return nil
	}
	t, err := time.ParseInLocation("2006-01-02 15:04:05.999999", strings.TrimSpace(value), time.UTC)
	if err != nil {
		return sqlerr.New(sqlerr.InvalidDatetime, sqlerr.NoPos,
			"%s takes a timestamp 'YYYY-MM-DD HH:MM:SS[.ffffff]' (UTC), not %q", TestingClockSetting, value)
	}
	e.testClockMu.Lock()
	defer e.testClockMu.Unlock()
	m := e.clock.manual.Load()
	if m == nil {
		m = exec.NewManualClock(t)
	}
	if t.After(m.Now()) || e.clock.manual.Load() == nil {
		// Durable before any job can read it: a restart must not find the clock behind what a checkpoint saw.
		if err := state.WriteFsyncRename(state.OS, filepath.Join(e.dir, testingClockFile),
			[]byte(t.UTC().Format(time.RFC3339Nano))); err != nil {
			return err
		}
	}
	e.clock.manual.Store(m)
	m.Set(t)
	return nil
}
