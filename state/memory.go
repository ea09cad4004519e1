package state

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
)

// OpenMemory opens a backend that keeps all state in a Go map: for small per-subtask state (source offsets, sink
// bookkeeping, watermarks, in-flight records). Capture copies the map (O(entries), no disk), so it is meant for
// state of at most a few thousand entries; keyed operator state belongs in OpenPebble.
func OpenMemory(opts Options) (Backend, error) {
	b := &memBackend{fsys: orOS(opts.FS), t: newMemtable()}
	if path := opts.RestorePath; path != "" {
		data, err := MustReadFramed(b.fsys, path)
		if err != nil {
			return nil, fmt.Errorf("state: restore: %w", err)
		}
		if err := decodeState(data, func(k, v []byte) { b.t.set(k, entry{v: v}) }); err != nil {
			return nil, Corrupt(path, err, "%v", err)
		}
	}
	return b, nil
}

func orOS(fsys FS) FS {
	if fsys == nil {
		return OS
	}
	return fsys
}

type memBackend struct {
	fsys FS
	t    *memtable
}

func (b *memBackend) Get(key []byte) ([]byte, bool, error) {
	e, ok := b.t.get(key)
	return e.v, ok, nil
}

func (b *memBackend) Put(key, value []byte) { b.t.set(key, entry{v: value}) }
func (b *memBackend) Delete(key []byte)     { b.t.remove(key) }

func (b *memBackend) Scan(prefix []byte, fn func(key, value []byte) error) error {
	b.t.prepareScan()
	for it := b.t.iter(prefix); it.valid(); it.next() {
		if err := fn(it.key(), it.e.v); err != nil {
			return err
		}
	}
	return nil
}

// Capture copies the map's entries (not the values: Put replaces a value slice, never edits it in place).
func (b *memBackend) Capture(id uint64) (Snapshot, error) {
	kvs := make([]kv, 0, len(b.t.m))
	for k, e := range b.t.m {
		kvs = append(kvs, kv{k, e.v})
	}
	return &memSnapshot{id: id, fsys: b.fsys, kvs: kvs}, nil
}

func (b *memBackend) Close() error {
	b.t = newMemtable()
	return nil
}

type kv struct {
	k string
	v []byte
}

type memSnapshot struct {
	id   uint64
	fsys FS
	kvs  []kv
	used atomic.Bool
}

func (s *memSnapshot) ID() uint64 { return s.id }
func (s *memSnapshot) Release()   { s.used.Store(true); s.kvs = nil }

// Persist writes the snapshot as one file at path (WriteFsyncRename: the file and its name are durable).
func (s *memSnapshot) Persist(path string) error {
	if s.used.Swap(true) {
		return fmt.Errorf("state: snapshot %d persisted or released already", s.id)
	}
	data := encodeState(s.kvs)
	s.kvs = nil
	if err := WriteFramed(s.fsys, path, data); err != nil {
		return fmt.Errorf("state: persist snapshot %d: %w", s.id, err)
	}
	return nil
}

// encodeState lays out a memory snapshot (the payload of a framed file, frame.go): a uvarint entry count, then
// per entry a uvarint key length, the key, a uvarint value length and the value, in ascending key order (equal
// state, equal bytes).
func encodeState(kvs []kv) []byte {
	slices.SortFunc(kvs, func(a, b kv) int { return strings.Compare(a.k, b.k) })
	size := binary.MaxVarintLen64
	for _, e := range kvs {
		size += 2*binary.MaxVarintLen32 + len(e.k) + len(e.v)
	}
	buf := make([]byte, 0, size)
	buf = binary.AppendUvarint(buf, uint64(len(kvs)))
	for _, e := range kvs {
		buf = binary.AppendUvarint(buf, uint64(len(e.k)))
		buf = append(buf, e.k...)
		buf = binary.AppendUvarint(buf, uint64(len(e.v)))
		buf = append(buf, e.v...)
	}
	return buf
}

var errCorrupt = errors.New("corrupt state file")

// decodeState reads a payload whose frame checksum passed, calling fn for each entry with slices that alias data,
// which the caller must not modify afterwards.
func decodeState(data []byte, fn func(k, v []byte)) error {
	r := data
	next := func() ([]byte, bool) {
		n, w := binary.Uvarint(r)
		if w <= 0 || n > uint64(len(r)-w) {
			return nil, false
		}
		b := r[w : w+int(n) : w+int(n)]
		r = r[w+int(n):]
		return b, true
	}
	count, w := binary.Uvarint(r)
	if w <= 0 {
		return fmt.Errorf("%w: bad entry count", errCorrupt)
	}
	r = r[w:]
	for i := uint64(0); i < count; i++ {
		k, ok1 := next()
		v, ok2 := next()
		if !ok1 || !ok2 {
			return fmt.Errorf("%w: entry %d truncated", errCorrupt, i)
		}
		fn(k, v)
	}
	if len(r) != 0 {
		return fmt.Errorf("%w: %d trailing bytes", errCorrupt, len(r))
	}
	return nil
}
