package join

import (
	"fmt"
	"hash/maphash"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/clinksql/clinksql/exec/rowcodec"
	"github.com/clinksql/clinksql/internal/prefault"
)

// rowDecoder decodes canonical row bytes (rowcodec.Encoding with NULL markers, as rowcodec's DecodeKey reads them)
// into builders bound once: the common column types are appended through their concrete builders, without the
// type switches DecodeKey does per value.
type rowDecoder struct {
	cols []colDecoder
}

type colDecoder struct {
	kind uint8
	i64  *array.Int64Builder
	ts   *array.TimestampBuilder
	b    array.Builder
	t    arrow.DataType
}

const (
	decGeneric uint8 = iota
	decInt64
	decTimestamp
)

func newRowDecoder(enc *rowcodec.Encoding, bs []array.Builder) rowDecoder {
	d := rowDecoder{cols: make([]colDecoder, len(enc.Types))}
	for c, t := range enc.Types {
		cd := colDecoder{b: bs[c], t: t}
		switch b := bs[c].(type) {
		case *array.Int64Builder:
			if t.ID() == arrow.INT64 {
				cd.kind, cd.i64 = decInt64, b
			}
		case *array.TimestampBuilder:
			if t.ID() == arrow.TIMESTAMP {
				cd.kind, cd.ts = decTimestamp, b
			}
		}
		d.cols[c] = cd
	}
	return d
}

// decode appends one row.
func (d *rowDecoder) decode(row []byte) error {
	for c := range d.cols {
		cd := &d.cols[c]
		if len(row) == 0 {
			return rowcodec.ErrState
		}
		null := row[0] == 0
		row = row[1:]
		if null {
			cd.b.AppendNull()
			continue
		}
		switch cd.kind {
		case decInt64:
			if len(row) < 8 {
				return rowcodec.ErrState
			}
			cd.i64.Append(rowcodec.OrderedInt(row))
			row = row[8:]
		case decTimestamp:
			if len(row) < 8 {
				return rowcodec.ErrState
			}
			cd.ts.Append(arrow.Timestamp(rowcodec.OrderedInt(row)))
			row = row[8:]
		default:
			var err error
			if row, err = rowcodec.DecodeValue(cd.b, cd.t, row); err != nil {
				return err
			}
		}
	}
	if len(row) != 0 {
		return fmt.Errorf("join: %d stray bytes after a row", len(row))
	}
	return nil
}

// freshBuf holds the bytes of the rows a regular join side added since its last write-back, in blocks that are
// filled and never moved (a growing slice would copy everything at each doubling, and rows of Nexmark's bids are
// hundreds of bytes). A row's offset is its block's index << freshShift plus its start in the block; a row longer
// than a block gets a block of its own.
type freshBuf struct {
	blocks [][]byte
	spare  [][]byte // emptied standard blocks, for reuse
}

const (
	freshShift = 20
	freshBlock = 1 << freshShift
	// freshSpare bounds the emptied blocks kept for reuse.
	freshSpare = 64
)

// add copies row in and returns its offset.
func (f *freshBuf) add(row []byte) int32 {
	n := len(f.blocks)
	if n == 0 || len(f.blocks[n-1])+len(row) > cap(f.blocks[n-1]) {
		var b []byte
		if k := len(f.spare); k > 0 && len(row) <= freshBlock {
			b, f.spare = f.spare[k-1][:0], f.spare[:k-1]
		} else {
			b = make([]byte, 0, max(freshBlock, len(row)))
		}
		f.blocks = append(f.blocks, b)
		n++
	}
	b := &f.blocks[n-1]
	off := int32((n-1)<<freshShift | len(*b))
	*b = append(*b, row...)
	return off
}

// get returns the ln bytes at off.
func (f *freshBuf) get(off, ln int32) []byte {
	b := f.blocks[off>>freshShift]
	w := off & (freshBlock - 1)
	return b[w : w+ln]
}

// reset forgets every row, keeping a few blocks for reuse.
func (f *freshBuf) reset() {
	for i, b := range f.blocks {
		if cap(b) == freshBlock && len(f.spare) < freshSpare {
			f.spare = append(f.spare, b)
		}
		f.blocks[i] = nil
	}
	f.blocks = f.blocks[:0]
}

// freshLog is a regular join side's fresh log (freshRec, regular.go): records in blocks of freshLogBlock that are
// filled and never moved (a growing slice would copy the whole log at each doubling: a million records in a
// write-back interval of Nexmark's bids). Record i is blocks[i>>freshLogShift][i&(freshLogBlock-1)].
type freshLog struct {
	blocks [][]freshRec
	n      int
}

const (
	freshLogShift = 16
	freshLogBlock = 1 << freshLogShift
)

// add appends r and returns the log's new length (r's index+1).
func (l *freshLog) add(r freshRec) int32 {
	b := l.n >> freshLogShift
	if b == len(l.blocks) {
		if b < cap(l.blocks) && l.blocks[:b+1][b] != nil { // a block kept by reset
			l.blocks = l.blocks[:b+1]
		} else {
			l.blocks = append(l.blocks, make([]freshRec, freshLogBlock))
		}
	}
	l.blocks[b][l.n&(freshLogBlock-1)] = r
	l.n++
	return int32(l.n)
}

// at returns record i.
func (l *freshLog) at(i int32) freshRec { return l.blocks[i>>freshLogShift][i&(freshLogBlock-1)] }

// block returns block b's records.
func (l *freshLog) block(b int) []freshRec {
	return l.blocks[b][:min(freshLogBlock, l.n-b<<freshLogShift)]
}

// reset empties the log, keeping blocks for reuse up to about keep records.
func (l *freshLog) reset(keep int) {
	k := min(len(l.blocks), keep>>freshLogShift)
	for b := k; b < len(l.blocks); b++ {
		l.blocks[b] = nil
	}
	l.blocks, l.n = l.blocks[:0:k], 0
	if k == 0 {
		l.blocks = nil
	}
}

// keyFilter is a Bloom filter of canonical key bytes: has is never false for a key added, and false for most of
// the others (a fixed size: with millions of keys it answers true more often, which only costs Gets).
type keyFilter struct {
	bits []uint64
	seed maphash.Seed
}

// keyFilterBits is the filter's size: 2 MiB, about 1% false positives at a million keys.
const keyFilterBits = 1 << 24

func newKeyFilter() *keyFilter {
	return &keyFilter{bits: prefault.Slice(make([]uint64, keyFilterBits/64)), seed: maphash.MakeSeed()}
}

func (f *keyFilter) probes(key string) (uint64, uint64) {
	h := maphash.String(f.seed, key)
	return h % keyFilterBits, (h >> 32) % keyFilterBits
}

func (f *keyFilter) add(key string) {
	a, b := f.probes(key)
	f.bits[a/64] |= 1 << (a % 64)
	f.bits[b/64] |= 1 << (b % 64)
}

func (f *keyFilter) has(key string) bool {
	a, b := f.probes(key)
	return f.bits[a/64]&(1<<(a%64)) != 0 && f.bits[b/64]&(1<<(b%64)) != 0
}
