package state

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
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
// rename itself survives a crash. A nil return means both the bytes and the name are durable. The file fsync is
// strict; the directory fsync is best-effort (its worst case is falling back to an older checkpoint).
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
		_ = fsys.SyncDir(dir) // best-effort, see above
	}
	return nil
}
