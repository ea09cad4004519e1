package state

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"
	"strings"
	"sync/atomic"
)

const (
	memMagic   = "CLKS"
	memVersion = 1
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// OpenMemory opens a backend that keeps all state in a Go map: for small per-subtask state (source offsets, sink
// bookkeeping, watermarks, in-flight records). Capture copies the map (O(entries), no disk), so it is meant for
// state of at most a few thousand entries; keyed operator state belongs in OpenPebble.
func OpenMemory(opts Options) (Backend, error) {
	b := &memBackend{fsys: orOS(opts.FS), t: newMemtable()}
	if path := opts.RestorePath; path != "" {
		data, err := b.fsys.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("state: restore %s: %w", path, err)
		}
		if err := decodeState(data, func(k, v []byte) { b.t.set(k, entry{v: v}) }); err != nil {
			return nil, fmt.Errorf("state: restore %s: %w", path, err)
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
	if err := WriteFsyncRename(s.fsys, path, data); err != nil {
		return fmt.Errorf("state: persist snapshot %d: %w", s.id, err)
	}
	return nil
}

// encodeState lays out a memory snapshot: "CLKS", a version byte, a uvarint entry count, then per entry a uvarint
// key length, the key, a uvarint value length and the value, in ascending key order (equal state, equal bytes);
// last a CRC-32C (Castagnoli) of everything before it, 4 bytes little endian.
func encodeState(kvs []kv) []byte {
	slices.SortFunc(kvs, func(a, b kv) int { return strings.Compare(a.k, b.k) })
	size := len(memMagic) + 1 + binary.MaxVarintLen64 + 4
	for _, e := range kvs {
		size += 2*binary.MaxVarintLen32 + len(e.k) + len(e.v)
	}
	buf := make([]byte, 0, size)
	buf = append(buf, memMagic...)
	buf = append(buf, memVersion)
	buf = binary.AppendUvarint(buf, uint64(len(kvs)))
	for _, e := range kvs {
		buf = binary.AppendUvarint(buf, uint64(len(e.k)))
		buf = append(buf, e.k...)
		buf = binary.AppendUvarint(buf, uint64(len(e.v)))
		buf = append(buf, e.v...)
	}
	return binary.LittleEndian.AppendUint32(buf, crc32.Checksum(buf, crcTable))
}

var errCorrupt = errors.New("corrupt state file")

// decodeState checks the checksum before trusting any length in data, then calls fn for each entry with slices
// that alias data, which the caller must not modify afterwards.
func decodeState(data []byte, fn func(k, v []byte)) error {
	if len(data) < len(memMagic)+1+1+4 || string(data[:len(memMagic)]) != memMagic {
		return fmt.Errorf("%w: bad header", errCorrupt)
	}
	body, sum := data[:len(data)-4], binary.LittleEndian.Uint32(data[len(data)-4:])
	if crc32.Checksum(body, crcTable) != sum {
		return fmt.Errorf("%w: checksum mismatch", errCorrupt)
	}
	if v := body[len(memMagic)]; v != memVersion {
		return fmt.Errorf("state file version %d, this build reads %d", v, memVersion)
	}
	r := body[len(memMagic)+1:]
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
