package state

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// File is the part of *os.File the durable-write paths use.
type File interface {
	io.Writer
	io.Reader
	Sync() error
	Close() error
	Name() string
}

// FS is the small file-system seam under every durable write of checkpoints, markers and sinks, so tests can make
// the disk fail from any chosen point on (FaultFS). Production code uses OS.
type FS interface {
	Create(name string) (File, error)
	Open(name string) (File, error)
	ReadFile(name string) ([]byte, error)
	Rename(oldpath, newpath string) error
	// RenameNoReplace renames and fails with fs.ErrExist if newpath exists: committed output is never overwritten.
	RenameNoReplace(oldpath, newpath string) error
	Link(oldname, newname string) error
	Remove(name string) error
	RemoveAll(name string) error
	MkdirAll(name string) error
	ReadDir(name string) ([]fs.DirEntry, error)
	Stat(name string) (fs.FileInfo, error)
	SyncDir(name string) error
}

// OS is the real file system.
var OS FS = osFS{}

type osFS struct{}

func (osFS) Create(name string) (File, error)           { return os.Create(name) }
func (osFS) Open(name string) (File, error)             { return os.Open(name) }
func (osFS) ReadFile(name string) ([]byte, error)       { return os.ReadFile(name) }
func (osFS) Rename(oldpath, newpath string) error       { return os.Rename(oldpath, newpath) }
func (osFS) Link(oldname, newname string) error         { return os.Link(oldname, newname) }
func (osFS) Remove(name string) error                   { return os.Remove(name) }
func (osFS) RemoveAll(name string) error                { return os.RemoveAll(name) }
func (osFS) MkdirAll(name string) error                 { return os.MkdirAll(name, 0o755) }
func (osFS) ReadDir(name string) ([]fs.DirEntry, error) { return os.ReadDir(name) }
func (osFS) Stat(name string) (fs.FileInfo, error)      { return os.Stat(name) }

func (osFS) RenameNoReplace(oldpath, newpath string) error {
	err := unix.Renameat2(unix.AT_FDCWD, oldpath, unix.AT_FDCWD, newpath, unix.RENAME_NOREPLACE)
	if err == nil {
		return nil
	}
	if errors.Is(err, unix.EEXIST) {
		return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: fs.ErrExist}
	}
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) {
		// File systems without RENAME_NOREPLACE: link refuses an existing target, then drop the old name.
		if err := os.Link(oldpath, newpath); err != nil {
			return err
		}
		return os.Remove(oldpath)
	}
	return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: err}
}

func (osFS) SyncDir(name string) error {
	d, err := os.Open(name)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// ErrInjected is the error FaultFS returns once it has tripped.
var ErrInjected = errors.New("injected I/O fault")

// FaultFS wraps an FS and fails every mutating call (create, write, sync, rename, link, remove, mkdir) from its
// N-th mutating call on, as a disk that died mid-run would. Reads keep working so that recovery code can be tested
// against the same tree after the "crash". Safe for concurrent use.
type FaultFS struct {
	Inner FS
	// FailAfter is how many mutating calls succeed before every later one fails; negative never fails.
	FailAfter int64
	// Err is the error the failing calls return; nil means ErrInjected (syscall.ENOSPC makes a full disk).
	Err   error
	calls atomic.Int64
}

// Tripped reports whether the fault point has been reached.
func (f *FaultFS) Tripped() bool { return f.FailAfter >= 0 && f.calls.Load() > f.FailAfter }

func (f *FaultFS) step() error {
	n := f.calls.Add(1)
	if f.FailAfter >= 0 && n > f.FailAfter {
		if f.Err != nil {
			return f.Err
		}
		return ErrInjected
	}
	return nil
}

type faultFile struct {
	File
	fs *FaultFS
}

func (w faultFile) Write(p []byte) (int, error) {
	if err := w.fs.step(); err != nil {
		return 0, err
	}
	return w.File.Write(p)
}

func (w faultFile) Sync() error {
	if err := w.fs.step(); err != nil {
		return err
	}
	return w.File.Sync()
}

func (f *FaultFS) Create(name string) (File, error) {
	if err := f.step(); err != nil {
		return nil, err
	}
	file, err := f.Inner.Create(name)
	if err != nil {
		return nil, err
	}
	return faultFile{File: file, fs: f}, nil
}
func (f *FaultFS) Open(name string) (File, error)             { return f.Inner.Open(name) }
func (f *FaultFS) ReadFile(name string) ([]byte, error)       { return f.Inner.ReadFile(name) }
func (f *FaultFS) ReadDir(name string) ([]fs.DirEntry, error) { return f.Inner.ReadDir(name) }
func (f *FaultFS) Stat(name string) (fs.FileInfo, error)      { return f.Inner.Stat(name) }
func (f *FaultFS) Rename(o, n string) error {
	if err := f.step(); err != nil {
		return err
	}
	return f.Inner.Rename(o, n)
}
func (f *FaultFS) RenameNoReplace(o, n string) error {
	if err := f.step(); err != nil {
		return err
	}
	return f.Inner.RenameNoReplace(o, n)
}
func (f *FaultFS) Link(o, n string) error {
	if err := f.step(); err != nil {
		return err
	}
	return f.Inner.Link(o, n)
}
func (f *FaultFS) Remove(name string) error {
	if err := f.step(); err != nil {
		return err
	}
	return f.Inner.Remove(name)
}
func (f *FaultFS) RemoveAll(name string) error {
	if err := f.step(); err != nil {
		return err
	}
	return f.Inner.RemoveAll(name)
}
func (f *FaultFS) MkdirAll(name string) error {
	if err := f.step(); err != nil {
		return err
	}
	return f.Inner.MkdirAll(name)
}
func (f *FaultFS) SyncDir(name string) error {
	if err := f.step(); err != nil {
		return err
	}
	return f.Inner.SyncDir(name)
}
