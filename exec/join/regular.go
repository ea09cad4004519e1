package join

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"time"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/expr"
	"github.com/clinksql/clinksql/exec/rowcodec"
	"github.com/clinksql/clinksql/sqlerr"
	"github.com/clinksql/clinksql/state"
)

// The regular join: an equi-join without a time bound over two changelogs (Flink's StreamingJoinOperator,
// RisingWave's hash join). Every row of each side is kept in keyed state, so its result is itself a changelog.
//
// Contract:
//
//   - Input 0 is the left side, input 1 the right. The planner routes both through a hash exchange on LeftKeys /
//     RightKeys (exec.HashKeys); a row of a key group outside TaskContext.KeyGroups is a routing bug and fails the
//     operator.
//   - Row kinds: +I and +U add one copy of a row to its side, -U and -D retract one copy of an equal row (equal in
//     the canonical value bytes of package rowcodec: -0 equals 0, NaNs are one value). Retracting a row that is not
//     in state (it expired, or the input changelog is broken) is counted in TaskContext.Errors and ignored. An
//     input whose Updating flag is false fails the operator on any kind other than +I.
//   - Matching: keys equal with no NULL component, and Residual (evaluated vectorized over the candidate pairs of a
//     batch, Mode as the bad-value policy, bad values counted in TaskContext.Errors) TRUE.
//   - Output (JoinOutputSchema, a changelog with Kinds set; nil Kinds when a batch's output is only inserts): an
//     added row emits +I for each pair it makes, a retracted row -D for each pair it was in. For an outer side
//     (LEFT/FULL for the left, RIGHT/FULL for the right) an added row without matches emits +I (row, NULLs); when
//     its first match arrives the partner's row emits -D (row, NULLs) then +I (pair), per copy; when its last
//     match is retracted, -D (pair) then +I (row, NULLs); a retracted unmatched row emits -D (row, NULLs). A row
//     with a NULL key component matches nothing and is not stored: on an outer side it is emitted padded (+I when
//     added, -D when retracted), on an inner side dropped.
//   - Semi and anti (JoinSemi, JoinAnti: EXISTS, IN and their negations, planned from subqueries): the left side
//     is kept as an outer side, so each left copy knows how many right copies match it; no pair is emitted, only
//     left rows padded with NULLs: a semi join's while the row has a match (+I when its first match arrives or
//     it is added with one, -D when its last match goes or it is retracted with one), an anti join's while it has
//     none (exactly a left outer join's padded rows). A semi join over two append-only inputs is append-only.
//   - Determinism: output per input batch, in input row order; for one row its pairs in the order the partner
//     rows were first stored (a copy of a row already stored is counted in its slot, not appended).
//   - Watermarks: a regular join gives no event-time guarantee; the input watermark is forwarded as it is and
//     OnWatermark does nothing.
//
// State (keyed, under the row's key group; key is the canonical key bytes of package rowcodec):
//
//	KeyedKey(kg, 1, key)   the left rows of key, or the head of its chunks  (leftStateID)
//	KeyedKey(kg, 2, key)   the right rows of key, or the head of its chunks (rightStateID)
//	KeyedKey(kg, 3, bucket(8) side(1) key)   TTL expiry index, empty value (only with TTL > 0)
//	KeyedKey(kg, 4+side, chunk(4) key)      chunk of a static side's rows (chunkStateID; chunk 0, 1, ...)
//
// A side's value is: a flags byte (bit 0: match counts present, i.e. the side is outer; bit 1: chunked), the last
// write (8 bytes, big endian, processing time in microseconds; 0 without TTL), a uvarint slot count, then per slot
// uvarint length, the row's canonical bytes (every column: 0x00 for NULL, else 0x01 and the value), uvarint copies
// and, for an outer side, uvarint associations (Flink's numOfAssociations: how many partner copies each copy is
// paired with downstream). A row's matches are thus found with one Get of the partner's value, never a Scan.
//
// A static side (append-only and inner: its rows never change once stored, only expire all at once) keeps its
// rows in chunks instead: the value is a head (flags with the chunked bit, last write, uvarint row count,
// uvarint chunk count) and chunk c holds slots in the same format. A write-back stores the rows added since the
// previous one as one more chunk, so adding rows never rewrites those stored (the append-only bid side of a
// Nexmark join is written once per row, not once per checkpoint); a key probed since the previous write-back
// is rewritten as chunk 0 when it would reach maxChunks, so a probe reads few chunks. A value written without the
// chunked bit on a static side (before chunks existed) is kept in the one-value format.
//
// Working set: both sides' values (or heads) of a key are read (two Gets) when a batch first touches the key and
// kept in memory as keyEntry's; a row is added by appending it there, never by re-encoding the value. An
// append-only side's value is not even parsed until the key is probed from the other side, and a static side's
// rows are read from its chunks only then. Its new rows always go to a per-side fresh log (no allocation or
// growth per key; a probe makes them slots), and at a write-back a static entry drops its rows from memory unless
// it was probed since the previous one and they fit its inline arena (or are being folded into chunk 0). A
// write-back reserves each such entry's new chunk in the state.Batch (Batch.Reserve) and copies the rows into
// the chunks in the order of the fresh log (scatterFresh): the fresh buffers are read sequentially, not key by
// key (a cache miss at nearly every row).
// A subtask whose state started empty (TaskContext.Restored 0) keeps a Bloom filter of the keys it has stored, so
// a key it never stored (every new key of a join) is loaded without Gets. New rows' bytes live in a per-side
// fresh buffer of fixed blocks until the write-back moves them into their entry's value (never a growing slice:
// that would copy every row at each doubling). A key's two entries are one keyState, allocated in slabs so it
// starts a cache line, with the fields a probe reads on the entry's first line and a one-row key's slot and row
// inline on its second, next to the fields a static side's append touches (keyEntry: one 128-byte pair a row
// and entry); a key of one integer-like column is found through an open-addressing table
// (intTable), others through a Go map. OnBarrier writes every
// entry changed since the previous barrier (a Put, or a Delete when it is empty, all in one state.Batch handed to
// the backend with WriteBatch: no map entry per key), so a captured snapshot holds the
// exact state and a restore simply starts with an empty working set: Open reads nothing. When the working set
// outgrows CacheBytes (at the end of a batch or at a barrier) it is written back and, if still above half the
// budget, the keys no batch touched since the previous eviction are forgotten, then arbitrary others down to half
// the budget. The cost of one value per key on a side that is not static (updating or outer): a barrier rewrites
// the whole value of every key changed since the previous one, so a checkpoint's delta is the size of the keys
// touched, not of the rows added.
//
// A batch goes in passes, each a short loop whose iterations are independent so the CPU overlaps their cache
// misses: the keys' states (one map lookup per row, a load on a miss), then the entries and the list of partner
// entries to decode, then the partner rows decoded into builders sized once, then the pairs in row order. Each of
// these passes prefetches the lines it will read of the row (or entry) prefetchRows ahead (prefetch2): without it
// the CPU met most of them as misses one at a time (a key's state is far from the last one's).
//
// Output and residual evaluation go column at a time: the partner rows a batch pairs with are decoded once into
// an Arrow record, and the joined rows are gathered from it and from the input batch (typed takes sized once;
// arrow's take kernel for the other column types), in batches of at most chunkRows rows; the residual's candidate
// pairs carry only the columns it reads (the others are NULL). Values read back from state are canonical: a -0
// float comes back as 0, NaNs as one NaN.
//
// TTL (processing time): a side's rows of a key expire TTL microseconds after that side last added or retracted
// a row of that key (a partner's arrival changing their match counts is not a write). Expired rows are forgotten
// silently, as Flink's state TTL does: nothing is emitted for them, ever. They are dropped lazily when a batch
// touches the key, and by a sweep at each barrier over the expiry index, in deadline order, of at most
// sweepMax entries (the rest wait for the next barrier); an entry is indexed under its deadline rounded up to
// TTL/16, so the sweep finds it at most TTL/16 after its deadline. Consequences, all of them incomplete but never
// invalid results (the changelog never retracts a row it did not emit):
//
//   - a late partner of an expired row does not match it (inner: the pair is missing; outer: the new row is
//     emitted padded although a partner existed);
//   - a retraction of an expired row is ignored (counted in Errors): its pairs or padded row stay in the result;
//   - an outer row whose partners expired keeps its association count, so it is never flipped back to padded
//     (its pairs with the expired partners stay in the result), and a new copy of it added while its count is
//     stale is not emitted padded either.
type regularJoin struct {
	exec.NoTimers // joins per batch; the watermark passes through unchanged
	p             *regularPlan
	ctx           *exec.TaskContext
	ectx          expr.Context

	// The working set: both sides' entries of a key, by key value (one integer-like key column) or canonical key
	// bytes.
	ints    *intTable
	strs    map[string]*keyState
	dirty   []*keyEntry
	fresh   [2]freshBuf // per side, the bytes of the rows added since the last write-back (keyEntry.tail)
	flog    [2]freshLog // per side, the rows added since then to chunked entries (keyEntry.flog)
	scratch []rowSlot
	// stored, when the state started empty, holds (a Bloom filter of) every key this subtask has stored: a key it
	// does not hold has no state, and load skips its Gets. Nil after a restore.
	stored *keyFilter
	// runs (per side, built at a write-back by freshRuns when freshRun first needs them): entry d's records in the
	// fresh log, in arrival order, are runOrder[runStart[d]:runStart[d+1]].
	runStart, runOrder [2][]int32
	runCur             []int32
	// wb collects a write-back's writes, handed to the backend as one state.Batch (a run: no map entry per key);
	// kbuf and vbuf are scratch for the keys and values it copies. wbN sizes the next one.
	wb         *state.Batch
	kbuf, vbuf []byte
	wbN        int
	slab       keySlab
	wsBytes    int64
	freshAcct  int64  // the part of wsBytes that is a static side's rows in the fresh buffers (appendFresh)
	gen        uint8  // eviction generation (keyEntry.gen)
	epoch      uint32 // per batch: tells an entry decoded into the partner record of this batch
	wbEpoch    uint32 // epoch at the last write-back: an entry with a larger pepoch was probed since
	now        int64  // processing time of the current batch or barrier (µs); 0 without TTL

	// Per batch.
	keys      rowcodec.KeyRows
	rows      rowcodec.KeyRows
	hashes    []uint64
	nullKey   []bool
	own, part []*keyEntry
	ks        []*keyState
	decode    []*keyEntry             // the partner entries whose rows this batch decodes, in partner record order
	pb        [2]*array.RecordBuilder // the partner record's builders, per side
	pdec      [2]rowDecoder           // decoding stored rows into pb
	pRows     int32
	candStart []int32 // row i's candidates are cand[candStart[i]:...], in partner slot order
	candProbe []int32
	candPart  []int32
	match     []bool
	outKind   []exec.RowKind
	outProbe  []int32 // batch row, -1 for NULLs
	outPart   []int32 // partner record row, -1 for NULLs
	sweepKeys [][]byte
	wpos      []int   // per dirty entry at a write-back: its fresh rows' chunk size, then their place in wb (see writeBack)
	wcnt      []int32 // per dirty entry at a write-back: its records in the fresh logs
	runsBuilt bool    // runStart and runOrder are this write-back's (freshRun builds them on first use)
}

// Backend state ids of the regular join.
const (
	leftStateID  byte = 1
	rightStateID byte = 2
	ttlStateID   byte = 3
	// chunkStateID (left) and chunkStateID+1 (right) hold the row chunks of a static side's keys.
	chunkStateID byte = 4
)

const (
	// defaultCacheBytes bounds the working set unless RegularJoinConfig.CacheBytes says otherwise.
	defaultCacheBytes = 256 << 20
	// sweepMax bounds the expired entries one barrier removes through the TTL index.
	sweepMax = 8192
	// maxFreshBlocks bounds the fresh buffers' blocks between write-backs (1 GiB: a row offset is an int32).
	maxFreshBlocks = 1 << (30 - freshShift)
	// keyEntryOverhead is what the working set charges per entry besides its rows: the entry (four cache lines,
	// with its inline slot and row) and its share of the key table.
	keyEntryOverhead = 272
	// indexSlots: an updating side's entry with more slots than this finds rows through a map, not a scan.
	indexSlots = 8
	// flagMatches marks a side value that carries association counts.
	flagMatches byte = 1
	// flagChunked marks a static side's head value: its rows are in chunks, not in the value.
	flagChunked byte = 2
	// maxChunks: a static side's entry whose rows are in memory is rewritten as one chunk when a write-back would
	// make it this many.
	maxChunks = 8
)

var errEntryState = errors.New("regular join: malformed state value")

// prefetchRows is how many rows ahead of the one it works on a pass over a batch prefetches the lines it will
// read (prefetch2).
const prefetchRows = 8

// chunkRows bounds the rows of an output batch and of one residual evaluation: a row with many partners does not
// build one huge batch. A variable so tests can make it small.
var chunkRows = 1 << 15

// firstEpoch is the batch epoch a subtask starts from (regularJoin.epoch). A variable so a test can start it just
// before the wrap.
var firstEpoch uint32

// errStopScan ends a Scan early.
var errStopScan = errors.New("stop")

// regularPlan is the validated, immutable part of the operator, shared by its subtasks.
type regularPlan struct {
	cfg        RegularJoinConfig
	out        *arrow.Schema
	keys       [2][]int
	keyEnc     rowcodec.Encoding
	rowEnc     [2]rowcodec.Encoding
	cols       [2][]int         // every column of each side, for the row encoding
	sideSchema [2]*arrow.Schema // the side's fields, nullable: the partner record's schema
	outer      [2]bool
	// A semi or anti join keeps its left side as an outer side (its association counts tell a matched row), emits
	// no pairs (pairs false), and emits a left row padded with NULLs while it is unmatched (anti, as an outer side)
	// or while it is matched (semi: the flips of an outer side with their kinds swapped).
	semi, pairs bool
	updating    [2]bool
	static      [2]bool // append-only and inner: its rows never change once stored, so they are kept in chunks
	resCols     []bool  // the joined row's columns the residual reads (the others are NULL in its candidates)
	cacheBytes  int64
	bucket      int64 // TTL index granularity (µs)
	now         func() time.Time
}

// NewJoin validates cfg and returns the regular join's operator factory and its output schema
// (JoinOutputSchema). Errors are sqlerr errors: 42804 for key columns of different types or a non-boolean
// residual, 0A000 for a key or column type the operator cannot hash or store, XX000 for a malformed config (a
// planner bug).
func NewJoin(cfg RegularJoinConfig) (func(subtask int) exec.Operator, *arrow.Schema, error) {
	p, err := planRegular(cfg)
	if err != nil {
		return nil, nil, err
	}
	return func(int) exec.Operator { return &regularJoin{p: p} }, p.out, nil
}

func planRegular(cfg RegularJoinConfig) (*regularPlan, error) {
	if cfg.Left == nil || cfg.Right == nil {
		return nil, internalf("regular join", "missing input schema")
	}
	if cfg.Type > JoinAnti {
		return nil, internalf("regular join", "join type %s", cfg.Type)
	}
	if len(cfg.LeftKeys) == 0 || len(cfg.LeftKeys) != len(cfg.RightKeys) {
		return nil, internalf("regular join", "%d left and %d right key columns", len(cfg.LeftKeys), len(cfg.RightKeys))
	}
	if cfg.TTL < 0 || cfg.CacheBytes < 0 {
		return nil, internalf("regular join", "negative TTL or cache size")
	}
	p := &regularPlan{cfg: cfg, out: JoinOutputSchema(cfg.Left, cfg.Right), now: cfg.Now, cacheBytes: cfg.CacheBytes}
	if p.now == nil {
		p.now = time.Now
	}
	if p.cacheBytes == 0 {
		p.cacheBytes = defaultCacheBytes
	}
	p.bucket = max(cfg.TTL/16, 1)
	p.keys = [2][]int{cfg.LeftKeys, cfg.RightKeys}
	p.outer = [2]bool{cfg.Type == JoinLeft || cfg.Type == JoinFull || cfg.Type >= JoinSemi, cfg.Type == JoinRight || cfg.Type == JoinFull}
	p.semi, p.pairs = cfg.Type == JoinSemi, cfg.Type < JoinSemi
	p.updating = [2]bool{cfg.LeftUpdating, cfg.RightUpdating}
	for s := range 2 {
		p.static[s] = !p.updating[s] && !p.outer[s]
	}
	schemas := [2]*arrow.Schema{cfg.Left, cfg.Right}
	keyTypes := make([]arrow.DataType, len(cfg.LeftKeys))
	for k := range cfg.LeftKeys {
		for s, sch := range schemas {
			if c := p.keys[s][k]; c < 0 || c >= sch.NumFields() {
				return nil, internalf("regular join", "key column %d out of range (the input has %d)", c, sch.NumFields())
			}
		}
		lf, rf := cfg.Left.Field(cfg.LeftKeys[k]), cfg.Right.Field(cfg.RightKeys[k])
		if !arrow.TypeEqual(lf.Type, rf.Type) {
			return nil, sqlerr.New(sqlerr.DatatypeMismatch, sqlerr.NoPos,
				"join key %q of type %s cannot be compared with %q of type %s", lf.Name, lf.Type, rf.Name, rf.Type)
		}
		if !rowcodec.KeyType(lf.Type) {
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, sqlerr.NoPos, "cannot join on %q of type %s", lf.Name, lf.Type)
		}
		keyTypes[k] = lf.Type
	}
	p.keyEnc = rowcodec.NewKeyEncoding(keyTypes)
	for s, sch := range schemas {
		var err error
		if p.rowEnc[s], p.cols[s], err = rowEncoding(sch, "a regular join"); err != nil {
			return nil, err
		}
		fields := sch.Fields()
		for i := range fields {
			fields[i].Nullable = true
		}
		p.sideSchema[s] = arrow.NewSchema(fields, nil)
	}
	if r := cfg.Residual; r != nil {
		if id := r.Type().ID(); id != arrow.BOOL && id != arrow.NULL {
			return nil, sqlerr.New(sqlerr.DatatypeMismatch, sqlerr.NoPos, "join condition must be boolean, not %s", r.Type())
		}
		p.resCols = make([]bool, p.out.NumFields())
		for _, c := range expr.Columns(r) {
			if c < 0 || c >= p.out.NumFields() {
				return nil, internalf("regular join", "residual column %d out of range (the joined row has %d)", c, p.out.NumFields())
			}
			p.resCols[c] = true
		}
	}
	return p, nil
}

// keyEntry is one side's rows of one key: slots of distinct rows (an append-only side does not merge copies) in the
// order they were first stored. A removed slot is a tombstone (cnt 0) until compaction. Row bytes live in arena,
// which aliases the value last read from or written to the backend (read-only: never modified or appended to),
// or, for rows added since the last write-back, in the side's fresh buffer (shared by every entry of the side, so
// adding a row allocates nothing per key; the write-back moves them into the entry's value and empties it).
type keyEntry struct {
	// What a batch touches per row is in the entry's first two cache lines, one 128-byte aligned pair (keyStates
	// are line-aligned, see keySlab; the CPU fetches such a pair together): a probe of the partner reads line 0
	// (live, pepoch, pbase, sl, arena; gen is e[0]'s) and, for a one-row key, its inline slot and row on line 1;
	// a row added to a static side lines 0 and 1 (live, chunked, the fresh chain and the dirty mark). So a row
	// of a static side probing a one-row key reads one pair of each entry. Lines 2 and 3 are for the write-back,
	// TTL and the rest.
	live   int32
	pbase  int32  // partner record row of slot 0 in batch pepoch
	pepoch uint32 // the batch (regularJoin.epoch) that last read its rows as partners; > wbEpoch: probed since the last write-back
	gen    uint8  // e[0] only: the eviction generation that last touched the key (mod 2^8: only a hint)
	chain  bool   // nfresh > 0, here for a probe's ensureParsed
	// parsed: sl holds every slot (but a chunked entry's fresh chain). Otherwise the first nbase slots are still
	// encoded in arena from bstart on and sl holds only the slots added since (see parseHeader).
	parsed  bool
	chunked bool // a static side's entry: its rows are stored in chunks (see the state layout)
	sl      []rowSlot
	arena   []byte
	// Line 1: a key with one row keeps its slot and its encoded row here rather than in two allocations of their
	// own, so a probe of it reads lines 0 and 1 (sl and arena point here; see slotBuf, keepArena).
	isl    [1]rowSlot
	iarena [32]byte
	// A chunked entry's rows added since the last write-back or probe are not slots but a chain through the fresh
	// log, newest first: lastFresh is the index+1 of its newest record (0: none), nfresh the chain's length. A
	// probe (ensureParsed) or the write-back makes them slots.
	lastFresh, nfresh int32
	dirtyIdx          int32 // while isDirty: its index in regularJoin.dirty
	isDirty           bool
	side              uint8
	outer             bool // the side is outer: slots carry association counts
	stored            bool // the backend has a value for it
	// Line 2.
	written   int64  // last add or retract of a row (µs); 0 without TTL
	acct      int64  // bytes charged to the working set (a static side's fresh rows are charged to regularJoin.freshAcct)
	key       string // canonical key bytes
	idxBucket int64
	idx       map[string]int32 // updating side with many slots: row bytes -> live slot (built lazily)
	kg        uint16
	indexed   bool // the backend has a TTL index entry for it, at idxBucket
	nbase     int32
	bstart    int32
	// chunked entries: nchunks chunks are stored; sent is how many leading slots of a parsed entry they hold (an
	// unparsed one holds only the slots added since, nbase counts the stored rows); dropChunks stored chunks are
	// stale (expired rows) and are deleted at the next write-back.
	nchunks int32
	// Line 3.
	sent, dropChunks int32
	tomb             int32
	tail             *freshBuf // the side's fresh buffer (regularJoin.fresh)
	flog             *freshLog // the side's fresh log (regularJoin.flog)
	_                [28]byte  // pads line 3
}

// slotBuf returns an empty slot slice for n slots: the inline one when n is at most 1 and sl does not use it.
func (e *keyEntry) slotBuf(n int) []rowSlot {
	if n <= 1 && len(e.sl) == 0 {
		return e.isl[:0:1]
	}
	return make([]rowSlot, 0, n)
}

// keepArena returns v, or a copy of it in the entry's inline arena when it fits: v becomes the entry's arena.
func (e *keyEntry) keepArena(v []byte) []byte {
	if len(v) > len(e.iarena) {
		return v
	}
	n := copy(e.iarena[:], v)
	return e.iarena[:n:n]
}

// freshRec is a row added to an unparsed chunked entry since the last write-back: its bytes fresh[off:off+ln], and
// the index+1 of the entry's previous such record (0: none).
// ent is the entry's index in regularJoin.dirty, by which a write-back groups the log (freshRuns).
type freshRec struct{ off, ln, prev, ent int32 }

// appendFresh adds a row to a chunked entry (a static side's key): one record in the side's fresh log, nothing
// allocated or grown per key, whether its rows are in memory or not (most keys of a static side get rows added
// far more often than they are probed). It reads the side's buffers from j, not from the entry (whose pointers
// to them are on a line an append does not otherwise read), and charges the row to j.freshAcct.
// The entry must be dirty (its dirty index names it in the record).
func (j *regularJoin) appendFresh(e *keyEntry, row []byte) {
	side := e.side
	off := j.fresh[side].add(row)
	e.lastFresh = j.flog[side].add(freshRec{off: off, ln: int32(len(row)), prev: e.lastFresh, ent: e.dirtyIdx})
	e.chain = true
	e.nfresh++
	e.live++
	grew := int64(len(row)) + 12
	j.freshAcct += grew
	j.wsBytes += grew
}

// freshRuns groups side s's fresh log by entry (a counting sort by dirty index, stable): a write-back then reads
// each entry's records as a run instead of chasing its chain record by record, a cache miss each.
func (j *regularJoin) freshRuns(s int) {
	log := &j.flog[s]
	n := len(j.dirty)
	start := slices.Grow(j.runStart[s][:0], n+1)[:n+1]
	clear(start)
	for b := range log.blocks {
		for _, r := range log.block(b) {
			start[r.ent+1]++
		}
	}
	for d := 1; d <= n; d++ {
		start[d] += start[d-1]
	}
	cur := append(j.runCur[:0], start[:n]...)
	order := slices.Grow(j.runOrder[s][:0], log.n)[:log.n]
	for b := range log.blocks {
		for i, r := range log.block(b) {
			order[cur[r.ent]] = int32(b<<freshLogShift + i)
			cur[r.ent]++
		}
	}
	j.runStart[s], j.runOrder[s], j.runCur = start, order, cur
}

// freshRun appends the slots of an unparsed entry's fresh rows to dst, oldest first, from its run (freshRuns),
// and empties its chain. The run's last nfresh records are the chain: a TTL expiry may have left older ones.
func (j *regularJoin) freshRun(e *keyEntry, dst []rowSlot) []rowSlot {
	if !j.runsBuilt { // only a write-back's rarer cases need the runs
		for s := range j.flog {
			j.freshRuns(s)
		}
		j.runsBuilt = true
	}
	start, log := j.runStart[e.side], &j.flog[e.side]
	run := j.runOrder[e.side][start[e.dirtyIdx]:start[e.dirtyIdx+1]]
	for _, k := range run[len(run)-int(e.nfresh):] {
		r := log.at(k)
		dst = append(dst, rowSlot{off: ^r.off, ln: r.ln, cnt: 1})
	}
	e.lastFresh, e.nfresh, e.chain = 0, 0, false
	return dst
}

// freshSlots appends the slots of the entry's fresh chain to dst, oldest first, and empties the chain.
func (e *keyEntry) freshSlots(dst []rowSlot) []rowSlot {
	n := len(dst)
	dst = slices.Grow(dst, int(e.nfresh))[:n+int(e.nfresh)]
	log := e.flog
	for k, r := n+int(e.nfresh)-1, e.lastFresh; k >= n; k-- {
		rec := log.at(r - 1)
		dst[k] = rowSlot{off: ^rec.off, ln: rec.ln, cnt: 1}
		r = rec.prev
	}
	e.lastFresh, e.nfresh, e.chain = 0, 0, false
	return dst
}

// rowSlot is one distinct row of an entry: its bytes (arena[off:off+ln], or fresh[^off:^off+ln] when off < 0), its
// copies (0: a tombstone) and, on an outer side, how many partner copies each copy is paired with downstream.
type rowSlot struct{ off, ln, cnt, match int32 }

func (e *keyEntry) row(s int) []byte {
	sl := &e.sl[s]
	if sl.off >= 0 {
		return e.arena[sl.off : sl.off+sl.ln]
	}
	o := ^sl.off
	return e.tail.get(o, sl.ln)
}

// find returns the live slot holding row, or -1.
func (e *keyEntry) find(row []byte) int {
	if e.live == 0 {
		return -1
	}
	if len(e.sl) <= indexSlots {
		for s := range e.sl {
			if e.sl[s].cnt > 0 && bytes.Equal(e.row(s), row) {
				return s
			}
		}
		return -1
	}
	if e.idx == nil {
		e.idx = make(map[string]int32, e.live)
		for s := range e.sl {
			if e.sl[s].cnt > 0 {
				e.idx[string(e.row(s))] = int32(s)
			}
		}
	}
	if s, ok := e.idx[string(row)]; ok {
		return int(s)
	}
	return -1
}

// appendSlot stores a new distinct row with one copy and returns the bytes it added to the working set.
func (e *keyEntry) appendSlot(row []byte, matches int32, indexed bool) int64 {
	if cap(e.sl) == 0 {
		e.sl = e.isl[:0:1]
	} else if len(e.sl) == cap(e.sl) && len(e.sl) < 8 { // leaving the inline slot: skip the smallest growths
		e.sl = append(make([]rowSlot, 0, 8), e.sl...)
	}
	e.sl = append(e.sl, rowSlot{off: ^e.tail.add(row), ln: int32(len(row)), cnt: 1, match: matches})
	if indexed && e.idx != nil {
		e.idx[string(row)] = int32(len(e.sl) - 1)
	}
	e.live++
	return int64(len(row)) + 16
}

// removeCopy drops one copy of slot s.
func (e *keyEntry) removeCopy(s int) {
	e.sl[s].cnt--
	if e.sl[s].cnt > 0 {
		return
	}
	if e.idx != nil {
		delete(e.idx, string(e.row(s)))
	}
	e.live--
	e.tomb++
	if e.tomb > 16 && e.tomb > e.live {
		e.compact()
	}
}

// compact drops the tombstones (the arena keeps their bytes until the next write-back). It renumbers slots: only
// for an entry that is not in this batch's partner record.
func (e *keyEntry) compact() {
	j := 0
	for _, sl := range e.sl {
		if sl.cnt > 0 {
			e.sl[j] = sl
			j++
		}
	}
	e.sl = e.sl[:j]
	e.tomb, e.idx = 0, nil
}

// clear forgets every row (TTL expiry). A chunked entry's stored chunks are deleted at the next write-back.
func (e *keyEntry) clear() {
	e.arena, e.sl, e.idx = nil, e.sl[:0], nil
	e.live, e.tomb, e.nbase, e.parsed = 0, 0, 0, true
	e.dropChunks, e.nchunks, e.sent = max(e.dropChunks, e.nchunks), 0, 0
	e.lastFresh, e.nfresh, e.chain = 0, 0, false
}

// parseHeader loads a backend value into e without reading its slots: an append-only side's entry that only gets
// rows added never needs them (encode copies them as they are).
func (e *keyEntry) parseHeader(v []byte) error {
	if len(v) < 10 {
		return errEntryState
	}
	if (v[0]&flagMatches != 0) != e.outer {
		return fmt.Errorf("regular join: state of key group %d was written for another join type", e.kg)
	}
	e.written = int64(binary.BigEndian.Uint64(v[1:9]))
	n, w := binary.Uvarint(v[9:])
	if w <= 0 || n > 1<<31-1 {
		return errEntryState
	}
	if v[0]&flagChunked != 0 {
		c, cw := binary.Uvarint(v[9+w:])
		if cw <= 0 || 9+w+cw != len(v) || c > 1<<31-1 || (c == 0) != (n == 0) {
			return errEntryState
		}
		e.chunked, e.arena, e.nbase, e.nchunks, e.live, e.parsed = true, nil, int32(n), int32(c), int32(n), n == 0
		return nil
	}
	if n > uint64(len(v)) {
		return errEntryState
	}
	e.chunked = false
	e.arena, e.nbase, e.bstart, e.live, e.parsed = v, int32(n), int32(9+w), int32(n), n == 0
	return nil
}

// parseSlots appends the slots encoded in v[p:] (uvarint length, row bytes, uvarint copies and, outer, uvarint
// associations, until the end), offsets into v plus base.
func (e *keyEntry) parseSlots(dst []rowSlot, v []byte, p int, base int32) ([]rowSlot, error) {
	uv := func() (int32, error) {
		x, w := binary.Uvarint(v[p:])
		if w <= 0 || x > 1<<31-1 {
			return 0, errEntryState
		}
		p += w
		return int32(x), nil
	}
	for p < len(v) {
		var sl rowSlot
		var err error
		if sl.ln, err = uv(); err != nil {
			return nil, err
		}
		if len(v)-p < int(sl.ln) {
			return nil, errEntryState
		}
		sl.off = base + int32(p)
		p += int(sl.ln)
		if sl.cnt, err = uv(); err != nil || sl.cnt == 0 {
			return nil, errEntryState
		}
		if e.outer {
			if sl.match, err = uv(); err != nil {
				return nil, err
			}
		}
		dst = append(dst, sl)
	}
	return dst, nil
}

// loadChunks reads a chunked entry's stored rows (its nchunks chunks) ahead of those added since.
func (e *keyEntry) loadChunks(st state.Backend) error {
	base := e.slotBuf(int(e.nbase) + len(e.sl) + int(e.nfresh))
	var arena []byte
	for c := range e.nchunks {
		v, ok, err := st.Get(chunkKey(int(e.kg), e.side, c, e.key))
		if err != nil {
			return fmt.Errorf("regular join: %w", err)
		}
		if !ok {
			return errEntryState
		}
		if e.nchunks == 1 {
			// Inline, or read-only: aliased until the chunk is rewritten (then the slots move to the new value).
			arena = e.keepArena(v)
		} else {
			arena = append(arena, v...)
		}
		if base, err = e.parseSlots(base, arena, len(arena)-len(v), 0); err != nil {
			return err
		}
	}
	if len(base) != int(e.nbase) {
		return errEntryState
	}
	e.arena, e.sent = arena, e.nbase
	e.sl, e.nbase, e.parsed = e.freshSlots(append(base, e.sl...)), 0, true
	return nil
}

// chunkKey is the backend key of chunk c of a static side's key.
func chunkKey(kg int, side uint8, c int32, key string) []byte {
	return appendChunkKey(make([]byte, 0, 7+len(key)), kg, side, c, key)
}

// appendChunkKey appends chunkKey(kg, side, c, key) to dst.
func appendChunkKey(dst []byte, kg int, side uint8, c int32, key string) []byte {
	dst = appendKeyedKey(dst, kg, chunkStateID+side)
	dst = binary.BigEndian.AppendUint32(dst, uint32(c))
	return append(dst, key...)
}

// appendKeyedKey appends state.KeyedKey(kg, id, nil): the key group (2 bytes, big endian) and the state id.
func appendKeyedKey(dst []byte, kg int, id byte) []byte {
	return append(binary.BigEndian.AppendUint16(dst, uint16(kg)), id)
}

// headKey is e's value key (stateKey) built in the write-back's key scratch: the batch copies it.
func (j *regularJoin) headKey(e *keyEntry) []byte {
	j.kbuf = append(appendKeyedKey(j.kbuf[:0], int(e.kg), leftStateID+e.side), e.key...)
	return j.kbuf
}

// chunkKeyBuf is chunkKey(e's key, c) built in the write-back's key scratch.
func (j *regularJoin) chunkKeyBuf(e *keyEntry, c int32) []byte {
	j.kbuf = appendChunkKey(j.kbuf[:0], int(e.kg), e.side, c, e.key)
	return j.kbuf
}

// del deletes k in the write-back's batch.
func (j *regularJoin) del(k []byte) { j.wb.Delete(k) }

// ensureParsed reads the slots parseHeader skipped, ahead of those added since: from the value, or for a chunked
// entry from its chunks in st.
func (e *keyEntry) ensureParsed(st state.Backend) error {
	if e.parsed {
		if e.chain { // a chunked entry's rows added since it was last parsed: now slots
			e.sl = e.freshSlots(e.sl)
		}
		return nil
	}
	if e.chunked {
		return e.loadChunks(st)
	}
	base, err := e.parseSlots(e.slotBuf(int(e.nbase)+len(e.sl)), e.arena, int(e.bstart), 0)
	if err != nil {
		return err
	}
	if len(base) != int(e.nbase) {
		return errEntryState
	}
	e.sl, e.nbase, e.parsed = append(base, e.sl...), 0, true
	return nil
}

// encode returns e's backend value and repoints e's slots into it, dropping tombstones. An entry whose stored
// slots were never parsed copies them as they are (it has no tombstones: only an append-only side stays
// unparsed) and stays unparsed.
func (e *keyEntry) encode() []byte {
	uvlen := func(x int32) int { return max(1, (bits.Len32(uint32(x))+6)/7) }
	size := 9 + uvlen(e.live)
	if !e.parsed {
		size += len(e.arena) - int(e.bstart)
	}
	for _, sl := range e.sl {
		if sl.cnt > 0 {
			size += uvlen(sl.ln) + int(sl.ln) + uvlen(sl.cnt)
			if e.outer {
				size += uvlen(sl.match)
			}
		}
	}
	v := make([]byte, 0, size)
	var flags byte
	if e.outer {
		flags = flagMatches
	}
	v = append(v, flags)
	v = binary.BigEndian.AppendUint64(v, uint64(e.written))
	v = binary.AppendUvarint(v, uint64(e.live))
	bstart := len(v)
	if !e.parsed {
		v = append(v, e.arena[e.bstart:]...)
	}
	j := 0
	for s, sl := range e.sl {
		if sl.cnt == 0 {
			continue
		}
		v = binary.AppendUvarint(v, uint64(sl.ln))
		off := len(v)
		v = append(v, e.row(s)...)
		v = binary.AppendUvarint(v, uint64(sl.cnt))
		if e.outer {
			v = binary.AppendUvarint(v, uint64(sl.match))
		}
		sl.off = int32(off)
		e.sl[j] = sl
		j++
	}
	e.sl = e.sl[:j]
	if !e.parsed {
		e.nbase, e.bstart, e.sl = e.live, int32(bstart), e.sl[:0]
	}
	e.arena, e.tomb, e.idx = v, 0, nil
	return v
}

// encodeSlots appends the live slots of sl in the value format.
func (e *keyEntry) encodeSlots(v []byte, sl []rowSlot) []byte {
	for s := range sl {
		if sl[s].cnt == 0 {
			continue
		}
		v = binary.AppendUvarint(v, uint64(sl[s].ln))
		v = append(v, e.rowOf(&sl[s])...)
		v = binary.AppendUvarint(v, uint64(sl[s].cnt))
		if e.outer {
			v = binary.AppendUvarint(v, uint64(sl[s].match))
		}
	}
	return v
}

// slotsSize is the encoded size of the live slots of sl.
func (e *keyEntry) slotsSize(sl []rowSlot) int {
	n := 0
	for _, s := range sl {
		if s.cnt == 0 {
			continue
		}
		n += uvlen(s.ln) + int(s.ln) + uvlen(s.cnt)
		if e.outer {
			n += uvlen(s.match)
		}
	}
	return n
}

// uvlen is the length of x as a uvarint.
func uvlen(x int32) int { return max(1, (bits.Len32(uint32(x))+6)/7) }

func (e *keyEntry) rowOf(sl *rowSlot) []byte {
	if sl.off >= 0 {
		return e.arena[sl.off : sl.off+sl.ln]
	}
	o := ^sl.off
	return e.tail.get(o, sl.ln)
}

// encodeHead appends a chunked entry's head value to v.
func (e *keyEntry) encodeHead(v []byte) []byte {
	v = append(v, flagChunked)
	v = binary.BigEndian.AppendUint64(v, uint64(e.written))
	v = binary.AppendUvarint(v, uint64(e.live))
	return binary.AppendUvarint(v, uint64(e.nchunks))
}

func (e *keyEntry) size() int64 {
	n := int64(keyEntryOverhead)
	if cap(e.arena) > 0 && &e.arena[:1][0] != &e.iarena[0] {
		n += int64(cap(e.arena))
	}
	if cap(e.sl) > 0 && &e.sl[:1][0] != &e.isl[0] {
		n += 16 * int64(cap(e.sl))
	}
	return n
}

var _ exec.Operator = (*regularJoin)(nil)

func (j *regularJoin) Open(ctx *exec.TaskContext) error {
	if err := exec.CheckKeyGroups(ctx, "regular join"); err != nil {
		return err
	}
	j.ctx = ctx
	j.ectx = expr.Context{Alloc: ctx.Alloc, Mode: j.p.cfg.Mode, BadValues: ctx.Errors, Clock: ctx.Clock}
	j.ints, j.strs = newIntTable(), map[string]*keyState{}
	j.epoch, j.wbEpoch = firstEpoch, firstEpoch
	j.stored = nil
	if ctx.Restored == 0 { // an empty state: every stored key will pass through stored
		j.stored = newKeyFilter()
	}
	for s := range 2 {
		j.pb[s] = array.NewRecordBuilder(ctx.Alloc, j.p.sideSchema[s])
		j.pdec[s] = newRowDecoder(&j.p.rowEnc[s], j.pb[s].Fields())
	}
	return nil
}

func (j *regularJoin) Close() error {
	for s := range 2 {
		if j.pb[s] != nil {
			j.pb[s].Release()
			j.pb[s] = nil
		}
	}
	j.ints, j.strs, j.dirty = nil, nil, nil
	return nil
}

// OnWatermark does nothing: the runtime forwards the input watermark as it is.

func (j *regularJoin) OnBarrier(uint64) error {
	if j.p.cfg.TTL > 0 {
		j.now = j.p.now().UnixMicro()
		if err := j.sweep(); err != nil {
			return err
		}
	}
	j.writeBack()
	if j.wsBytes > j.p.cacheBytes {
		j.evict()
	}
	return nil
}

func (j *regularJoin) stateKey(e *keyEntry) []byte {
	return append(appendKeyedKey(make([]byte, 0, 3+len(e.key)), int(e.kg), leftStateID+e.side), e.key...)
}

func (j *regularJoin) indexKey(kg int, bucket int64, side uint8, key string) []byte {
	uk := make([]byte, 0, 9+len(key))
	uk = rowcodec.AppendOrderedInt(uk, bucket)
	uk = append(uk, side)
	uk = append(uk, key...)
	return state.KeyedKey(kg, ttlStateID, uk)
}

// bucketOf is the TTL index bucket of a row written at w: its deadline rounded up.
func (j *regularJoin) bucketOf(w int64) int64 {
	d := w + j.p.cfg.TTL
	if r := d % j.p.bucket; r != 0 {
		d += j.p.bucket - r
	}
	return d
}

func (j *regularJoin) markDirty(e *keyEntry) {
	if !e.isDirty {
		e.isDirty, e.dirtyIdx = true, int32(len(j.dirty))
		j.dirty = append(j.dirty, e)
	}
}

// writeBack writes every dirty entry to the backend.
func (j *regularJoin) writeBack() {
	ttl := j.p.cfg.TTL > 0
	j.runsBuilt = false
	// Keys, heads and slot headers take about 64 bytes a key; the rows about what the fresh buffers hold, plus
	// two bytes of slot header each (one growth of a batch this size copies it all).
	data := 64 * len(j.dirty)
	for s := range j.fresh {
		data += len(j.fresh[s].blocks)<<freshShift + 2*j.flog[s].n
	}
	j.wb = state.NewBatch(max(j.wbN, 2*len(j.dirty)), data)
	// Each dirty entry's fresh-log records take wpos[its dirty index] bytes in the chunk format; writeChunks makes
	// that the offset of the chunk's value in the batch where the chunk is exactly those records, -1 elsewhere.
	// wcnt counts its records.
	j.wpos = slices.Grow(j.wpos[:0], len(j.dirty))[:len(j.dirty)]
	j.wcnt = slices.Grow(j.wcnt[:0], len(j.dirty))[:len(j.dirty)]
	clear(j.wpos)
	clear(j.wcnt)
	for s := range j.flog {
		log := &j.flog[s]
		for b := range log.blocks {
			for _, r := range log.block(b) {
				j.wpos[r.ent] += uvlen(r.ln) + int(r.ln) + 1
				j.wcnt[r.ent]++
			}
		}
	}
	for d, e := range j.dirty {
		if d+prefetchRows < len(j.dirty) { // the entry's four lines
			a := unsafe.Pointer(j.dirty[d+prefetchRows])
			prefetch2(a)
			prefetch2(unsafe.Add(a, 128))
		}
		e.isDirty = false
		if e.chunked {
			j.writeChunks(e)
		}
		if e.live == 0 {
			if e.stored {
				j.del(j.headKey(e))
				e.stored = false
			}
			if e.indexed {
				j.del(j.indexKey(int(e.kg), e.idxBucket, e.side, e.key))
				e.indexed = false
			}
			e.clear() // drops the tombstones too
			j.charge(e)
			continue
		}
		if e.chunked {
			j.vbuf = e.encodeHead(j.vbuf[:0])
			j.wb.Put(j.headKey(e), j.vbuf)
		} else {
			j.wb.Put(j.headKey(e), e.encode())
		}
		if j.stored != nil && !e.stored { // a stored key is in the filter since its first write-back
			j.stored.add(e.key)
		}
		e.stored = true
		j.charge(e)
		if !ttl {
			continue
		}
		if b := j.bucketOf(e.written); !e.indexed || b != e.idxBucket {
			if e.indexed {
				j.del(j.indexKey(int(e.kg), e.idxBucket, e.side, e.key))
			}
			j.wb.Put(j.indexKey(int(e.kg), b, e.side, e.key), nil)
			e.indexed, e.idxBucket = true, b
		}
	}
	j.scatterFresh()
	clear(j.dirty)
	j.dirty = j.dirty[:0]
	j.wbEpoch = j.epoch
	j.wbN = j.wb.Len()
	state.WriteBatch(j.ctx.State, j.wb)
	j.wb = nil
	// Every row in the fresh buffers belonged to a dirty entry, and is in its value now.
	j.wsBytes -= j.freshAcct
	j.freshAcct = 0
	for s := range j.fresh {
		j.fresh[s].reset()
		j.flog[s].reset(int(j.p.cacheBytes / 64))
	}
}

// scatterFresh copies the fresh logs' rows into the chunk values writeChunks reserved for them in the batch, in
// the logs' order: the fresh buffers are read in the order they were written (a key's rows are scattered over
// them, and reading them key by key would miss the cache at nearly every row), the batch written at one cursor per
// chunk (writes do not stall as reads do).
func (j *regularJoin) scatterFresh() {
	for s := range j.flog {
		f, log := &j.fresh[s], &j.flog[s]
		for b := range log.blocks {
			for _, r := range log.block(b) {
				p := j.wpos[r.ent]
				if p < 0 {
					continue
				}
				n := uvlen(r.ln) + int(r.ln) + 1
				v := j.wb.Value(p, n)
				w := binary.PutUvarint(v, uint64(r.ln))
				copy(v[w:], f.get(r.off, r.ln))
				v[n-1] = 1 // copies: a static side's row is a slot of its own
				j.wpos[r.ent] = p + n
			}
		}
	}
}

// writeChunks writes what changed in a chunked entry's rows since the last write-back: it deletes the chunks a
// TTL expiry made stale, then stores the rows added since as one more chunk or, when its rows stay in memory and
// that would make maxChunks, all of them as chunk 0 (so a key probed now and then keeps few chunks, and a key only
// appended to is never read back). The caller writes the head.
//
// A probed entry's rows stay in memory only when they fit its inline arena or are folded into chunk 0: others
// leave it as those of an entry not probed since the previous write-back do (the next probe reads them back, one
// Get a chunk), since keeping them means re-encoding every row of the key into a new allocation at every
// write-back that adds rows to it, where most probed keys of a static side are probed once (the bids of an
// auction, probed by its arrival) and get rows more often than probes.
func (j *regularJoin) writeChunks(e *keyEntry) {
	for c := range e.dropChunks {
		j.del(j.chunkKeyBuf(e, c))
	}
	e.dropChunks = 0
	d := e.dirtyIdx
	logBytes := j.wpos[d]
	j.wpos[d] = -1
	if e.live == 0 {
		return
	}
	chain := 0 // the chain's bytes (at most logBytes: the log also holds the rows a probe made slots)
	if e.nfresh > 0 {
		chain = logBytes
	}
	keep := e.parsed && e.pepoch > j.wbEpoch &&
		(e.nchunks+1 >= maxChunks || e.slotsSize(e.sl)+chain <= len(e.iarena))
	if !keep {
		// The rows added since: slots past sent (a parsed entry: rows folded in by a probe) and the fresh chain.
		newRows := e.nfresh
		if e.parsed {
			newRows += int32(len(e.sl)) - e.sent
		}
		switch {
		case newRows == 0:
		case j.wcnt[d] == newRows:
			// The new chunk is exactly the entry's fresh-log records, in their order: reserved here, filled by
			// scatterFresh.
			j.wpos[d] = j.wb.Reserve(j.chunkKeyBuf(e, e.nchunks), logBytes)
			e.nchunks++
		default: // a TTL expiry left older records in the log
			fresh := j.scratch[:0]
			if e.parsed {
				fresh = append(fresh, e.sl[e.sent:]...)
			}
			if e.nfresh > 0 {
				fresh = j.freshRun(e, fresh)
			}
			j.scratch = fresh
			j.vbuf = e.encodeSlots(j.vbuf[:0], fresh)
			j.wb.Put(j.chunkKeyBuf(e, e.nchunks), j.vbuf)
			e.nchunks++
		}
		// Its rows leave memory (the next probe reads them back).
		e.lastFresh, e.nfresh, e.chain = 0, 0, false
		e.arena, e.sl, e.idx = nil, nil, nil
		e.nbase, e.sent, e.parsed = e.live, 0, false
		return
	}
	if e.nfresh > 0 { // the chain becomes slots
		e.sl = j.freshRun(e, e.sl)
	}
	fresh := e.sl[e.sent:]
	if len(fresh) == 0 {
		return
	}
	// Probed: its rows stay in memory, encoded into one value that the slots point into and whose suffix is the
	// new rows' chunk.
	size := e.slotsSize(e.sl)
	var v []byte
	if size <= len(e.iarena) {
		v = j.vbuf[:0] // copied into the inline arena below
	} else {
		v = make([]byte, 0, size)
	}
	v = e.encodeSlots(v, e.sl[:e.sent])
	start := len(v)
	v = e.encodeSlots(v, fresh)
	if size <= len(e.iarena) {
		j.vbuf = v
		v = e.keepArena(v)
	}
	// Repoint the slots into v (a static side has no tombstones: the slots are v's rows in order).
	p := 0
	for s := range e.sl {
		sl := &e.sl[s]
		_, w := binary.Uvarint(v[p:])
		p += w
		sl.off = int32(p)
		p += int(sl.ln)
		_, w = binary.Uvarint(v[p:])
		p += w
	}
	if e.nchunks+1 < maxChunks {
		j.wb.Put(j.chunkKeyBuf(e, e.nchunks), v[start:])
		e.nchunks++
	} else {
		j.wb.Put(j.chunkKeyBuf(e, 0), v)
		for c := int32(1); c < e.nchunks; c++ {
			j.del(j.chunkKeyBuf(e, c))
		}
		e.nchunks = 1
	}
	e.arena, e.sent = v, int32(len(e.sl))
}

// charge re-accounts e's size in the working set.
func (j *regularJoin) charge(e *keyEntry) {
	n := e.size()
	j.wsBytes += n - e.acct
	e.acct = n
}

// evict writes the working set back, then forgets the keys no batch touched since the previous eviction and,
// while the working set is still above half its budget, arbitrary others. Keys in use tend to survive a pass, and
// the next eviction is at least half a budget of new entries away.
func (j *regularJoin) evict() {
	j.writeBack()
	target := j.p.cacheBytes / 2
	if j.wsBytes <= target {
		j.gen++
		return
	}
	forget := func(k *keyState) {
		j.wsBytes -= k.e[0].acct + k.e[1].acct
		j.slab.free(k)
	}
	j.ints.keep(func(k *keyState) bool {
		if k.e[0].gen != j.gen {
			forget(k)
			return false
		}
		return true
	})
	for v, k := range j.strs {
		if k.e[0].gen != j.gen {
			forget(k)
			delete(j.strs, v)
		}
	}
	if j.wsBytes > target {
		j.ints.keep(func(k *keyState) bool {
			if j.wsBytes <= target {
				return true
			}
			forget(k)
			return false
		})
	}
	for v, k := range j.strs {
		if j.wsBytes <= target {
			break
		}
		forget(k)
		delete(j.strs, v)
	}
	j.gen++
}

// sweep removes entries whose TTL index bucket has passed, at most sweepMax of them.
func (j *regularJoin) sweep() error {
	j.sweepKeys = j.sweepKeys[:0]
	for kg := j.ctx.KeyGroups.Start; kg < j.ctx.KeyGroups.End && len(j.sweepKeys) < sweepMax; kg++ {
		prefix := state.KeyedKey(kg, ttlStateID, nil)
		err := j.ctx.State.Scan(prefix, func(k, _ []byte) error {
			uk := k[len(prefix):]
			if len(uk) < 9 {
				return errEntryState
			}
			if rowcodec.OrderedInt(uk) > j.now || len(j.sweepKeys) >= sweepMax {
				return errStopScan
			}
			j.sweepKeys = append(j.sweepKeys, append([]byte(nil), k...))
			return nil
		})
		if err != nil && err != errStopScan {
			return fmt.Errorf("regular join: TTL sweep of key group %d: %w", kg, err)
		}
	}
	for _, ik := range j.sweepKeys {
		kg := int(binary.BigEndian.Uint16(ik))
		uk := ik[3:]
		bucket, side, key := rowcodec.OrderedInt(uk), uk[8], string(uk[9:])
		if side > 1 {
			return errEntryState
		}
		if e := j.cached(int(side), key); e != nil {
			// The working set's copy decides; its write-back moves or deletes the index entry.
			if e.indexed && e.idxBucket == bucket && e.live > 0 && j.expired(e) {
				e.clear()
				j.markDirty(e)
			} else if !e.indexed || e.idxBucket != bucket {
				j.ctx.State.Delete(ik) // stale: not the entry's index key
			}
			continue
		}
		e := &keyEntry{kg: uint16(kg), side: side, key: key}
		sk := j.stateKey(e)
		v, ok, err := j.ctx.State.Get(sk)
		if err != nil {
			return err
		}
		if !ok || len(v) < 9 {
			j.ctx.State.Delete(ik)
			continue
		}
		e.written = int64(binary.BigEndian.Uint64(v[1:9]))
		if j.expired(e) {
			if v[0]&flagChunked != 0 {
				e.outer = v[0]&flagMatches != 0
				if err := e.parseHeader(v); err != nil {
					return err
				}
				for c := range e.nchunks {
					j.ctx.State.Delete(chunkKey(kg, side, c, key))
				}
			}
			j.ctx.State.Delete(sk)
			j.ctx.State.Delete(ik)
		} else if j.bucketOf(e.written) != bucket {
			j.ctx.State.Delete(ik)
		}
	}
	return nil
}

// cached returns the working set's entry of (side, canonical key), or nil.
func (j *regularJoin) cached(side int, key string) *keyEntry {
	var k *keyState
	if j.p.keyEnc.Mode == rowcodec.KeyInt {
		if len(key) != 9 || key[0] != 1 {
			return nil
		}
		k = j.ints.get(rowcodec.OrderedInt([]byte(key[1:])))
	} else {
		k = j.strs[key]
	}
	if k == nil {
		return nil
	}
	return &k.e[side]
}

func (j *regularJoin) expired(e *keyEntry) bool {
	return j.p.cfg.TTL > 0 && j.now-e.written >= j.p.cfg.TTL
}

// keyState is the working set's state of one key: both sides' entries, together because every row needs both.
// Its eviction generation is e[0].gen, on a line a probe reads anyway.
type keyState struct {
	e [2]keyEntry
}

// load reads both sides' entries of key from the backend.
func (j *regularJoin) load(kg int, key string) (*keyState, error) {
	k := j.slab.alloc()
	// A key this subtask never stored, in a state that started empty, has nothing in the backend: no Gets (each a
	// search through Pebble for a key that is not there, for every new key of a join).
	unknown := j.stored != nil && !j.stored.has(key)
	for side := range 2 {
		e := &k.e[side]
		e.key, e.kg, e.side, e.outer, e.parsed = key, uint16(kg), uint8(side), j.p.outer[side], true
		e.chunked, e.tail, e.flog = j.p.static[side], &j.fresh[side], &j.flog[side]
		var v []byte
		var ok bool
		var err error
		if !unknown {
			v, ok, err = j.ctx.State.Get(j.stateKey(e))
		}
		if err != nil {
			return nil, fmt.Errorf("regular join: %w", err)
		}
		if ok {
			if err := e.parseHeader(v); err != nil {
				return nil, err
			}
			if e.chunked && !j.p.static[side] {
				return nil, fmt.Errorf("regular join: state of key group %d was written for another join type", kg)
			}
			e.stored = true
			if j.p.cfg.TTL > 0 {
				e.indexed, e.idxBucket = true, j.bucketOf(e.written)
			}
		} else if e.chunked {
			e.parsed = false // no rows: new ones go to the fresh log until a probe reads the entry
		}
		j.charge(e)
	}
	return k, nil
}

// keyOf returns the working set's state of the key of batch row i, loading it on a miss and expiring a side whose
// TTL passed.
func (j *regularJoin) keyOf(i, kg int) (*keyState, error) {
	var k *keyState
	if j.p.keyEnc.Mode == rowcodec.KeyInt {
		v := j.keys.Ints[i]
		if k = j.ints.get(v); k == nil {
			var err error
			var kb [9]byte
			if k, err = j.load(kg, string(rowcodec.AppendIntKey(kb[:0], v, false))); err != nil {
				return nil, err
			}
			j.ints.put(v, k)
		}
	} else {
		kb := j.keys.BytesOf(i)
		if k = j.strs[string(kb)]; k == nil {
			var err error
			if k, err = j.load(kg, string(kb)); err != nil {
				return nil, err
			}
			j.strs[k.e[0].key] = k
		}
	}
	k.e[0].gen = j.gen
	if j.p.cfg.TTL > 0 {
		for s := range k.e {
			if e := &k.e[s]; e.live > 0 && j.expired(e) {
				e.clear()
				j.markDirty(e)
			}
		}
	}
	return k, nil
}

func (j *regularJoin) Process(input int, b exec.Batch, out exec.Emitter) error {
	defer b.Release()
	if input != 0 && input != 1 {
		return fmt.Errorf("regular join: input %d (it has two)", input)
	}
	n := b.Rows()
	if n == 0 {
		return nil
	}
	s, o := input, 1-input
	if !j.p.updating[s] {
		for _, k := range b.Kinds {
			if k != exec.Insert {
				return fmt.Errorf("regular join: row of kind %s on the append-only %s input", k, [2]string{"left", "right"}[s])
			}
		}
	}
	rec := b.Rec
	types := j.p.rowEnc[s].Types
	if int(rec.NumCols()) != len(types) {
		return fmt.Errorf("regular join: input %d has %d columns, want %d", s, rec.NumCols(), len(types))
	}
	for c, t := range types {
		if !arrow.TypeEqual(rec.Column(c).DataType(), t) {
			return fmt.Errorf("regular join: input %d column %d is %s, want %s", s, c, rec.Column(c).DataType(), t)
		}
	}
	j.epoch++
	if j.epoch == 0 { // wrapped: no entry may look probed in this batch
		j.resetEpochs()
	}
	if j.p.cfg.TTL > 0 {
		j.now = j.p.now().UnixMicro()
	}
	if err := j.keys.Load(&j.p.keyEnc, rec, j.p.keys[s]); err != nil {
		return err
	}
	if err := j.rows.Load(&j.p.rowEnc[s], rec, j.p.cols[s]); err != nil {
		return err
	}
	var err error
	if j.hashes, err = exec.HashKeys(rec, j.p.keys[s], j.hashes); err != nil {
		return err
	}
	nullKey := nullKeyRows(rec, j.p.keys[s], &j.nullKey)

	// Resolve both sides' entries of every row and decode the partner rows this batch pairs with.
	j.own, j.part = j.own[:0], j.part[:0]
	j.pRows = 0
	pb, pdec := j.pb[o], &j.pdec[o]
	// Passes over the batch, each a short loop of independent iterations so the CPU overlaps their cache misses:
	// the keys' states (loading those not in the working set), then the entries and the partner rows.
	j.ks = j.ks[:0]
	var ints []int64 // with an integer key, its values: the pass prefetches the table slots of rows ahead
	if j.p.keyEnc.Mode == rowcodec.KeyInt {
		ints = j.keys.Ints[:n]
	}
	for i := range n {
		if i+prefetchRows < len(ints) {
			prefetch1(j.ints.slotAt(ints[i+prefetchRows]))
		}
		kg, err := exec.OwnedKeyGroup(j.ctx, j.hashes[i], "regular join")
		if err != nil {
			return err
		}
		if nullKey != nil && nullKey[i] {
			j.ks = append(j.ks, nil)
			continue
		}
		k, err := j.keyOf(i, kg)
		if err != nil {
			return err
		}
		j.ks = append(j.ks, k)
	}
	for i, k := range j.ks {
		if i+prefetchRows < n {
			if ka := j.ks[i+prefetchRows]; ka != nil {
				prefetch2(unsafe.Pointer(&ka.e[o]))
			}
		}
		if k == nil {
			j.own, j.part = append(j.own, nil), append(j.part, nil)
			continue
		}
		own, part := &k.e[s], &k.e[o]
		if j.p.updating[s] { // rows may be looked up
			if err := own.ensureParsed(j.ctx.State); err != nil {
				return err
			}
		}
		j.own, j.part = append(j.own, own), append(j.part, part)
		if part.live > 0 && part.pepoch != j.epoch {
			if err := part.ensureParsed(j.ctx.State); err != nil {
				return err
			}
			part.pepoch, part.pbase = j.epoch, j.pRows
			j.pRows += int32(len(part.sl))
			j.decode = append(j.decode, part)
		}
	}
	// The partner rows, into builders sized once.
	pb.Reserve(int(j.pRows))
	for d, part := range j.decode {
		if d+prefetchRows < len(j.decode) { // its sl and arena, and a one-row entry's inline row
			prefetch2(unsafe.Pointer(j.decode[d+prefetchRows]))
		}
		for sl := range part.sl {
			if err := pdec.decode(part.row(sl)); err != nil {
				return fmt.Errorf("regular join: decode a stored row: %w", err)
			}
		}
	}
	clear(j.decode)
	j.decode = j.decode[:0]
	prec := pb.NewRecordBatch()
	defer prec.Release()

	if err := j.evalResidual(s, rec, prec); err != nil {
		return err
	}
	j.pairs(b, s, o)
	if err := j.emitOutput(s, rec, prec, out); err != nil {
		return err
	}
	clear(j.ks)
	// Past maxFreshBlocks the fresh buffers' offsets would overflow: write back even under the budget.
	if j.wsBytes > j.p.cacheBytes || len(j.fresh[0].blocks)+len(j.fresh[1].blocks) > maxFreshBlocks {
		j.evict()
	}
	return nil
}

// evalResidual lists every row's candidate pairs (partner live slots in order) and, with a residual, evaluates it
// over them at once into j.match.
func (j *regularJoin) evalResidual(s int, rec, prec arrow.RecordBatch) error {
	if j.p.cfg.Residual == nil {
		return nil
	}
	j.candStart, j.candProbe, j.candPart = j.candStart[:0], j.candProbe[:0], j.candPart[:0]
	for i, part := range j.part {
		j.candStart = append(j.candStart, int32(len(j.candProbe)))
		if part == nil {
			continue
		}
		for sl := range part.sl {
			if part.sl[sl].cnt > 0 {
				j.candProbe = append(j.candProbe, int32(i))
				j.candPart = append(j.candPart, part.pbase+int32(sl))
			}
		}
	}
	j.candStart = append(j.candStart, int32(len(j.candProbe)))
	j.match = j.match[:0]
	for lo := 0; lo < len(j.candProbe); lo += chunkRows {
		hi := min(lo+chunkRows, len(j.candProbe))
		cand, err := j.gather(s, rec, prec, j.candProbe[lo:hi], j.candPart[lo:hi], j.p.resCols)
		if err != nil {
			return err
		}
		res, err := j.p.cfg.Residual.Eval(&j.ectx, cand)
		cand.Release()
		if err != nil {
			return err
		}
		bools, _ := res.(*array.Boolean) // a NULL-typed residual is never TRUE
		for c := range hi - lo {
			j.match = append(j.match, bools != nil && bools.IsValid(c) && bools.Value(c))
		}
		res.Release()
	}
	return nil
}

// pairs walks the batch in row order, updating state and listing the output rows.
func (j *regularJoin) pairs(b exec.Batch, s, o int) {
	j.outKind, j.outProbe, j.outPart = j.outKind[:0], j.outProbe[:0], j.outPart[:0]
	outerS, outerO, updS, semi := j.p.outer[s], j.p.outer[o], j.p.updating[s], j.p.semi
	residual, ttl := j.p.cfg.Residual != nil, j.p.cfg.TTL > 0
	n := b.Rows()
	for i := range n {
		if i+prefetchRows < n { // the lines this loop reads of the entries of a row ahead
			if e := j.own[i+prefetchRows]; e != nil {
				prefetch2(unsafe.Pointer(e))
				prefetch2(unsafe.Pointer(j.part[i+prefetchRows]))
			}
		}
		kind := b.Kind(i)
		add := kind == exec.Insert || kind == exec.UpdateAfter
		own, part := j.own[i], j.part[i]
		pi := int32(i)
		if own == nil { // a NULL key component: matches nothing, not stored
			if outerS && !semi {
				if add {
					j.emit(exec.Insert, pi, -1)
				} else {
					j.emit(exec.Delete, pi, -1)
				}
			}
			continue
		}
		row := j.rows.BytesOf(i)
		var c int32
		if residual {
			c = j.candStart[i]
		}
		if add {
			m := j.partners(part, pi, c, true, outerO, residual)
			slot := -1
			if updS {
				slot = own.find(row)
			}
			if slot >= 0 {
				// Without TTL a stored copy has exactly m associations; with expired partners it may have more, and
				// then its copies are not padded downstream: keep the larger count (see the TTL notes).
				own.sl[slot].cnt++
				if outerS && (m > 0 || own.sl[slot].match > 0) == semi {
					j.emit(exec.Insert, pi, -1)
				}
			} else {
				if outerS && (m > 0) == semi {
					j.emit(exec.Insert, pi, -1)
				}
				if own.chunked { // parsed or not: a probe folds the fresh chain into its slots
					j.markDirty(own)
					j.appendFresh(own, row)
				} else {
					grew := own.appendSlot(row, m, updS)
					own.acct += grew
					j.wsBytes += grew
				}
			}
			if ttl {
				own.written = j.now
			}
			j.markDirty(own)
			continue
		}
		slot := own.find(row)
		if slot < 0 {
			j.ctx.Errors.Add(1) // not in state: expired, or a broken input changelog
			continue
		}
		j.partners(part, pi, c, false, outerO, residual)
		if outerS && (own.sl[slot].match > 0) == semi {
			j.emit(exec.Delete, pi, -1)
		}
		own.removeCopy(slot)
		own.written = j.now
		j.markDirty(own)
	}
}

// partners lists the output rows of batch row pi's pairs with part's live slots (with a residual, those whose
// candidates, from c on, matched) and returns how many partner copies it paired with. An added row: +I (row,
// partner) per partner copy, each preceded on an outer partner side by -D (NULLs, partner) when it is the
// partner's first match, whose association count it then raises. A retracted row: -D (row, partner) per copy,
// each followed by +I (NULLs, partner) when it was the partner's last match, whose count it then lowers. A semi
// or anti join lists no pairs, and a semi join's flips are +I then -D (the partner is emitted while matched).
func (j *regularJoin) partners(part *keyEntry, pi, c int32, add, outerO, residual bool) int32 {
	var m int32
	flipKind, unflipKind := exec.Delete, exec.Insert // the partner's padded row goes, and comes back
	if j.p.semi {
		flipKind, unflipKind = exec.Insert, exec.Delete // the partner's row comes, and goes
	}
	for sl := range part.sl {
		ps := &part.sl[sl]
		if ps.cnt == 0 {
			continue
		}
		if residual {
			ok := j.match[c]
			c++
			if !ok {
				continue
			}
		}
		pr := part.pbase + int32(sl)
		if add {
			flip := outerO && ps.match == 0
			for range ps.cnt {
				if flip {
					j.emit(flipKind, -1, pr)
				}
				if j.p.pairs {
					j.emit(exec.Insert, pi, pr)
				}
			}
			if outerO {
				ps.match++
				j.markDirty(part)
			}
		} else {
			unflip := outerO && ps.match == 1
			for range ps.cnt {
				if j.p.pairs {
					j.emit(exec.Delete, pi, pr)
				}
				if unflip {
					j.emit(unflipKind, -1, pr)
				}
			}
			if outerO && ps.match > 0 {
				ps.match--
				j.markDirty(part)
			}
		}
		m += ps.cnt
	}
	return m
}

// emit lists one output row: its kind, the batch row (-1: NULLs) and the partner record row (-1: NULLs).
func (j *regularJoin) emit(k exec.RowKind, probe, part int32) {
	j.outKind = append(j.outKind, k)
	j.outProbe = append(j.outProbe, probe)
	j.outPart = append(j.outPart, part)
}

// CopiesInput: the regular join keeps a batch's rows as copies (their encoded row bytes in its fresh buffers, its
// keys as new strings or integers) and builds its output by gathering into new arrays (exec.TakeColumn, arrow's
// Take); nothing of it refers to a batch after Process. A hash exchange into it recycles its parts' buffers
// (exec.InputCopier): at parallelism 2 each bid of q9 and q20 was gathered into fresh memory before.
func (j *regularJoin) CopiesInput() {}

// gather builds joined rows: the probe side's columns taken from rec at probe, the partner's from prec at part
// (-1 is NULL in both), in left-then-right order.
func (j *regularJoin) gather(s int, rec, prec arrow.RecordBatch, probe, part []int32, need []bool) (arrow.RecordBatch, error) {
	n := len(probe)
	cols := make([]arrow.Array, 0, j.p.out.NumFields())
	release := func() {
		for _, c := range cols {
			c.Release()
		}
	}
	take := func(r arrow.RecordBatch, idx []int32) error {
		taker := exec.NewColumnTaker(j.ctx.Alloc, idx)
		defer taker.Release()
		for c := range int(r.NumCols()) {
			if need != nil && !need[len(cols)] {
				cols = append(cols, array.MakeArrayOfNull(j.ctx.Alloc, r.Column(c).DataType(), n))
				continue
			}
			a, err := taker.Take(r.Column(c))
			if err != nil {
				return fmt.Errorf("regular join: %w", err)
			}
			cols = append(cols, a)
		}
		return nil
	}
	first, firstIdx, second, secondIdx := rec, probe, prec, part
	if s == 1 {
		first, firstIdx, second, secondIdx = prec, part, rec, probe
	}
	if err := take(first, firstIdx); err != nil {
		release()
		return nil, err
	}
	if err := take(second, secondIdx); err != nil {
		release()
		return nil, err
	}
	out := array.NewRecordBatch(j.p.out, cols, int64(n))
	release()
	return out, nil
}

// emitOutput builds and emits the batch's output rows, in batches of at most chunkRows rows; a batch of inserts
// only has nil Kinds.
func (j *regularJoin) emitOutput(s int, rec, prec arrow.RecordBatch, out exec.Emitter) error {
	for lo := 0; lo < len(j.outKind); lo += chunkRows {
		hi := min(lo+chunkRows, len(j.outKind))
		res, err := j.gather(s, rec, prec, j.outProbe[lo:hi], j.outPart[lo:hi], nil)
		if err != nil {
			return err
		}
		var kinds []exec.RowKind
		for _, k := range j.outKind[lo:hi] {
			if k != exec.Insert {
				kinds = append([]exec.RowKind(nil), j.outKind[lo:hi]...)
				break
			}
		}
		if err := out.Emit(exec.Batch{Rec: res, Kinds: kinds}); err != nil {
			return err
		}
	}
	return nil
}

// resetEpochs starts the batch epochs over when they wrap: every entry's pepoch to 0, the current epoch to 1. An
// entry probed since the last write-back then looks unprobed to it (it only drops its rows from memory).
func (j *regularJoin) resetEpochs() {
	reset := func(k *keyState) bool {
		k.e[0].pepoch, k.e[1].pepoch = 0, 0
		return true
	}
	j.ints.each(reset)
	for _, k := range j.strs {
		reset(k)
	}
	j.epoch, j.wbEpoch = 1, 0
}
