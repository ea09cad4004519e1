package agg

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/rowcodec"
	"github.com/clinksql/clinksql/state"
)

// State layout of the Top-N in the subtask's backend. Over a changelog (and for N > compactMaxN, and for RANK and
// DENSE_RANK), one entry per distinct row of a partition:
//
//	KeyedKey(kg, topNStateID, uvarint(len(part)) part entry)   uvarint copies, uvarint len(order)
//
// Over an append-only input with ROW_NUMBER and N <= compactMaxN (a partition then holds at most N rows), one entry
// per partition:
//
//	KeyedKey(kg, topNPartID, part)   uvarint count, then per entry in ascending order:
//	                                 uvarint copies, uvarint len(order), uvarint len(entry), entry
//
// so a barrier writes one Put per changed partition (not a Put per row that entered and a Delete per row pushed
// out) and a load is a Get. RANK and DENSE_RANK never use it: a tie at the boundary keeps all its rows (with N = 1
// and one sort value, every row), and rewriting such a partition whole at every barrier would cost its size each
// time; the per-entry layout costs what changed. State written before the compact layout existed (per-entry
// entries of an append-only Top-N) is still read: a partition found that way is rewritten in the compact layout,
// and its old entries deleted, at the first barrier after it changes.
//
// part is the partition's canonical key bytes (package rowcodec; empty without partition columns), entry is the
// row's sort bytes: the order bytes of its sort keys, then its canonical row bytes (every column, as a key). The
// uvarint length keeps partition "a" from prefixing partition "ab", so a partition is a prefix Scan.
//
// Order bytes of one sort key: NULL is 0x00 (NULLS FIRST) or 0x02 (NULLS LAST); a value is 0x01, then its
// canonical bytes for fixed-width types (which sort like the values) or, for strings and binary, the bytes with
// 0x00 escaped as 0x00 0xFF and terminated by 0x00 0x01 (so a prefix sorts first and the encoding is prefix-free);
// DESC inverts the value's bytes. So entries compare as byte strings exactly like the rows rank.
//
// The working set: partitions live in memory, each a sorted list of its entries with their copy counts (all rows
// over a changelog, the top set over an append-only input: for RANK and DENSE_RANK with the ties at the boundary,
// and with two counts, the distinct sort keys and the rows of the last one, so that a row entering finds in O(log)
// whether the last tie group leaves). Process first finds the partition of every row of the
// batch (resolveParts); the ones not in memory are created, and when the backend may hold them (after a restore or
// an eviction) loaded: in the compact layout by one state.GetMany for the whole batch (then a prefix Scan for those
// it misses while per-entry state of an older checkpoint remains), in the per-entry layout by a Scan of each
// partition's prefix. Each partition records the entries changed since the last barrier, each with whether the
// backend holds it; OnBarrier writes those (Put the count, or Delete a gone entry the backend holds: a row that
// entered and left between two barriers costs the backend nothing; in the compact layout: Put the partition) as one
// state.Batch handed over with state.WriteBatch; a partition left empty deletes its entries at once and leaves
// memory. Above maxParts a barrier evicts the partitions not touched since the previous one, or all of them when
// those touched alone are more than maxParts (a deduplication over ever new keys: the maps are replaced, no
// partition is visited).
const (
	topNStateID = 1 // a distinct row
	topNPartID  = 2 // a partition (compact layout)
)

// sortEntry is one distinct row of a partition: key is its sort bytes, key[off:] its canonical row bytes, n its
// copies.
type sortEntry struct {
	key string
	off int32
	n   int64
}

// entryRef is one position of a top set: a row (copies of one entry are separate positions), with its rank under
// RANK and DENSE_RANK (topRanked; 0 from top).
type entryRef struct {
	key string
	off int32
	r   int64
}

// chunkMax bounds a chunk of the sorted list: an insert or delete moves at most this many entries, and a search
// is a binary search over the chunks' last keys, then within one chunk.
const chunkMax = 512

// sortedList is a sorted multiset of entries in chunks.
type sortedList struct {
	chunks [][]sortEntry
	rows   int64 // copies in all
	// first and one back the chunks of a list that holds one entry (a new partition, most of them in a
	// deduplication) without allocating; a list is never copied.
	first [1]sortEntry
	one   [1][]sortEntry
}

// search returns where key is or would be inserted.
func (l *sortedList) search(key string) (c, i int, found bool) {
	cs := l.chunks
	c = sort.Search(len(cs), func(c int) bool { ch := cs[c]; return ch[len(ch)-1].key >= key })
	if c == len(cs) {
		if c == 0 {
			return 0, 0, false
		}
		c--
		return c, len(cs[c]), false
	}
	ch := cs[c]
	i = sort.Search(len(ch), func(i int) bool { return ch[i].key >= key })
	return c, i, ch[i].key == key
}

// add adds one copy of key (a view: it is cloned when new) and returns the entry's own key string and whether the
// entry was there before.
func (l *sortedList) add(key string, off int32) (string, bool) {
	c, i, found := l.search(key)
	l.rows++
	if found {
		l.chunks[c][i].n++
		return l.chunks[c][i].key, true
	}
	e := sortEntry{key: strings.Clone(key), off: off, n: 1}
	if len(l.chunks) == 0 {
		l.first[0] = e
		l.one[0] = l.first[:1:1]
		l.chunks = l.one[:1:1]
		return e.key, false
	}
	ch := slices.Insert(l.chunks[c], i, e)
	if len(ch) > chunkMax {
		half := len(ch) / 2
		right := slices.Clone(ch[half:])
		clear(ch[half:])
		ch = ch[:half]
		l.chunks = slices.Insert(l.chunks, c+1, right)
	}
	l.chunks[c] = ch
	return e.key, false
}

// removeAt takes one copy of the entry at (c, i) out and returns its key.
func (l *sortedList) removeAt(c, i int) string {
	ch := l.chunks[c]
	k := ch[i].key
	l.rows--
	if ch[i].n--; ch[i].n > 0 {
		return k
	}
	if ch = slices.Delete(ch, i, i+1); len(ch) == 0 {
		l.chunks = slices.Delete(l.chunks, c, c+1)
	} else {
		l.chunks[c] = ch
	}
	return k
}

func (l *sortedList) last() *sortEntry {
	ch := l.chunks[len(l.chunks)-1]
	return &ch[len(ch)-1]
}

func (l *sortedList) removeLast() string {
	c := len(l.chunks) - 1
	return l.removeAt(c, len(l.chunks[c])-1)
}

// removeLastEntry takes the last entry out with all its copies and returns its key.
func (l *sortedList) removeLastEntry() string {
	c := len(l.chunks) - 1
	ch := l.chunks[c]
	e := ch[len(ch)-1]
	l.rows -= e.n
	if ch = slices.Delete(ch, len(ch)-1, len(ch)); len(ch) == 0 {
		l.chunks = slices.Delete(l.chunks, c, c+1)
	} else {
		l.chunks[c] = ch
	}
	return e.key
}

// order is e's order bytes: entries tie when they are equal (the encoding is prefix-free, see the state layout).
func (e *sortEntry) order() string { return e.key[:e.off] }

// tied reports whether the entry of key (in the list) ties with its neighbour on either side.
func (l *sortedList) tied(key string, off int32) bool {
	c, i, _ := l.search(key)
	ord := key[:off]
	ch := l.chunks[c]
	switch {
	case i > 0:
		if ch[i-1].order() == ord {
			return true
		}
	case c > 0:
		if pc := l.chunks[c-1]; pc[len(pc)-1].order() == ord {
			return true
		}
	}
	switch {
	case i+1 < len(ch):
		return ch[i+1].order() == ord
	case c+1 < len(l.chunks):
		return l.chunks[c+1][0].order() == ord
	}
	return false
}

// groupCounts returns the number of distinct sort keys (tie groups) of the list and the rows of the last one.
func (l *sortedList) groupCounts() (groups, lastRows int64) {
	var ord string
	for _, ch := range l.chunks {
		for i := range ch {
			if o := ch[i].order(); groups == 0 || o != ord {
				ord, groups, lastRows = o, groups+1, 0
			}
			lastRows += ch[i].n
		}
	}
	return groups, lastRows
}

// lastGroupRows returns the rows of the list's last tie group (walking back from the end: the group only).
func (l *sortedList) lastGroupRows() int64 {
	if len(l.chunks) == 0 {
		return 0
	}
	ord := l.last().order()
	var n int64
	for c := len(l.chunks) - 1; c >= 0; c-- {
		ch := l.chunks[c]
		for i := len(ch) - 1; i >= 0; i-- {
			if ch[i].order() != ord {
				return n
			}
			n += ch[i].n
		}
	}
	return n
}

// appendSorted appends an entry larger than every entry in the list (a restore, in key order).
func (l *sortedList) appendSorted(e sortEntry) {
	if n := len(l.chunks); n == 0 || len(l.chunks[n-1]) >= chunkMax {
		l.chunks = append(l.chunks, make([]sortEntry, 0, chunkMax))
	}
	n := len(l.chunks) - 1
	l.chunks[n] = append(l.chunks[n], e)
	l.rows += e.n
}

// topRanked appends every position whose rank under f (RANK or DENSE_RANK) is at most n, with its rank.
func (l *sortedList) topRanked(f RankFunc, n int64, dst []entryRef) []entryRef {
	var before, groups, r int64 // rows before the entry, tie groups so far, the rank of the current group
	var ord string
	for _, ch := range l.chunks {
		for i := range ch {
			e := &ch[i]
			if o := e.order(); groups == 0 || o != ord {
				ord, groups, r = o, groups+1, before+1
				if f == DenseRank {
					r = groups
				}
				if r > n {
					return dst
				}
			}
			for k := int64(0); k < e.n; k++ {
				dst = append(dst, entryRef{key: e.key, off: e.off, r: r})
			}
			before += e.n
		}
	}
	return dst
}

// top appends the first n positions.
func (l *sortedList) top(n int64, dst []entryRef) []entryRef {
	for _, ch := range l.chunks {
		for _, e := range ch {
			for k := int64(0); k < e.n; k++ {
				if n == 0 {
					return dst
				}
				dst = append(dst, entryRef{key: e.key, off: e.off})
				n--
			}
		}
	}
	return dst
}

// changedEntry is an entry changed since the last barrier.
type changedEntry struct {
	key    string
	stored bool
}

// changedScan is how long a partition's changed list is searched linearly before it gets an index.
const changedScan = 8

// partState is one partition in memory.
type partState struct {
	kg      uint16
	ik      int64  // rowcodec.KeyInt: the key
	nullKey bool   // rowcodec.KeyInt: the key is NULL
	pkey    string // canonical key bytes
	list    sortedList
	// x holds what only some partitions need (allocated on first use), which keeps the common partState small:
	// most partitions of a deduplication hold one row, and the collector scans every one of them.
	x *partExt
	// Compact layout: stored says the backend holds the partition's entry.
	stored  bool
	dirty   bool // listed in topN.dirty
	dropped bool // left the working set; its backend entries are the caller's business
	// bound is the first 8 bytes (zero-padded, big endian) of the last kept entry's key when an append-only
	// partition's top set is full (N rows; under RANK and DENSE_RANK see rankFull), else MaxUint64: a row whose
	// key's prefix is above it cannot enter, and the check costs no visit to the list (the common case of a full
	// top N).
	bound   uint64
	seq     uint32 // the batch that last touched the partition
	snapSeq uint32 // the batch that last changed it (and took its snapshot)
	epoch   uint32
	// prevLo, prevHi locate the partition's top set before the current batch in topN.prev.
	prevLo, prevHi int32
}

// partExt is the part of a partition only the per-entry layout (or a partition loaded from it) needs.
type partExt struct {
	// changed lists the entries changed since the last barrier (by their list key strings), each with whether the
	// backend holds it (it was in the list before its first change: the list and the backend agree at a barrier);
	// changedAt indexes it by key once it is longer than changedScan. Per-entry layout only.
	changed   []changedEntry
	changedAt map[string]int32
	chg       [1]changedEntry // backs changed while it holds one entry
	// legacyKeys (compact layout) are the entry keys of per-entry state the partition was loaded from, deleted
	// when it is first written.
	legacyKeys []string
	// An append-only RANK or DENSE_RANK partition (once counted, see rankCounts): its distinct sort keys (tie
	// groups) and the rows of the last group.
	counted          bool
	groups, lastRows int64
}

// ext returns p.x, allocating it on first use.
func (p *partState) ext() *partExt {
	if p.x == nil {
		p.x = &partExt{}
		p.x.changed = p.x.chg[:0:1]
	}
	return p.x
}

// topN is one subtask of a TopN.
type topN struct {
	exec.NoTimers // results are emitted per batch; the runtime forwards the watermark
	p             *topNPlan
	ctx           *exec.TaskContext
	updating      bool
	n             int64
	rank          RankFunc
	compact       bool // one state entry per partition (see the state layout)
	legacy        bool // compact, and the backend holds per-entry state

	ints     map[int64]*partState
	strs     map[string]*partState
	null     *partState // the NULL key's partition (rowcodec.KeyInt), the only one (rowcodec.KeyNone)
	parts    int
	complete bool // every partition of the backend is in memory
	dirty    []*partState
	seq      uint32
	epoch    uint32
	// epochParts counts the partitions in memory touched since the last barrier (p.epoch == epoch).
	epochParts int

	// Per batch.
	kgs       exec.BatchKeyGroups
	pkeys     rowcodec.KeyRows
	rowApp    []rowcodec.ValueAppender // per input column: its canonical bytes, as rowcodec.KeyRows encodes a row
	rowScr    [][]int64
	ord       []byte
	ordOff    []int32
	ordApp    []rowcodec.ValueAppender
	scr       [][]int64
	entry     []byte
	touched   []*partState
	rowParts  []*partState // per row of the batch: its partition (resolveParts)
	load      []*partState // partitions of the batch the backend may hold, to load (loadParts)
	loadBuf   []byte
	loadOff   []int32
	loadKeys  [][]byte
	loadFound []bool
	wbBytes   int // the largest entry a barrier wrote (sizes the next barrier's batch)
	prev      []entryRef
	next      []entryRef
	dels      []entryRef
	ins       []entryRef
	keyBuf    []byte
	out       *array.RecordBuilder
	outKinds  []exec.RowKind
	outRefs   []topNOut
	outUpdate bool
	// dataPerRow is, per string column of the output, its bytes per row in the last batch built.
	dataPerRow []int
}

var _ exec.Operator = (*topN)(nil)

func newTopN(p *topNPlan) *topN {
	return &topN{p: p, updating: p.cfg.InputUpdating, n: p.cfg.N, rank: p.cfg.Rank,
		compact: !p.cfg.InputUpdating && p.cfg.N <= p.compactMaxN && p.cfg.Rank == RowNumber}
}

func (o *topN) Open(ctx *exec.TaskContext) error {
	if err := exec.CheckKeyGroups(ctx, "Top-N"); err != nil {
		return err
	}
	o.ctx = ctx
	o.ints = map[int64]*partState{}
	o.strs = map[string]*partState{}
	o.seq, o.epoch = 1, 1
	empty, err := stateEmpty(ctx, topNStateID)
	if err != nil {
		return fmt.Errorf("Top-N: %w", err)
	}
	emptyParts, err := stateEmpty(ctx, topNPartID)
	if err != nil {
		return fmt.Errorf("Top-N: %w", err)
	}
	o.complete = empty && emptyParts
	o.legacy = o.compact && !empty
	return nil
}

// partKey is the backend key of p in the compact layout.
func (o *topN) partKey(p *partState, extra int) []byte {
	k := make([]byte, 0, 3+len(p.pkey)+extra)
	k = append(k, state.KeyedKey(int(p.kg), topNPartID, nil)...) // KeyedKey of no user key: the 3-byte prefix
	return append(k, p.pkey...)
}

// encodePart appends p's entries in the compact layout.
func encodePart(dst []byte, l *sortedList) []byte {
	n := 0
	for _, ch := range l.chunks {
		n += len(ch)
	}
	dst = binary.AppendUvarint(dst, uint64(n))
	for _, ch := range l.chunks {
		for _, e := range ch {
			dst = binary.AppendUvarint(dst, uint64(e.n))
			dst = binary.AppendUvarint(dst, uint64(e.off))
			dst = binary.AppendUvarint(dst, uint64(len(e.key)))
			dst = append(dst, e.key...)
		}
	}
	return dst
}

// decodePart calls fn for each entry of a partition's value in the compact layout, in order.
func decodePart(v []byte, fn func(e sortEntry)) error {
	n, rest, err := rowcodec.GetUvarint(v)
	if err != nil {
		return err
	}
	var prev string
	for ; n > 0; n-- {
		var copies, off, kl uint64
		if copies, rest, err = rowcodec.GetUvarint(rest); err != nil {
			return err
		}
		if off, rest, err = rowcodec.GetUvarint(rest); err != nil {
			return err
		}
		if kl, rest, err = rowcodec.GetUvarint(rest); err != nil {
			return err
		}
		if kl > uint64(len(rest)) || off > kl || copies == 0 {
			return rowcodec.ErrState
		}
		key := string(rest[:kl])
		if prev != "" && key <= prev {
			return rowcodec.ErrState
		}
		prev = key
		rest = rest[kl:]
		fn(sortEntry{key: key, off: int32(off), n: int64(copies)})
	}
	if len(rest) != 0 {
		return rowcodec.ErrState
	}
	return nil
}

// statePrefix is the backend prefix of p's entries.
func (o *topN) statePrefix(dst []byte, p *partState) []byte {
	dst = append(dst[:0], state.KeyedKey(int(p.kg), topNStateID, nil)...)
	dst = binary.AppendUvarint(dst, uint64(len(p.pkey)))
	return append(dst, p.pkey...)
}

func (o *topN) stateKey(p *partState, entry string) []byte { return o.stateKeyCap(p, entry, 0) }

// stateKeyCap is stateKey with room for extra more bytes after it (a value sharing its allocation).
func (o *topN) stateKeyCap(p *partState, entry string, extra int) []byte {
	o.keyBuf = o.statePrefix(o.keyBuf, p)
	k := make([]byte, 0, len(o.keyBuf)+len(entry)+extra)
	k = append(append(k, o.keyBuf...), entry...)
	return k[: len(k) : len(k)+extra]
}

// partFor finds or creates the partition of row i; a new partition is returned with created set and nothing
// loaded (loadParts).
func (o *topN) partFor(i int) (p *partState, created bool, err error) {
	switch o.p.partEnc.Mode {
	case rowcodec.KeyInt:
		if o.pkeys.Nulls == nil || o.pkeys.Nulls.IsValid(i) {
			if p := o.ints[o.pkeys.Ints[i]]; p != nil {
				return p, false, nil
			}
		} else if o.null != nil {
			return o.null, false, nil
		}
	case rowcodec.KeyBytes:
		if p := o.strs[string(o.pkeys.BytesOf(i))]; p != nil {
			return p, false, nil
		}
	default:
		if o.null != nil {
			return o.null, false, nil
		}
	}
	kg, err := o.kgs.Of(o.ctx, o.p.cfg.Partition, i, "Top-N")
	if err != nil {
		return nil, false, err
	}
	p = &partState{kg: uint16(kg), bound: math.MaxUint64}
	switch o.p.partEnc.Mode {
	case rowcodec.KeyInt:
		if o.pkeys.Nulls != nil && o.pkeys.Nulls.IsNull(i) {
			p.nullKey = true
			o.null = p
		} else {
			p.ik = o.pkeys.Ints[i]
			o.ints[p.ik] = p
		}
		p.pkey = string(rowcodec.AppendIntKey(nil, p.ik, p.nullKey))
	case rowcodec.KeyBytes:
		p.pkey = string(o.pkeys.BytesOf(i))
		o.strs[p.pkey] = p
	default:
		o.null = p
	}
	o.parts++
	return p, true, nil
}

// resolveParts finds the partition of every row of the batch (o.rowParts), creating the missing ones and loading
// those the backend may hold in one batched lookup.
func (o *topN) resolveParts(n int) error {
	o.rowParts, o.load = o.rowParts[:0], o.load[:0]
	for i := 0; i < n; i++ {
		p, created, err := o.partFor(i)
		if err != nil {
			return err
		}
		if created && !o.complete {
			o.load = append(o.load, p)
		}
		o.rowParts = append(o.rowParts, p)
	}
	if len(o.load) == 0 {
		return nil
	}
	err := o.loadParts()
	clear(o.load)
	o.load = o.load[:0]
	return err
}

// loadParts loads the partitions of o.load from the backend: in the compact layout with one state.GetMany (the
// keys in one arena), then a prefix Scan for each partition it did not find while the backend may hold per-entry
// state; in the per-entry layout with a Scan each.
func (o *topN) loadParts() error {
	if o.compact {
		o.loadBuf, o.loadKeys = o.loadBuf[:0], o.loadKeys[:0]
		offs := o.loadOff[:0]
		for _, p := range o.load {
			offs = append(offs, int32(len(o.loadBuf)))
			o.loadBuf = append(o.loadBuf, byte(p.kg>>8), byte(p.kg), topNPartID)
			o.loadBuf = append(o.loadBuf, p.pkey...)
		}
		offs = append(offs, int32(len(o.loadBuf)))
		for j := range o.load {
			o.loadKeys = append(o.loadKeys, o.loadBuf[offs[j]:offs[j+1]:offs[j+1]])
		}
		o.loadOff = offs
		o.loadFound = append(o.loadFound[:0], make([]bool, len(o.load))...)
		err := state.GetMany(o.ctx.State, o.loadKeys, func(j int, v []byte) error {
			p := o.load[j]
			p.stored = true
			o.loadFound[j] = true
			if err := decodePart(v, p.list.appendSorted); err != nil {
				return fmt.Errorf("Top-N: restore a partition of key group %d: %w", p.kg, err)
			}
			return nil
		})
		clear(o.loadKeys)
		if err != nil {
			return err
		}
		for j, p := range o.load {
			if !o.loadFound[j] && o.legacy {
				if err := o.scanPart(p); err != nil {
					return err
				}
			}
			o.setBound(p)
		}
		return nil
	}
	for _, p := range o.load {
		if err := o.scanPart(p); err != nil {
			return err
		}
		o.setBound(p)
	}
	return nil
}

// scanPart loads p's per-entry state with a prefix Scan.
func (o *topN) scanPart(p *partState) error {
	prefix := o.statePrefix(nil, p)
	err := o.ctx.State.Scan(prefix, func(k, v []byte) error {
		n, rest, err := rowcodec.GetUvarint(v)
		if err != nil {
			return err
		}
		off, rest, err := rowcodec.GetUvarint(rest)
		if err != nil || len(rest) != 0 || n == 0 || off > uint64(len(k)-len(prefix)) {
			return fmt.Errorf("Top-N: malformed entry in state")
		}
		p.list.appendSorted(sortEntry{key: string(k[len(prefix):]), off: int32(off), n: int64(n)})
		if o.compact {
			x := p.ext()
			x.legacyKeys = append(x.legacyKeys, string(k[len(prefix):]))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("Top-N: restore a partition of key group %d: %w", p.kg, err)
	}
	return nil
}

// dropPart takes p out of the working set.
func (o *topN) dropPart(p *partState) {
	switch o.p.partEnc.Mode {
	case rowcodec.KeyInt:
		if p.nullKey {
			o.null = nil
		} else {
			delete(o.ints, p.ik)
		}
	case rowcodec.KeyBytes:
		delete(o.strs, p.pkey)
	default:
		o.null = nil
	}
	p.dropped = true
	o.parts--
	if p.epoch == o.epoch {
		o.epochParts--
	}
}

// orderAppender appends the order bytes of a non-NULL value of arr (see the state layout).
func orderAppender(arr arrow.Array, scratch *[]int64) (rowcodec.ValueAppender, error) {
	switch a := arr.(type) {
	case *array.String:
		return func(dst []byte, i int) []byte { return appendEscaped(dst, a.Value(i)) }, nil
	case *array.LargeString:
		return func(dst []byte, i int) []byte { return appendEscaped(dst, a.Value(i)) }, nil
	case *array.Binary:
		return func(dst []byte, i int) []byte { return appendEscaped(dst, rowcodec.UnsafeString(a.Value(i))) }, nil
	case *array.LargeBinary:
		return func(dst []byte, i int) []byte { return appendEscaped(dst, rowcodec.UnsafeString(a.Value(i))) }, nil
	}
	return rowcodec.NewValueAppender(arr, scratch, false)
}

func appendEscaped(dst []byte, s string) []byte {
	for {
		z := strings.IndexByte(s, 0)
		if z < 0 {
			break
		}
		dst = append(append(dst, s[:z]...), 0, 0xFF)
		s = s[z+1:]
	}
	return append(append(dst, s...), 0, 1)
}

// encodeOrder computes the order bytes of every row of rec.
func (o *topN) encodeOrder(rec arrow.RecordBatch) error {
	order := o.p.cfg.Order
	o.ordApp = o.ordApp[:0]
	for len(o.scr) < len(order) {
		o.scr = append(o.scr, nil)
	}
	for k, sk := range order {
		a, err := orderAppender(rec.Column(sk.Col), &o.scr[k])
		if err != nil {
			return err
		}
		o.ordApp = append(o.ordApp, a)
	}
	n := int(rec.NumRows())
	o.ord = o.ord[:0]
	o.ordOff = append(o.ordOff[:0], 0)
	for i := 0; i < n; i++ {
		for k, sk := range order {
			if rec.Column(sk.Col).IsNull(i) {
				if sk.NullsFirst {
					o.ord = append(o.ord, 0)
				} else {
					o.ord = append(o.ord, 2)
				}
				continue
			}
			o.ord = append(o.ord, 1)
			s := len(o.ord)
			o.ord = o.ordApp[k](o.ord, i)
			if sk.Desc {
				for j := s; j < len(o.ord); j++ {
					o.ord[j] = ^o.ord[j]
				}
			}
		}
		o.ordOff = append(o.ordOff, int32(len(o.ord)))
	}
	return nil
}

// CopiesInput: what the Top-N keeps of a batch are copies (the rows' encoded bytes, the partition keys as new
// strings); the column appenders it builds per batch are rebuilt before each use. A hash exchange into it recycles
// its parts' buffers (exec.InputCopier).
func (o *topN) CopiesInput() {}

func (o *topN) Process(_ int, b exec.Batch, out exec.Emitter) error {
	defer b.Release()
	n := b.Rows()
	if n == 0 {
		return nil
	}
	kinds := b.Kinds
	for _, k := range kinds {
		if (k == exec.UpdateBefore || k == exec.Delete) && !o.updating {
			return fmt.Errorf("Top-N: input row of kind %s (the input is append-only)", k)
		}
	}
	o.kgs.Start(b)
	defer o.kgs.End()
	if o.seq++; o.seq == 0 { // wrapped: the marks of partitions in memory could collide
		o.forEachPart(func(p *partState) { p.seq, p.snapSeq = 0, 0 })
		o.seq = 1
	}
	if err := o.pkeys.Load(&o.p.partEnc, b.Rec, o.p.cfg.Partition); err != nil {
		return err
	}
	if err := o.rowAppenders(b.Rec); err != nil {
		return err
	}
	if err := o.encodeOrder(b.Rec); err != nil {
		return err
	}
	o.touched, o.prev = o.touched[:0], o.prev[:0]
	if err := o.resolveParts(n); err != nil {
		return err
	}
	var ignored int64
	for i, p := range o.rowParts {
		o.touch(p)
		ord := o.ord[o.ordOff[i]:o.ordOff[i+1]]
		if !o.updating && len(ord) >= 8 && sortPrefix(rowcodec.UnsafeString(ord)) > p.bound {
			continue // as below, decided by the order bytes alone: the row is not even encoded
		}
		o.entry = o.encodeRow(append(o.entry[:0], ord...), b.Rec, i)
		key, off := rowcodec.UnsafeString(o.entry), int32(len(ord))
		if kinds != nil && (kinds[i] == exec.UpdateBefore || kinds[i] == exec.Delete) {
			c, j, found := p.list.search(key)
			if !found {
				ignored++
				continue
			}
			o.snapshot(p)
			o.change(p, p.list.removeAt(c, j), true)
			continue
		}
		var x *partExt
		switch {
		case o.updating:
		case o.rank == RowNumber:
			if pre := sortPrefix(key); pre > p.bound || (pre == p.bound && p.list.rows >= o.n && key >= p.list.last().key) {
				continue // ranks after the N kept rows: it can never enter
			}
		default:
			if x = o.rankCounts(p); o.rankFull(p, x) && key[:off] > p.list.last().order() {
				continue // a sort key after the last kept one: its rank is above N, and only grows
			}
		}
		o.snapshot(p)
		ek, had := p.list.add(key, off)
		o.change(p, ek, had)
		if !o.updating {
			if x != nil {
				o.trimRanked(p, x, ek, off, had)
			} else if p.list.rows > o.n {
				o.change(p, p.list.removeLast(), true)
			}
			o.setBound(p)
		}
	}
	clear(o.rowParts)
	o.rowParts = o.rowParts[:0]
	if ignored > 0 {
		o.ctx.Errors.Add(ignored)
	}
	return o.emit(out)
}

// rowAppenders prepares the encoding of rec's rows (encodeRow).
func (o *topN) rowAppenders(rec arrow.RecordBatch) error {
	cols := o.p.allCols
	for len(o.rowScr) < len(cols) {
		o.rowScr = append(o.rowScr, nil)
	}
	o.rowApp = o.rowApp[:0]
	for c, ci := range cols {
		a, err := rowcodec.NewValueAppender(rec.Column(ci), &o.rowScr[c], o.p.rowEnc.Exact)
		if err != nil {
			return err
		}
		o.rowApp = append(o.rowApp, a)
	}
	return nil
}

// encodeRow appends row i's canonical bytes, exactly what rowcodec.KeyRows.Load makes of it with p.rowEnc (an
// Exact encoding: per column 0x00 for NULL, else 0x01 and the value's bytes), for the rows that need them only.
func (o *topN) encodeRow(dst []byte, rec arrow.RecordBatch, i int) []byte {
	for c, ci := range o.p.allCols {
		if rec.Column(ci).IsNull(i) {
			dst = append(dst, 0)
			continue
		}
		dst = o.rowApp[c](append(dst, 1), i)
	}
	return dst
}

func (o *topN) forEachPart(fn func(p *partState)) {
	for _, p := range o.ints {
		fn(p)
	}
	for _, p := range o.strs {
		fn(p)
	}
	if o.null != nil {
		fn(o.null)
	}
}

// sortPrefix is the first 8 bytes of key, zero-padded, as a big-endian number: prefixes order like the keys (a
// larger prefix means a larger key; equal prefixes decide nothing).
func sortPrefix(key string) uint64 {
	if len(key) >= 8 {
		return binary.BigEndian.Uint64(rowcodec.StringBytes(key))
	}
	var b [8]byte
	copy(b[:], key)
	return binary.BigEndian.Uint64(b[:])
}

// setBound refreshes p.bound after a change of an append-only partition. Under RANK and DENSE_RANK the bound says
// only that a row whose order bytes' prefix is above it cannot enter: the order bytes are prefix-free, so a larger
// 8-byte prefix of at least 8 order bytes means a sort key after the last kept one (rankFull).
func (o *topN) setBound(p *partState) {
	p.bound = math.MaxUint64
	if o.updating {
		return
	}
	if o.rank == RowNumber {
		if p.list.rows >= o.n {
			p.bound = sortPrefix(p.list.last().key)
		}
		return
	}
	if o.rankFull(p, o.rankCounts(p)) {
		p.bound = sortPrefix(p.list.last().key)
	}
}

// rankCounts returns p's tie group counts (append-only RANK and DENSE_RANK), counted on first use: a partition
// created empty, or loaded from the backend. It must be called before the partition's first change.
func (o *topN) rankCounts(p *partState) *partExt {
	x := p.ext()
	if !x.counted {
		x.counted = true
		x.groups, x.lastRows = p.list.groupCounts()
	}
	return x
}

// rankFull reports whether a row with a sort key after the last kept one can no longer enter p's top set: under
// RANK its rank would be 1 + the rows kept (every better row is kept), under DENSE_RANK 1 + the groups kept.
func (o *topN) rankFull(p *partState, x *partExt) bool {
	if o.rank == DenseRank {
		return x.groups >= o.n
	}
	return p.list.rows >= o.n
}

// trimRanked updates p's counts after one copy of the entry key entered (had: the entry was there before) and drops
// the last tie group when its rank went past N: adding a row raises the ranks after it by one at most (RANK) or adds
// one group (DENSE_RANK), so at most one group leaves, and a group that left never comes back.
func (o *topN) trimRanked(p *partState, x *partExt, key string, off int32, had bool) {
	l := &p.list
	atEnd := l.last().order() == key[:off] // the row is in the last group
	switch newGroup := !had && !l.tied(key, off); {
	case newGroup && atEnd: // a new last group (the top set was not full)
		x.groups++
		x.lastRows = 1
	case newGroup:
		x.groups++
	case atEnd:
		x.lastRows++
	}
	for {
		if o.rank == DenseRank {
			if x.groups <= o.n {
				return
			}
		} else if l.rows-x.lastRows+1 <= o.n { // the last group's rank
			return
		}
		ord := l.last().order()
		for l.rows > 0 && l.last().order() == ord {
			o.change(p, l.removeLastEntry(), true)
		}
		x.groups--
		x.lastRows = l.lastGroupRows()
	}
}

// touch lists p among the partitions of this batch, in the order of first touch.
func (o *topN) touch(p *partState) {
	if p.seq != o.seq {
		if p.epoch != o.epoch {
			o.epochParts++
		}
		p.seq, p.epoch = o.seq, o.epoch
		o.touched = append(o.touched, p)
	}
}

// snapshot records p's top set before its first change in this batch (the rows before that change could not alter
// it), so a partition the batch only touched costs no copy.
func (o *topN) snapshot(p *partState) {
	if p.snapSeq == o.seq {
		return
	}
	p.snapSeq = o.seq
	p.prevLo = int32(len(o.prev))
	o.prev = o.topSet(&p.list, o.prev)
	p.prevHi = int32(len(o.prev))
}

// topSet appends the top set of l: the first N positions for ROW_NUMBER, every row of rank <= N with its rank for
// RANK and DENSE_RANK.
func (o *topN) topSet(l *sortedList, dst []entryRef) []entryRef {
	if o.rank == RowNumber {
		return l.top(o.n, dst)
	}
	return l.topRanked(o.rank, o.n, dst)
}

// change records a change of p's entry key; stored says whether the entry was in the list before the change.
func (o *topN) change(p *partState, key string, stored bool) {
	if o.compact { // the whole partition is written
		goto listed
	}
	if x := p.ext(); x.changedAt != nil {
		if _, ok := x.changedAt[key]; !ok {
			x.changedAt[key] = int32(len(x.changed))
			x.changed = append(x.changed, changedEntry{key: key, stored: stored})
		}
	} else {
		for _, c := range x.changed {
			if c.key == key {
				goto listed
			}
		}
		x.changed = append(x.changed, changedEntry{key: key, stored: stored})
		if len(x.changed) > changedScan {
			x.changedAt = make(map[string]int32, 2*len(x.changed))
			for i, c := range x.changed {
				x.changedAt[c.key] = int32(i)
			}
		}
	}
listed:
	if !p.dirty {
		p.dirty = true
		o.dirty = append(o.dirty, p)
	}
}

// emit compares each changed partition's top set before and after the batch and emits the difference.
func (o *topN) emit(out exec.Emitter) error {
	for _, p := range o.touched {
		if p.snapSeq != o.seq {
			if p.list.rows == 0 { // created for retractions of rows it never held
				o.dropPart(p)
			}
			continue
		}
		prev := o.prev[p.prevLo:p.prevHi]
		o.next = o.topSet(&p.list, o.next[:0])
		next := o.next
		if o.p.cfg.RankOut && o.rank == RowNumber {
			for r := 0; r < max(len(prev), len(next)); r++ {
				var err error
				switch {
				case r >= len(next):
					err = o.appendRow(exec.Delete, prev[r], int64(r+1))
				case r >= len(prev):
					err = o.appendRow(exec.Insert, next[r], int64(r+1))
				case prev[r].key != next[r].key:
					if err = o.appendRow(exec.UpdateBefore, prev[r], int64(r+1)); err == nil {
						err = o.appendRow(exec.UpdateAfter, next[r], int64(r+1))
					}
				}
				if err != nil {
					return err
				}
				if len(o.outKinds) >= windowEmitRows {
					if err := o.flush(out); err != nil {
						return err
					}
				}
			}
		} else {
			// Both lists ascend, copies adjacent: a merge finds the multiset difference, of rows, or with RankOut
			// (RANK, DENSE_RANK) of (row, rank) pairs: all copies of a row have one rank in a top set.
			withRank := o.p.cfg.RankOut
			o.dels, o.ins = o.dels[:0], o.ins[:0]
			i, j := 0, 0
			for i < len(prev) || j < len(next) {
				switch {
				case j == len(next) || (i < len(prev) && prev[i].key < next[j].key):
					o.dels = append(o.dels, prev[i])
					i++
				case i == len(prev) || next[j].key < prev[i].key:
					o.ins = append(o.ins, next[j])
					j++
				case withRank && prev[i].r != next[j].r:
					o.dels = append(o.dels, prev[i])
					o.ins = append(o.ins, next[j])
					i++
					j++
				default:
					i++
					j++
				}
			}
			for _, set := range [...]struct {
				kind exec.RowKind
				refs []entryRef
			}{{exec.Delete, o.dels}, {exec.Insert, o.ins}} {
				for _, ref := range set.refs {
					if err := o.appendRow(set.kind, ref, ref.r); err != nil {
						return err
					}
					if len(o.outKinds) >= windowEmitRows {
						if err := o.flush(out); err != nil {
							return err
						}
					}
				}
			}
		}
		if p.list.rows == 0 && p.x != nil {
			for _, c := range p.x.changed {
				if c.stored {
					o.ctx.State.Delete(o.stateKey(p, c.key))
				}
			}
			o.deleteCompact(p)
			o.dropPart(p)
		}
	}
	return o.flush(out)
}

// appendRow queues the row of ref, with rank r when RankOut, for the next output batch (flush).
func (o *topN) appendRow(kind exec.RowKind, ref entryRef, r int64) error {
	o.outRefs = append(o.outRefs, topNOut{ref: ref, r: r})
	o.outKinds = append(o.outKinds, kind)
	if kind != exec.Insert {
		o.outUpdate = true
	}
	return nil
}

// topNOut is a queued output row.
type topNOut struct {
	ref entryRef
	r   int64
}

// flush builds the queued rows into a batch and emits it. The builders are reserved first (string data by the
// bytes per row of the previous batch), so a batch's buffers are not grown by doubling row by row.
func (o *topN) flush(out exec.Emitter) error {
	n := len(o.outKinds)
	if n == 0 {
		return nil
	}
	nc := len(o.p.allCols)
	if o.out == nil {
		o.out = array.NewRecordBuilder(o.ctx.Alloc, o.p.out)
		o.dataPerRow = make([]int, nc)
	}
	fields := o.out.Fields()
	o.out.Reserve(n)
	for c, f := range fields[:nc] {
		if sb, ok := f.(*array.StringBuilder); ok && o.dataPerRow[c] > 0 {
			sb.ReserveData(n * o.dataPerRow[c])
		}
	}
	for _, q := range o.outRefs {
		if err := o.p.rowEnc.DecodeKey(fields[:nc], rowcodec.StringBytes(q.ref.key[q.ref.off:])); err != nil {
			return err
		}
		if o.p.cfg.RankOut {
			fields[nc].(*array.Int64Builder).Append(q.r)
		}
	}
	clear(o.outRefs)
	o.outRefs = o.outRefs[:0]
	for c, f := range fields[:nc] {
		if sb, ok := f.(*array.StringBuilder); ok {
			o.dataPerRow[c] = sb.DataLen()/n + 1
		}
	}
	b := exec.Batch{Rec: o.out.NewRecordBatch()}
	if o.outUpdate {
		b.Kinds = slices.Clone(o.outKinds)
	}
	o.outKinds, o.outUpdate = o.outKinds[:0], false
	return out.Emit(b)
}

// OnBarrier writes the entries changed since the last barrier into the write-back cache as one batch
// (state.WriteBatch: the backend keeps it as one block of memory, not an entry and two allocations per write), then
// shrinks the working set if it grew past maxParts.
func (o *topN) OnBarrier(uint64) error {
	if len(o.dirty) > 0 {
		o.writeBack()
	}
	if o.parts > o.p.maxParts {
		o.evict()
	}
	o.epoch++
	o.epochParts = 0
	return nil
}

// writeBack writes the dirty partitions' changes into one state.Batch, sized from the previous barrier's largest
// entry.
func (o *topN) writeBack() {
	wb := state.NewBatch(len(o.dirty), o.batchBytes())
	var key, val []byte
	for _, p := range o.dirty {
		p.dirty = false
		if p.dropped {
			continue
		}
		if o.compact {
			key = append(append(key[:0], byte(p.kg>>8), byte(p.kg), topNPartID), p.pkey...)
			if p.list.rows == 0 {
				if p.stored {
					wb.Delete(key)
					p.stored = false
				}
			} else {
				val = encodePart(val[:0], &p.list)
				wb.Put(key, val)
				o.wbBytes = max(o.wbBytes, len(key)+len(val))
				p.stored = true
			}
			if p.x != nil {
				for _, k := range p.x.legacyKeys {
					o.keyBuf = o.statePrefix(o.keyBuf, p)
					wb.Delete(append(o.keyBuf, k...))
				}
				p.x = nil
			}
			continue
		}
		if p.x == nil {
			continue
		}
		x := p.x
		for _, ch := range x.changed {
			o.keyBuf = append(o.statePrefix(o.keyBuf, p), ch.key...)
			c, i, found := p.list.search(ch.key)
			if !found {
				if ch.stored { // an entry added and removed since the last barrier never reached the backend
					wb.Delete(o.keyBuf)
				}
				continue
			}
			e := p.list.chunks[c][i]
			val = binary.AppendUvarint(binary.AppendUvarint(val[:0], uint64(e.n)), uint64(e.off))
			wb.Put(o.keyBuf, val)
			o.wbBytes = max(o.wbBytes, len(o.keyBuf)+len(val))
		}
		clear(x.changed)
		x.changed, x.changedAt = x.changed[:0], nil
	}
	clear(o.dirty)
	o.dirty = o.dirty[:0]
	if wb.Len() > 0 {
		state.WriteBatch(o.ctx.State, wb)
	}
}

// batchBytes estimates the bytes of the barrier's batch: in the compact layout from the sizes of a sample of the
// dirty partitions (an underestimate costs the batch one growth, an overestimate memory until it is persisted),
// else from the previous barrier's largest entry.
func (o *topN) batchBytes() int {
	if !o.compact {
		return len(o.dirty) * max(o.wbBytes, 64)
	}
	const sample = 64
	step := max(1, len(o.dirty)/sample)
	total, seen := 0, 0
	for i := 0; i < len(o.dirty); i += step {
		p := o.dirty[i]
		total += 3 + len(p.pkey) + binary.MaxVarintLen64
		for _, ch := range p.list.chunks {
			for _, e := range ch {
				total += len(e.key) + 3*binary.MaxVarintLen32
			}
		}
		seen++
	}
	return total/seen*len(o.dirty)*9/8 + 4096
}

// deleteCompact deletes what the backend holds of p in the compact layout (it is left empty).
func (o *topN) deleteCompact(p *partState) {
	if p.stored {
		o.ctx.State.Delete(o.partKey(p, 0))
		p.stored = false
	}
	o.deleteLegacy(p)
}

// deleteLegacy deletes the per-entry state p was loaded from.
func (o *topN) deleteLegacy(p *partState) {
	if p.x == nil {
		return
	}
	for _, k := range p.x.legacyKeys {
		o.ctx.State.Delete(o.stateKey(p, k))
	}
	p.x.legacyKeys = nil
}

// mapHint sizes a map rebuilt by evict: for as many partitions as the last interval between barriers brought
// (the old map's size), so it does not grow by rehashing step by step again.
func (o *topN) mapHint(old int) int { return old }

// evict drops the partitions not touched since the previous barrier from memory, or all of them if that is not
// enough (known beforehand from epochParts: a deduplication over ever new keys drops all at once, without a visit
// to each); they are all clean (OnBarrier wrote them, and no reference to them outlives the barrier), so the backend
// has them. The maps are built anew from the partitions that stay rather than deleted from (a Go map keeps deleted
// slots as tombstones that later misses probe past, and deleting most of a large map costs a cache miss per key).
func (o *topN) evict() {
	if o.epochParts > o.p.maxParts {
		o.ints = make(map[int64]*partState, o.mapHint(len(o.ints)))
		o.strs = make(map[string]*partState, o.mapHint(len(o.strs)))
		o.null, o.parts, o.epochParts = nil, 0, 0
		o.complete = false
		return
	}
	keep := func(p *partState) bool {
		if p.epoch == o.epoch {
			return true
		}
		p.dropped = true
		o.parts--
		return false
	}
	if len(o.ints) > 0 {
		o.ints = keptParts(o.ints, keep, o.mapHint(len(o.ints)))
	}
	if len(o.strs) > 0 {
		o.strs = keptParts(o.strs, keep, o.mapHint(len(o.strs)))
	}
	if o.null != nil && !keep(o.null) {
		o.null = nil
	}
	o.complete = false
}

func (o *topN) Close() error {
	if o.out != nil {
		o.out.Release()
		o.out = nil
	}
	return nil
}

// keptParts is a new map, sized hint, of the partitions of m that keep keeps (a new map gives back the old one's
// memory, which deleting from it would not).
func keptParts[K comparable](m map[K]*partState, keep func(*partState) bool, hint int) map[K]*partState {
	out := make(map[K]*partState, hint)
	for k, p := range m {
		if keep(p) {
			out[k] = p
		}
	}
	return out
}
