package inspect

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/clinksql/clinksql/state"
)

// readOnlyFS reads anywhere and writes only under scratch: the restore of a keyed snapshot builds its working
// store there, and nothing reaches the data directory. A hard link into scratch that the file system refuses
// (scratch on another device) becomes a copy.
type readOnlyFS struct {
	scratch string
}

var _ state.FS = readOnlyFS{}

func (f readOnlyFS) check(op, name string) error {
	if p, err := filepath.Abs(name); err == nil && (p == f.scratch || strings.HasPrefix(p, f.scratch+string(filepath.Separator))) {
		return nil
	}
	return &fs.PathError{Op: op, Path: name, Err: fmt.Errorf("state-cat writes nothing outside its scratch directory")}
}

func (f readOnlyFS) Create(name string) (state.File, error) {
	if err := f.check("create", name); err != nil {
		return nil, err
	}
	return state.OS.Create(name)
}
func (f readOnlyFS) Open(name string) (state.File, error)       { return state.OS.Open(name) }
func (f readOnlyFS) ReadFile(name string) ([]byte, error)       { return state.OS.ReadFile(name) }
func (f readOnlyFS) ReadDir(name string) ([]fs.DirEntry, error) { return state.OS.ReadDir(name) }
func (f readOnlyFS) Stat(name string) (fs.FileInfo, error)      { return state.OS.Stat(name) }

func (f readOnlyFS) Rename(oldpath, newpath string) error {
	if err := f.check("rename", oldpath); err != nil {
		return err
	}
	if err := f.check("rename", newpath); err != nil {
		return err
	}
	return state.OS.Rename(oldpath, newpath)
}

func (f readOnlyFS) RenameNoReplace(oldpath, newpath string) error {
	if err := f.check("rename", oldpath); err != nil {
		return err
	}
	if err := f.check("rename", newpath); err != nil {
		return err
	}
	return state.OS.RenameNoReplace(oldpath, newpath)
}

// Link links (or copies) into scratch only.
func (f readOnlyFS) Link(oldname, newname string) error {
	if err := f.check("link", newname); err != nil {
		return err
	}
	if err := os.Link(oldname, newname); err == nil {
		return nil
	}
	src, err := os.Open(oldname)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(newname, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}

func (f readOnlyFS) Remove(name string) error {
	if err := f.check("remove", name); err != nil {
		return err
	}
	return state.OS.Remove(name)
}

func (f readOnlyFS) RemoveAll(name string) error {
	if err := f.check("remove", name); err != nil {
		return err
	}
	return state.OS.RemoveAll(name)
}

func (f readOnlyFS) MkdirAll(name string) error {
	if fi, err := os.Stat(name); err == nil && fi.IsDir() {
		return nil
	}
	if err := f.check("mkdir", name); err != nil {
		return err
	}
	return state.OS.MkdirAll(name)
}

func (f readOnlyFS) SyncDir(name string) error {
	if err := f.check("sync", name); err != nil {
		return err
	}
	return nil // scratch needs no durability
}
