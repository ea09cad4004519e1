package state

import (
	"bufio"
	"bytes"
	"fmt"
	"hash/crc32"
	"io"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// A Pebble snapshot is a chain: an optional base (a Pebble checkpoint directory) plus delta sstables written since,
// oldest first, all in the store's shared directory. The snapshot itself is a small file listing them, by paths
// relative to that file's directory, so a data directory can be moved as a whole. Restoring rebuilds the working
// store from the base and ingests the deltas in order (a later delta's entries shadow an earlier one's).
//
// A checkpoint therefore costs one delta sstable (what changed) and one small file; once a chain names
// maxChainDeltas deltas it is re-based, in the background, on a fresh Pebble checkpoint (hard links to the store's
// immutable sstables), which bounds restore work and the shared directory's size.
type chainSpec struct {
	base   string   // absolute; "" for none
	deltas []string // absolute, oldest first
	// sums holds what each file of the chain was when it was written (absolute path -> size and, for deltas and
	// the base's small files, a CRC-32C): Pebble's block checksums cannot see a file cut short at a record
	// boundary (a MANIFEST that then describes an older store) or a missing table it does not read yet.
	sums map[string]fileSum
}

// fileSum is a file's size and, when hasCRC, its CRC-32C (Castagnoli).
type fileSum struct {
	size   int64
	crc    uint32
	hasCRC bool
}

const chainHeader = "clinksql-chain 1"

// maxChainDeltas bounds a chain: the checkpoint that reaches it starts a re-base (pebbleBackend.ingestLater).
const maxChainDeltas = 16

func (c chainSpec) with(delta string, sum fileSum) chainSpec {
	sums := make(map[string]fileSum, len(c.sums)+1)
	for p, s := range c.sums {
		sums[p] = s
	}
	sums[delta] = sum
	return chainSpec{base: c.base, deltas: append(append([]string(nil), c.deltas...), delta), sums: sums}
}

// sumFile reads path's size and, with crc, its checksum.
func sumFile(fsys FS, path string, crc bool) (fileSum, error) {
	fi, err := fsys.Stat(path)
	if err != nil {
		return fileSum{}, err
	}
	s := fileSum{size: fi.Size()}
	if !crc {
		return s, nil
	}
	f, err := fsys.Open(path)
	if err != nil {
		return fileSum{}, err
	}
	defer f.Close()
	h := crc32.New(crcTable)
	if _, err := io.Copy(h, f); err != nil {
		return fileSum{}, err
	}
	s.crc, s.hasCRC = h.Sum32(), true
	return s, nil
}

// baseSums sums every file of a base (a Pebble checkpoint): sizes of its tables (immutable, checked block by
// block as Pebble reads them; reading them all every re-base would cost the whole state), size and checksum of
// the rest (MANIFEST, OPTIONS, markers: small).
func baseSums(fsys FS, dir string, into map[string]fileSum) error {
	entries, err := fsys.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		s, err := sumFile(fsys, p, !strings.HasSuffix(e.Name(), ".sst") && !strings.HasSuffix(e.Name(), ".blob"))
		if err != nil {
			return err
		}
		into[p] = s
	}
	return nil
}

// verifyChain checks that every file the listing at path names is there and as it was written.
func verifyChain(fsys FS, path string, c chainSpec) error {
	for _, f := range c.files() {
		if _, err := fsys.Stat(f); err != nil {
			return Corrupt(f, err, "missing (named by %s)", path)
		}
	}
	names := make([]string, 0, len(c.sums))
	for p := range c.sums {
		names = append(names, p)
	}
	sort.Strings(names)
	for _, p := range names {
		want := c.sums[p]
		got, err := sumFile(fsys, p, want.hasCRC)
		switch {
		case err != nil:
			return Corrupt(p, err, "missing or unreadable (named by %s)", path)
		case got.size != want.size:
			return Corrupt(p, nil, "%d bytes, %d when the checkpoint was written", got.size, want.size)
		case got.crc != want.crc:
			return Corrupt(p, nil, "checksum mismatch")
		}
	}
	return nil
}

// files lists everything the chain needs.
func (c chainSpec) files() []string {
	out := append([]string(nil), c.deltas...)
	if c.base != "" {
		out = append(out, c.base)
	}
	return out
}

// writeChain persists the chain's listing at path, durably.
func writeChain(fsys FS, path string, c chainSpec) error {
	dir := filepath.Dir(path)
	var buf bytes.Buffer
	buf.WriteString(chainHeader + "\n")
	rel := func(p string) (string, error) { return filepath.Rel(dir, p) }
	if c.base != "" {
		r, err := rel(c.base)
		if err != nil {
			return err
		}
		fmt.Fprintf(&buf, "base %s\n", r)
	}
	for _, d := range c.deltas {
		r, err := rel(d)
		if err != nil {
			return err
		}
		fmt.Fprintf(&buf, "delta %s\n", r)
	}
	sums := make([]string, 0, len(c.sums))
	for p := range c.sums {
		sums = append(sums, p)
	}
	sort.Strings(sums)
	for _, p := range sums {
		r, err := rel(p)
		if err != nil {
			return err
		}
		s := c.sums[p]
		crc := "-"
		if s.hasCRC {
			crc = strconv.FormatUint(uint64(s.crc), 16)
		}
		fmt.Fprintf(&buf, "sum %s %d %s\n", r, s.size, crc)
	}
	buf.WriteString("end\n")
	return WriteFramed(fsys, path, buf.Bytes())
}

// readChain reads a listing writeChain wrote; a truncated or foreign file is an error naming it.
func readChain(fsys FS, path string) (chainSpec, error) {
	var c chainSpec
	data, err := ReadFramed(fsys, path)
	if err != nil {
		return c, err
	}
	dir := filepath.Dir(path)
	sc := bufio.NewScanner(bytes.NewReader(data))
	if !sc.Scan() || sc.Text() != chainHeader {
		return c, Corrupt(path, nil, "not a keyed-state snapshot")
	}
	ended := false
	for sc.Scan() {
		kind, p, _ := strings.Cut(sc.Text(), " ")
		switch kind {
		case "base":
			c.base = filepath.Join(dir, p)
		case "delta":
			c.deltas = append(c.deltas, filepath.Join(dir, p))
		case "sum":
			f := strings.Fields(p)
			if len(f) != 3 {
				return c, Corrupt(path, nil, "bad line %q", sc.Text())
			}
			var s fileSum
			var err error
			if s.size, err = strconv.ParseInt(f[1], 10, 64); err != nil {
				return c, Corrupt(path, nil, "bad line %q", sc.Text())
			}
			if f[2] != "-" {
				v, err := strconv.ParseUint(f[2], 16, 32)
				if err != nil {
					return c, Corrupt(path, nil, "bad line %q", sc.Text())
				}
				s.crc, s.hasCRC = uint32(v), true
			}
			if c.sums == nil {
				c.sums = map[string]fileSum{}
			}
			c.sums[filepath.Join(dir, f[0])] = s
		case "end":
			ended = true
		default:
			return c, Corrupt(path, nil, "bad line %q", sc.Text())
		}
	}
	if !ended {
		return c, Corrupt(path, nil, "truncated")
	}
	return c, nil
}

// VerifySnapshot checks a persisted snapshot without restoring it: its file reads back as written, and for keyed
// state (a chain listing) every file the listing names exists. The contents of Pebble's tables are checked by
// Pebble itself as they are read, not here. Damage is a *CorruptError naming the file.
func VerifySnapshot(fsys FS, path string, keyed bool) error {
	fsys = orOS(fsys)
	if !keyed {
		_, err := MustReadFramed(fsys, path)
		return err
	}
	c, err := readChain(fsys, path)
	if err != nil {
		return restoreErr(path, err)
	}
	return verifyChain(fsys, path, c)
}
