package filelist

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/clinksql/clinksql/connectors"
	"github.com/clinksql/clinksql/state"
)

// File is one listed file.
type File struct {
	Name string
	Size int64
}

// AppendPos appends a bounded file source's place in its file list: uvarints subtask, parallelism and file
// count, the 8-byte list fingerprint, then the uvarint index of the file being read (or next to read).
func AppendPos(b []byte, sub, par, files int, fp uint64, next int) []byte {
	b = binary.AppendUvarint(b, uint64(sub))
	b = binary.AppendUvarint(b, uint64(par))
	b = binary.AppendUvarint(b, uint64(files))
	b = binary.BigEndian.AppendUint64(b, fp)
	return binary.AppendUvarint(b, uint64(next))
}

// OffsetReader reads the fields of an offset in order. A field that is missing, malformed or over its limit
// clears ok, and every read after it returns zero.
type OffsetReader struct {
	b  []byte
	ok bool
}

// NewOffsetReader reads the fields in b.
func NewOffsetReader(b []byte) *OffsetReader { return &OffsetReader{b: b, ok: true} }

// Uvarint reads a uvarint of at most limit (math.MaxInt64 at most).
func (r *OffsetReader) Uvarint(limit uint64) int64 {
	if !r.ok {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 || v > limit {
		r.ok = false
		return 0
	}
	r.b = r.b[n:]
	return int64(v)
}

// Fixed64 reads 8 bytes, big-endian.
func (r *OffsetReader) Fixed64() uint64 {
	if !r.ok || len(r.b) < 8 {
		r.ok = false
		return 0
	}
	v := binary.BigEndian.Uint64(r.b)
	r.b = r.b[8:]
	return v
}

// Str reads a uvarint length and that many bytes (a length past the bytes left makes the offset unreadable).
func (r *OffsetReader) Str() string {
	n := r.Uvarint(math.MaxInt64)
	if !r.ok || n > int64(len(r.b)) {
		r.ok = false
		return ""
	}
	v := string(r.b[:n])
	r.b = r.b[n:]
	return v
}

// OK reports whether every read so far succeeded.
func (r *OffsetReader) OK() bool { return r.ok }

// Len is the number of bytes left.
func (r *OffsetReader) Len() int { return len(r.b) }

// Fail marks the offset unreadable (a field that reads but makes no sense).
func (r *OffsetReader) Fail() { r.ok = false }

// Done reports whether every read succeeded and nothing is left over.
func (r *OffsetReader) Done() bool { return r.ok && len(r.b) == 0 }

// CheckSame refuses a restore into a file list other than the checkpoint's (files0 files of fingerprint fp0),
// saying how it differs.
func CheckSame(who, path string, files0 int, fp0 uint64, files int, fp uint64) error {
	if files0 == files && fp0 == fp {
		return nil
	}
	what := "a file was renamed, replaced or rewritten"
	switch {
	case files < files0:
		what = "a file of the list disappeared"
	case files > files0:
		what = "files were added"
	}
	return fmt.Errorf("%s: the files of %s changed since the checkpoint (%d then, %d now): %s",
		who, path, files0, files, what)
}

// List returns the files path names, sorted by path: a directory's regular files (symbolic links followed) whose
// names end in ext ("" for any) and do not start with '.' or '_', the files a glob pattern matches (a wildcard
// does not match a leading '.' or '_'; the directories before the first wildcard must exist), or a single file.
func List(fsys state.FS, path, ext string) ([]File, error) {
	var out []File
	if hasMeta(path) {
		if _, err := filepath.Match(path, ""); err != nil {
			return nil, fmt.Errorf("pattern %q: %w", path, err)
		}
		dir, comps := globSplit(path)
		// The directories before the first wildcard must exist: a typo there is an error, not an empty input.
		if st, err := fsys.Stat(dir); err != nil {
			return nil, err
		} else if !st.IsDir() {
			return nil, fmt.Errorf("%s is not a directory", dir)
		}
		if err := glob(fsys, dir, comps, &out); err != nil {
			return nil, err
		}
	} else {
		st, err := fsys.Stat(path)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			return []File{{Name: path, Size: st.Size()}}, nil
		}
		entries, err := fsys.ReadDir(path)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			name := e.Name()
			if Hidden(name) || !strings.HasSuffix(name, ext) {
				continue
			}
			if f, ok, err := regular(fsys, filepath.Join(path, name), e); err != nil {
				return nil, err
			} else if ok {
				out = append(out, f)
			}
		}
	}
	slices.SortFunc(out, func(a, b File) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// glob matches the path components comps under dir, one directory level per component. A wildcard does not
// match a name starting with '.' or '_' (hidden files, and the sinks' _staging) unless the pattern component starts
// with that character too.
func glob(fsys state.FS, dir string, comps []string, out *[]File) error {
	comp, last := comps[0], len(comps) == 1
	if !hasMeta(comp) {
		p := filepath.Join(dir, comp)
		st, err := fsys.Stat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil
		case err != nil:
			return err
		case last && st.Mode().IsRegular():
			*out = append(*out, File{Name: p, Size: st.Size()})
		case !last && st.IsDir():
			return glob(fsys, p, comps[1:], out)
		}
		return nil
	}
	entries, err := fsys.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		if Hidden(name) && comp[0] != name[0] {
			continue
		}
		if ok, _ := filepath.Match(comp, name); !ok {
			continue
		}
		p := filepath.Join(dir, name)
		if last {
			if f, ok, err := regular(fsys, p, e); err != nil {
				return err
			} else if ok {
				*out = append(*out, f)
			}
			continue
		}
		isDir := e.IsDir()
		if e.Type()&fs.ModeSymlink != 0 {
			st, err := fsys.Stat(p)
			isDir = err == nil && st.IsDir()
		}
		if isDir {
			if err := glob(fsys, p, comps[1:], out); err != nil {
				return err
			}
		}
	}
	return nil
}

// regular reports whether a directory entry is a regular file (following a symlink), with its size.
func regular(fsys state.FS, p string, e fs.DirEntry) (File, bool, error) {
	var info fs.FileInfo
	var err error
	if e.Type()&fs.ModeSymlink != 0 {
		info, err = fsys.Stat(p)
	} else if e.Type().IsRegular() {
		info, err = e.Info()
	} else {
		return File{}, false, nil
	}
	if errors.Is(err, fs.ErrNotExist) {
		return File{}, false, nil // a dangling link, or gone since the listing
	}
	if err != nil {
		return File{}, false, err
	}
	return File{Name: p, Size: info.Size()}, info.Mode().IsRegular(), nil
}

func hasMeta(p string) bool { return strings.ContainsAny(p, `*?[\`) }

// globSplit splits a glob pattern into its fixed directory (the components before the first one with a wildcard)
// and the components from there on.
func globSplit(pattern string) (dir string, comps []string) {
	clean := filepath.Clean(pattern)
	dir, comps = ".", strings.Split(clean, string(filepath.Separator))
	if filepath.IsAbs(clean) {
		dir, comps = string(filepath.Separator), comps[1:]
	}
	for len(comps) > 1 && !hasMeta(comps[0]) {
		dir, comps = filepath.Join(dir, comps[0]), comps[1:]
	}
	return dir, comps
}

// GlobBase returns the directory a file or Parquet connector's path is listed from when it is a glob pattern
// (the directories before its first wildcard), and false when it is not one.
func GlobBase(path string) (string, bool) {
	if !hasMeta(path) {
		return "", false
	}
	dir, _ := globSplit(path)
	return dir, true
}

// Hidden reports whether a listing skips name: it starts with '.' or '_' (such as a sink's _staging).
func Hidden(name string) bool { return name != "" && (name[0] == '.' || name[0] == '_') }

// Fingerprint hashes the names and sizes of a list: a restore checks it is reading the same files.
func Fingerprint(files []File) uint64 {
	h := fnv.New64a()
	var buf [8]byte
	for _, f := range files {
		binary.BigEndian.PutUint64(buf[:], uint64(len(f.Name)))
		h.Write(buf[:])
		h.Write([]byte(f.Name))
		binary.BigEndian.PutUint64(buf[:], uint64(f.Size))
		h.Write(buf[:])
	}
	return h.Sum64()
}

// Guard checks every listed file against the guard.
func Guard(g connectors.PathGuard, files []File) error {
	for _, f := range files {
		if err := g.Check(f.Name); err != nil {
			return err
		}
	}
	return nil
}
