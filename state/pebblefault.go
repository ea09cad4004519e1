package state

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/cockroachdb/pebble/v2"
)

// Pebble reports what it cannot recover from through its Logger's Fatalf (a MANIFEST write that failed on a full
// disk), through EventListener.DataCorruption (a checksum mismatch in an sstable) and EventListener.BackgroundError
// (a flush or compaction that failed). Its defaults exit the process (log.Fatalf) on the first two: one full disk
// or one corrupt sstable of one job's store took every session and job of the server down, and a corrupt
// checkpoint did so again at every start. A store is scratch (rebuilt from a checkpoint at every open), so a store
// that Pebble gave up on is simply not used again: storeFault records the first such error, every later operation
// of the backend returns it, and the job (or ad-hoc SELECT) that owns the store fails or restarts from its last
// checkpoint with a fresh store, naming the store's directory. Nothing here exits the process.

// storeFault is the first error Pebble reported as fatal for one store.
type storeFault struct {
	dir string
	mu  sync.Mutex
	err error
	// corrupt is the last table Pebble reported corrupt: pebbleErr names it (as its shared file) in the
	// *CorruptError that fails the job at once, since a restart would only read the same table again.
	corrupt string
}

// corruptPath is the last table Pebble reported corrupt, "" if none.
func (f *storeFault) corruptPath() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.corrupt
}

// set records err, if it is the first.
func (f *storeFault) set(err error) {
	f.mu.Lock()
	first := f.err == nil
	if first {
		f.err = fmt.Errorf("state: store %s failed: %w", f.dir, err)
	}
	f.mu.Unlock()
	if first {
		slog.Warn("pebble: store failed; its job or query fails, the server goes on", "dir", f.dir, "err", err)
	}
}

// get returns the recorded error, nil if none.
func (f *storeFault) get() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

// pebbleLogger drops Pebble's informational chatter (one store per stateful subtask would flood the log), logs
// its errors, and turns Fatalf into a store fault instead of an exit.
type pebbleLogger struct{ fault *storeFault }

func (pebbleLogger) Infof(string, ...any) {}

func (l pebbleLogger) Errorf(format string, args ...any) {
	slog.Warn("pebble: "+fmt.Sprintf(format, args...), "dir", l.fault.dir)
}

// Fatalf records the failure and returns: every Fatalf of Pebble v2.1.7 that storage can cause (a MANIFEST write,
// sync or rotation) is followed by returning the error to the operation that hit it, and the store is not used
// again. The error of the arguments, if any, stays in the chain, so that a full disk is still ENOSPC (53100).
func (l pebbleLogger) Fatalf(format string, args ...any) {
	err := &fatalError{msg: "pebble: " + fmt.Sprintf(format, args...)}
	for _, a := range args {
		if cause, ok := a.(error); ok {
			err.cause = cause
			break
		}
	}
	l.fault.set(err)
}

// fatalError is what Pebble's Fatalf said, keeping the error it was given for errors.Is (ENOSPC).
type fatalError struct {
	msg   string
	cause error
}

func (e *fatalError) Error() string { return e.msg }
func (e *fatalError) Unwrap() error { return e.cause }

// listener routes Pebble's background errors and data corruption to the store's fault.
func (f *storeFault) listener() *pebble.EventListener {
	return &pebble.EventListener{
		BackgroundError: func(err error) { f.set(fmt.Errorf("pebble: background error: %w", err)) },
		DataCorruption: func(info pebble.DataCorruptionInfo) {
			f.mu.Lock()
			f.corrupt = info.Path
			f.mu.Unlock()
			err := info.Details
			if err == nil {
				err = errors.New("corruption")
			}
			f.set(fmt.Errorf("pebble: data corruption in %s: %w", info.Path, err))
		},
	}
}
