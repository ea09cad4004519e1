package state

import (
	"bufio"
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
)

// A Pebble snapshot is a chain: an optional base (a Pebble checkpoint directory) plus delta sstables written since,
// oldest first, all in the store's shared directory. The snapshot itself is a small file listing them, by paths
// relative to that file's directory, so a data directory can be moved as a whole. Restoring rebuilds the working
// store from the base and ingests the deltas in order (a later delta's entries shadow an earlier one's).
//
// A checkpoint therefore costs one delta sstable (what changed) and one small file; every maxChainDeltas
// checkpoints the chain is re-based on a fresh Pebble checkpoint (hard links to the store's immutable sstables),
// which bounds restore work and the shared directory's size.
type chainSpec struct {
	base   string   // absolute; "" for none
	deltas []string // absolute, oldest first
}

const chainHeader = "clinksql-chain 1"

// maxChainDeltas bounds a chain; the next checkpoint re-bases it.
const maxChainDeltas = 16

func (c chainSpec) with(delta string) chainSpec {
	return chainSpec{base: c.base, deltas: append(append([]string(nil), c.deltas...), delta)}
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
	for _, f := range c.files() {
		if _, err := fsys.Stat(f); err != nil {
			return Corrupt(f, err, "missing (named by %s)", path)
		}
	}
	return nil
}
