// Package state owns the checkpointed state of subtasks: the Backend contract (backend.go), two backends, the
// durable-write primitive every checkpoint file goes through (WriteFsyncRename, durable.go), the FS seam with its
// fault injection (fs.go), key groups (keygroup.go), the key layout of keyed and operator state (keys.go), and
// event-time timers (timers.go).
//
// # Rules
//
// What this package must never do:
//   - touch disk on the per-row path: Put and Delete change an in-memory map; Get reads memory first and Pebble
//     (its memtable and block cache, maybe a read) only for keys that are not in memory;
//   - do I/O or copy keyed state in Capture: the Pebble backend hands its dirty map to the snapshot, O(1);
//   - persist on the operator goroutine: Persist runs on the snapshot worker, one at a time, in capture order;
//   - overwrite a persisted snapshot, or leave a partial one under its final name;
//   - treat a working directory as state: Pebble's working store is scratch, rebuilt on every open from the
//     restore directory (or empty), so a crash never needs it.
//
// # Backends
//
// OpenMemory keeps everything in a Go map and copies it at Capture: meant for small per-subtask state (source
// offsets, sink bookkeeping, watermarks, in-flight records), not for keyed state.
//
// OpenPebble keeps keyed state in a Pebble store behind a write-back cache with these layers, newest first:
//
//	dirty map                 Put/Delete since the last Capture or WriteBatch (operator goroutine only)
//	key filter                every key of the layers below (keyfilter.go): a key it rejects is in none of them
//	dirty runs                WriteBatch's batches since the last Capture, and the dirty maps they froze
//	pending snapshots         captured (some already persisted), not yet in Pebble (a list under a mutex)
//	clean cache               the last few ingested snapshots' layers, and values Get read from Pebble
//	Pebble
//
// Get walks them in that order and Scan merges them (the newest entry of a key wins; a delete hides older layers).
// A layer is a memtable (a Go map, memtable.go) or a run (run.go): a Batch kept whole, its keys and values end to
// end with 12 bytes per entry, against a map entry's hundred bytes and two allocations. A run builds a Bloom filter
// of its keys (20 bits each) at the first lookup that reaches it, and a hash index (16 bytes per entry) only once a
// lookup gets past that filter: most lookups that reach a run are the key filter's false positives, for keys in no
// layer, and no longer index every run they pass. An operator that writes back many keys at a barrier (the group
// aggregate) hands them over as one Batch. GetMany (multiget.go) is Get for the keys of a whole input batch: the
// in-memory layers under one lock, then the keys none of them holds read from Pebble in key order through one
// iterator.
//
// The key filter is what keeps state beyond memory without a cliff when most keys are new (a GROUP BY over a
// growing key space): a new key costs a probe of the dirty map and one block per filter generation (GetMany and
// the adds touch the blocks of 256 keys first, so that their cache misses overlap), never a walk
// of the other layers nor a Pebble lookup (each of which checks a bloom filter per table, whose filter block is
// about 1.25 MB per million keys). Keys enter it when they leave the dirty map (WriteBatch, Capture). A store
// opened from a restore reads its keys into a filter of their own in the background and uses the filter once that
// is done; until then every miss is looked up in Pebble.
//
// Persist writes the newest entry of every key of the pending snapshots not persisted yet, up to its own, into one
// sorted delta sstable in the shared directory, then the snapshot's listing (see Persisted layout). It orders the
// entries with a radix sort over the key bytes that differ (collect.go): one pass over memory scatters them by the
// most significant of those bytes (for keyed state the key group), then each bucket, a few hundred KB, is sorted
// in cache, the buckets shared among GOMAXPROCS goroutines (about half the CPU of an LSD sort over the whole slice,
// and less wall time when a core is free). It writes them from chunks copied in that order (a run's entry carries
// where its key and value are, so the copy reads them without looking the entry up again), so its cost is a few
// passes over the changed entries. The delta's stripes are separate tables, written concurrently (up to GOMAXPROCS
// at once): a checkpoint waits for about the longest stripe when a core is free. The persisted snapshots stay
// pending, in memory, until their deltas are ingested into Pebble (after maxUnflushed deltas, or as soon as they
// take a quarter of the store's budget: a store that changes a lot per checkpoint ingests every delta at once);
// only after Pebble has a delta do its snapshots leave the pending list, so a concurrent Get never misses a value.
// The ingest runs in the background once the Persist that decided it has returned (the checkpoint needs its delta
// durable, not in Pebble); the next Persist waits for it and, if it failed, ingests again and fails with the error.
// A delta's stripes go into Pebble in one Ingest (one MANIFEST edit and sync, not one per table). A Released
// snapshot stays pending and goes into the next delta, since its changes are still the newest for their keys; so do
// the snapshots of a Persist that failed.
//
// Pre-persists (prepersist.go): a store that hands over many entries between checkpoints (WriteBatch; the group
// aggregate writes its working set back each time it outgrows it) writes them as delta tables during the interval,
// so that the checkpoint does not sort and write the whole interval at once (the first checkpoint of a job that
// starts on empty state held about twice the entries of later ones, and set the p99). Once the dirty layers not
// pre-persisted yet hold prePersistEntries (256k) entries and no pre-persist is running, the operator goroutine
// starts one over them (they are frozen, so it reads them without a lock): a goroutine sorts and writes them
// like a delta, under persistMu (so never beside a Persist), fsyncs the tables and the shared directory, and
// sums them. Capture hands the interval's pre-persists to its snapshot. Its Persist waits for them, then:
//   - one failed: the Persist fails (its snapshot stays pending and goes whole into the next delta); a checkpoint
//     never names a table that was not written and synced;
//   - the snapshot is the only one not persisted: the listing names the pre-persisted tables (in order), then the
//     delta of the layers after them; each is a delta of its own in the unflushed list, ingested in that order;
//   - otherwise (an earlier Persist failed, or a snapshot was released, so this delta also holds older entries,
//     which must not shadow the pre-persisted ones): the delta holds everything, as without pre-persists, and the
//     pre-persisted tables are deleted.
//
// Their tables are named p<nanotime>.<seq>[-<stripe>].sst; garbage collection keeps those no listing names yet
// (preFiles), and they do not count as checkpoints towards a re-base. A crash leaves them unnamed: harmless, and
// the next garbage collection removes them.
//
// Memory: Options.CacheBytes (0: DefaultCacheBytes, which SetDefaultCacheBytes sets for the process, else 1/32
// of the machine's memory between 64 MB and 1 GB) bounds what a store keeps besides its dirty layers: the persisted
// snapshots waiting for their ingest, the key filter, then the clean cache in what is left (oldest generation
// evicted first). The dirty layers are the changes of one checkpoint interval and are bounded by the checkpoint's
// backpressure (the snapshot worker holds at most one capture waiting behind the one it persists).
//
// Pebble is tuned for many small stores per process and for deltas that span the whole key space (keys start with a
// hashed key group, so every delta lands in L0 and overlaps everything): one block cache shared by all stores (half
// the default budget, for the tables' index and filter blocks), a small memtable that stays empty anyway (all writes
// are ingested), no WAL (durability comes from the checkpoint, never from the working store), bloom filters so a Get
// of an absent key rarely reads a block, up to 1024 open tables, compactions writing 64 MB tables, no write stall on
// L0 (nothing goes through the memtable), and a format major version with row-based sstables (for small entries about
// half the CPU per persist of columnar blocks, and compactions about a third less). Pebble's automatic compactions are
// off: with deltas that each span the whole key space, its policy rewrites the whole store every few checkpoints. The
// store compacts everything into one level in the background once L0 holds as many bytes as the levels below (or 96
// sublevels, since pre-persists make two or three deltas per checkpoint), so an entry is rewritten about twice in all,
// and a large delta is written as one table per stripe (8 fixed ranges of key groups) so that the compaction runs
// stripe by stripe: Close, which must wait for a running compaction, waits for one stripe's at most. The compaction
// yields to the store's persists (pace.go): while a persist sorts and writes its delta, each write of a compaction's
// output table waits, up to a second per persist, so that a checkpoint does not share the cores with a rewrite of the
// whole store as well as with the operator; only that CPU-heavy part holds the pacer, never a call into Pebble.
// Pebble's own files do not go through Options.FS (Pebble has its own vfs, Options.PebbleFS, which tests wrap with
// vfs/errorfs); its fsyncs follow FsyncEnabled through a wrapping vfs, so CLINK_STATE_FSYNC=0 turns off all of them.
//
// What Pebble treats as fatal (its Logger's Fatalf on a MANIFEST write that failed, a data corruption, a
// background error) never exits the process: it fails the one store (pebblefault.go), whose every later operation
// returns that error, so the job or query that owns the store fails or restarts from a checkpoint, and the
// server goes on.
//
// Scan costs O(entries in the in-memory layers under the prefix, plus a sort of the few keys added since the
// previous Scan) plus the Pebble range: use it for enumeration (a key's map fields, timers at restore, key-group
// ranges), not as a per-row full scan of a large store.
//
// # Persisted layout
//
// Every file this package writes and reads back, and every other durable file of the engine except Pebble's own,
// is framed (frame.go): "CLKF", a version byte, the payload, its length and a CRC-32C of it all. A file that is
// missing where it must exist, truncated, or fails its checksum is a *CorruptError naming it: SQLSTATE XX001,
// permanent (a job fails rather than restarting onto the same bytes). Pebble reports its own corrupt blocks; a
// read that meets one returns a *CorruptError naming the shared table (and Pebble's DataCorruption listener no
// longer exits the process). VerifySnapshot checks a persisted snapshot without restoring it; for a chain it checks
// every file the listing names against the sums it recorded (deltas: size and checksum; a base: sizes of its
// tables, size and checksum of the rest), which also catches a MANIFEST cut at a record boundary.
//
// A memory-backend snapshot is one framed file at the path Persist is given: a uvarint entry count, per entry
// uvarint key length, key, uvarint value length, value (ascending key order).
//
// A Pebble snapshot is a chain (chain.go): a small listing file at the path Persist is given ("clinksql-chain 1", then
// "base <dir>", "delta <file>" and "sum <file> <size> <crc32c|->" lines relative to the listing's directory, then
// "end"), framed, naming files in the store's shared directory (Options.SharedDir): delta sstables <id>.sst, oldest
// first, and optionally a base, base-<id>, which is a Pebble checkpoint. A checkpoint therefore writes one delta (what
// changed; <id>-<stripe>.sst, one table per stripe, once the store has stripes) and one listing, whatever the state's
// size; a store that pre-persisted during the interval (see above) also has its listing name those tables,
// p<nanotime>.<seq>[-<stripe>].sst, before its own delta. Deltas may overlap; they are applied in listing order, so a
// later one's entry for a key wins. Every table a listing names was fsync'd, and the shared directory synced, before
// the listing was written. The checkpoint whose listing names maxChainDeltas (16) deltas starts a re-base, in the
// background after its Persist returned (with the ingest, see above): it ingests every delta into Pebble and takes a
// Pebble checkpoint as the new base, base-<id>, the state as of that checkpoint (hard links to immutable sstables;
// built in ".base-<id>.part" and renamed, so it is complete or absent), then deletes the shared files that neither the
// new chain nor a live snapshot names (Options.LiveSnapshots: the listings that exist, so the re-basing checkpoint's
// own, which names the old chain, keeps it). The next checkpoint's listing names the new base and its own delta. So no
// checkpoint's ack waits for a re-base; the next Persist waits for what is left of it. A restore rebuilds the working
// directory from the base (*.sst and *.blob hard-linked, the rest copied, because the opened store appends to its
// MANIFEST and rewrites OPTIONS) and ingests the deltas in order; Pebble removes a path it ingests, so it is handed a
// scratch hard link, never the shared file.
//
// # Pebble checkpoint durability (v2.1.7, read from checkpoint.go)
//
// DB.Checkpoint is durable by itself when it returns: it creates the destination and syncs every parent it had to
// create plus the closest existing one; it writes OPTIONS, MANIFEST and WAL copies through a syncing vfs and
// fsyncs each; the marker files are moved with a directory sync; and it fsyncs the destination directory last.
// Hard-linked sstables need no sync of their own: Pebble fsyncs every sstable when it finishes writing it (flush,
// compaction, and our delta tables on Close). What Checkpoint cannot cover is our rename of the ".part"
// directory into place, so the re-base fsyncs the parent after it. Checkpoint refuses an existing destination, which
// the rename relies on to never overwrite: renaming onto a non-empty directory fails.
//
// # Keys
//
// Keyed state: KeyedKey = key group (2 bytes, big endian) + state id (1 byte) + user key; key group 0xFFFF is
// invalid. Operator state: OperatorKey = 0xFF 0xFF + name; names starting with 0x00 are reserved for this package.
// Timers live at OperatorKey("\x00timers/") + key group (2 bytes) + timestamp (8 bytes, sign bit flipped) + key,
// written by TimerService.Flush at each barrier before Capture, so a restore neither re-fires nor loses a timer.
package state
