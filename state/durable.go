package state

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// FsyncEnabled reports whether durable writes fsync. It reads CLINK_STATE_FSYNC on every call (once per snapshot,
// never per record), so the toggle is dynamic. Only "0" and "false" turn fsync off; that is for benchmarks where
// the durability contract is not under test, never for production.
func FsyncEnabled() bool {
	v := strings.TrimSpace(strings.ToLower(os.Getenv("CLINK_STATE_FSYNC")))
	return v != "0" && v != "false"
}

// WriteFsyncRename makes data durable at path: it writes a temp file beside path, fsyncs it through the descriptor
// that wrote it (so a writeback error is not missed), renames it over path, then fsyncs the parent directory so the
// rename itself survives a crash. A nil return means both the bytes and the name are durable. Both fsyncs are
// strict: the seed made the directory fsync best-effort, but a COMPLETED marker that a power loss takes back while
// the sinks' (strictly synced) commits survive makes the restore publish the interval twice. An error after the
// rename leaves the file under its final name, possibly not durable, and is ErrNotSynced; the caller decides what to
// do with it.
func WriteFsyncRename(fsys FS, path string, data []byte) error {
	dir := filepath.Dir(path)
	tmp := filepath.Join(dir, "."+filepath.Base(path)+".part")
	f, err := fsys.Create(tmp)
	if err != nil {
		return fmt.Errorf("durable write %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		fsys.Remove(tmp)
		return fmt.Errorf("durable write %s: %w", path, err)
	}
	if FsyncEnabled() {
		if err := f.Sync(); err != nil {
			f.Close()
			fsys.Remove(tmp)
			return fmt.Errorf("durable write %s: fsync: %w", path, err)
		}
	}
	if err := f.Close(); err != nil {
		fsys.Remove(tmp)
		return fmt.Errorf("durable write %s: %w", path, err)
	}
	if err := fsys.Rename(tmp, path); err != nil {
		fsys.Remove(tmp)
		return fmt.Errorf("durable write %s: %w", path, err)
	}
	if FsyncEnabled() {
		if err := syncDir(fsys, dir); err != nil {
			return fmt.Errorf("durable write %s: %w: %w", path, ErrNotSynced, err)
		}
	}
	return nil
}

// ErrNotSynced is a WriteFsyncRename that renamed its file into place but could not fsync the directory: the file
// is there under its name, and a crash may or may not take the name back.
var ErrNotSynced = errors.New("renamed into place, but the directory fsync failed")

// syncDir fsyncs a directory, coalescing concurrent requests on the real file system: when every participant of
// a checkpoint renames its snapshot into the same directory at once, one fsync that starts after a rename covers
// every rename before it, so they share rounds instead of queueing a fsync each (group commit). A request joins
// the next round that has not started yet, never one already running, so the sync it waits for always began
// after its own rename.
func syncDir(fsys FS, dir string) error {
	if fsys != OS {
		return fsys.SyncDir(dir)
	}
	return dirSyncs.do(dir, func() error { return fsys.SyncDir(dir) })
}

// do runs sync for key, sharing rounds between concurrent callers: a caller joins the round that has not started
// yet, and the caller that finds no round running runs rounds until none is waiting.
func (g *syncGroup) do(key string, sync func() error) error {
	g.mu.Lock()
	st := g.dirs[key]
	if st == nil {
		st = &dirSyncState{}
		g.dirs[key] = st
	}
	if st.next == nil {
		st.next = &syncRound{done: make(chan struct{})}
	}
	r := st.next
	if st.running {
		g.mu.Unlock()
		<-r.done
		return r.err
	}
	st.running = true
	for st.next != nil {
		round := st.next
		st.next = nil
		g.mu.Unlock()
		round.err = sync()
		close(round.done)
		g.mu.Lock()
	}
	st.running = false
	delete(g.dirs, key)
	g.mu.Unlock()
	return r.err
}

var dirSyncs = newSyncGroup()

type syncGroup struct {
	mu   sync.Mutex
	dirs map[string]*dirSyncState
}

func newSyncGroup() *syncGroup { return &syncGroup{dirs: map[string]*dirSyncState{}} }

type dirSyncState struct {
	running bool
	next    *syncRound // the round that has not started; requests join it
}

type syncRound struct {
	done chan struct{}
	err  error
}
