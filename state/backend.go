package state

import "github.com/cockroachdb/pebble/v2/vfs"

// Backend is one subtask's checkpointed key-value state.
//
// Keys are opaque bytes. Keyed state puts the key group first (two bytes, big endian; see KeyedKey) so that a
// later restore at another parallelism can take a key-group range out of each store; operator state that belongs
// to the subtask as a whole (source offsets, watermarks, in-flight records) uses keys that start with 0xFF 0xFF.
//
// Goroutines: Get, Put, Delete, Scan and Capture are called only from the owning subtask's goroutine. A Snapshot's
// Persist runs on the snapshot worker goroutine, one at a time, in capture order, while the subtask goes on using
// the backend. Close is called after both have stopped.
//
// Write-back: Put and Delete change an in-memory cache; nothing touches disk on the per-row path. Capture pins
// the state as of the call cheaply (no waiting on disk), and Persist makes it durable off the operator goroutine.
type Backend interface {
	// Get returns the value of key. The returned slice must not be modified and is valid until the next Put or
	// Delete of the same key.
	Get(key []byte) (value []byte, ok bool, err error)
	// Put sets key to value and takes ownership of both slices.
	Put(key, value []byte)
	// Delete removes key.
	Delete(key []byte)
	// Scan calls fn for each live key that starts with prefix, in ascending key order, over the merged view of
	// the cache and the store. fn must not call Put or Delete; the slices are valid only during the call.
	Scan(prefix []byte, fn func(key, value []byte) error) error
	// Capture pins the state as of now for checkpoint id.
	Capture(id uint64) (Snapshot, error)
	// Close releases the backend. Snapshots not yet persisted are dropped.
	Close() error
}

// Snapshot is state pinned at a barrier, waiting to be made durable.
type Snapshot interface {
	// ID is the checkpoint id the snapshot was captured for.
	ID() uint64
	// Persist writes the snapshot durably at path, which it creates in an existing directory: one file (memory
	// backend) or a directory (Pebble). It returns only once the snapshot and its name in the parent directory
	// are durable (fsync on, see FsyncEnabled). A Snapshot is persisted at most once.
	Persist(path string) error
	// Release drops the snapshot without persisting it (the job was cancelled).
	Release()
}

// Options opens a backend.
type Options struct {
	// FS is the seam for the backend's own durable files; nil means OS.
	FS FS
	// Dir is the working directory of a disk-backed store (Pebble); unused by the memory backend.
	Dir string
	// RestorePath is where a Snapshot was persisted, to start from; "" starts empty.
	RestorePath string
	// SharedDir is where a disk-backed store keeps the files its persisted snapshots share (delta sstables and
	// chain bases); "" means Dir + ".shared". It must outlive the snapshots that name files in it.
	SharedDir string
	// LiveSnapshots, when set, returns the paths of this store's persisted snapshots that still exist (those a
	// restore may still read); files of SharedDir that none of them names are deleted when a chain is re-based.
	// Nil never deletes anything.
	LiveSnapshots func() ([]string, error)
	// CacheBytes bounds the clean entries the write-back cache keeps in memory (dirty entries are always kept
	// until persisted); 0 means a default.
	CacheBytes int64
	// PebbleFS is the file system Pebble's own files go through (tests inject I/O errors with Pebble's
	// vfs/errorfs); nil means the real one.
	PebbleFS vfs.FS
}
