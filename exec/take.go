package exec

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TakeRows returns a new batch of the given rows of b (in that order, repeats allowed), kinds included. b keeps its
// reference. Every index must be in [0, b.Rows()).
//
// The column types a plan moves most (fixed-width numbers and times, booleans, strings and binaries) are gathered
// here by index, one pass per column straight into new buffers; the others go through arrow-go's take kernel, whose
// per-call set-up (an index array, kernel dispatch, bounds checks, preallocation) cost more than the gather itself
// on the hash exchange's batches (one take per target subtask of every batch).
//
// alloc may be a partPool: the gathers take their buffers from it, the take kernel (which may count on cleared
// memory) from the pool's allocator.
func TakeRows(ctx context.Context, alloc memory.Allocator, b Batch, rows []int32) (Batch, error) {
	kernelAlloc := alloc
	if p, ok := alloc.(*partPool); ok {
		kernelAlloc = p.base
	}
	cols := make([]arrow.Array, b.Rec.NumCols())
	var idx arrow.Array // for the take kernel, built on first use
	defer func() {
		if idx != nil {
			idx.Release()
		}
	}()
	for i := range cols {
		col := b.Rec.Column(i)
		var c arrow.Array
		if !takeKernelOnly {
			c = gather(alloc, col, rows, rows) // no padding: TakeRows' rows are all in range
		}
		if c == nil {
			if idx == nil {
				ib := array.NewInt32Builder(kernelAlloc)
				ib.AppendValues(rows, nil)
				idx = ib.NewInt32Array()
				ib.Release()
			}
			var err error
			c, err = compute.TakeArray(compute.WithAllocator(ctx, kernelAlloc), col, idx)
			if err != nil {
				for _, done := range cols[:i] {
					done.Release()
				}
				return Batch{}, fmt.Errorf("take: %w", err)
			}
		}
		cols[i] = c
	}
	rec := array.NewRecordBatch(b.Rec.Schema(), cols, int64(len(rows)))
	for _, c := range cols {
		c.Release()
	}
	out := Batch{Rec: rec}
	if b.Kinds != nil {
		out.Kinds = make([]RowKind, len(rows))
		for i, r := range rows {
			out.Kinds[i] = b.Kinds[r]
		}
	}
	return out, nil
}

// takeKernelOnly sends every column through the take kernel (BenchmarkHashExchange compares the two).
var takeKernelOnly = false

// TakeColumn returns the given rows of col (in that order, repeats allowed) as a new array on alloc; a row of -1
// gives NULL (an outer join's padding). It returns nil for a column type it does not gather (dictionaries,
// extensions, nested types): the caller then uses arrow-go's take kernel.
func TakeColumn(alloc memory.Allocator, col arrow.Array, rows []int32) arrow.Array {
	if col.Len() == 0 { // every row is padding
		return array.MakeArrayOfNull(alloc, col.DataType(), len(rows))
	}
	valueRows := rows
	for i, r := range rows {
		if r < 0 { // padding: the values are read at row 0 and hidden by the validity bitmap
			valueRows = slices.Clone(rows)
			for j := i; j < len(rows); j++ {
				valueRows[j] = max(rows[j], 0)
			}
			break
		}
	}
	return gather(alloc, col, rows, valueRows)
}

// ConcatRecords returns one record of schema holding the rows of recs (of that schema) in order; recs keep their
// references. A single record of that very schema comes back with a new reference, no copy.
func ConcatRecords(alloc memory.Allocator, schema *arrow.Schema, recs []arrow.RecordBatch) (arrow.RecordBatch, error) {
	if len(recs) == 0 {
		b := array.NewRecordBuilder(alloc, schema)
		defer b.Release()
		return b.NewRecordBatch(), nil
	}
	if len(recs) == 1 && recs[0].Schema().Equal(schema) {
		recs[0].Retain()
		return recs[0], nil
	}
	cols := make([]arrow.Array, schema.NumFields())
	n := int64(0)
	for _, r := range recs {
		n += r.NumRows()
	}
	parts := make([]arrow.Array, len(recs))
	for c := range cols {
		for i, r := range recs {
			parts[i] = r.Column(c)
		}
		a, err := array.Concatenate(parts, alloc)
		if err != nil {
			for _, x := range cols[:c] {
				x.Release()
			}
			return nil, err
		}
		cols[c] = a
	}
	out := array.NewRecordBatch(schema, cols, n)
	for _, a := range cols {
		a.Release()
	}
	return out, nil
}

// ColumnTaker takes the same rows from several columns, as TakeColumn does (a row of -1 gives NULL), for every
// column type: what TakeColumn does not gather goes through arrow-go's take kernel, whose index array is built once
// for all the columns. Release frees it.
type ColumnTaker struct {
	cc    context.Context // carries alloc, for the kernel
	alloc memory.Allocator
	rows  []int32
	idx   arrow.Array
}

// NewColumnTaker returns a taker of rows on alloc.
func NewColumnTaker(alloc memory.Allocator, rows []int32) *ColumnTaker {
	return &ColumnTaker{cc: compute.WithAllocator(context.Background(), alloc), alloc: alloc, rows: rows}
}

// Take returns the taker's rows of col as a new array.
func (t *ColumnTaker) Take(col arrow.Array) (arrow.Array, error) {
	if a := TakeColumn(t.alloc, col, t.rows); a != nil {
		return a, nil
	}
	if t.idx == nil {
		b := array.NewInt32Builder(t.alloc)
		b.Reserve(len(t.rows))
		for _, r := range t.rows {
			if r < 0 {
				b.UnsafeAppendBoolToBitmap(false)
			} else {
				b.UnsafeAppend(r)
			}
		}
		t.idx = b.NewArray()
		b.Release()
	}
	a, err := compute.TakeArray(t.cc, col, t.idx)
	if err != nil {
		return nil, fmt.Errorf("take: %w", err)
	}
	return a, nil
}

// Release frees the kernel's index array, if one was built.
func (t *ColumnTaker) Release() {
	if t.idx != nil {
		t.idx.Release()
		t.idx = nil
	}
}

// gather takes rows of col into a new array, or returns nil for a type it does not handle. A row of -1 is NULL
// (col has at least one row); valueRows is rows with every -1 replaced by 0 (rows itself when none is -1), for the
// fixed-width and boolean gathers, whose value at a NULL is hidden by the validity bitmap; a string's is empty.
func gather(alloc memory.Allocator, col arrow.Array, rows, valueRows []int32) arrow.Array {
	data := col.Data()
	n := len(rows)
	if id := col.DataType().ID(); id == arrow.DICTIONARY || id == arrow.EXTENSION || len(data.Buffers()) < 2 ||
		data.Buffers()[1] == nil {
		return nil
	}
	padded := len(rows) > 0 && &valueRows[0] != &rows[0]
	var buffers []*memory.Buffer
	switch dt := col.DataType().(type) {
	case *arrow.BooleanType:
		vals := newBuf(alloc, int(bitutil.BytesForBits(int64(n))), false) // gatherBits writes every byte
		gatherBits(vals.Bytes(), data.Buffers()[1].Bytes(), data.Offset(), valueRows)
		buffers = []*memory.Buffer{nil, vals}
	case *arrow.StringType, *arrow.BinaryType:
		buffers = gatherBinary(alloc, data, rows)
	case arrow.FixedWidthDataType:
		w := dt.BitWidth()
		if w%8 != 0 || w == 0 || len(data.Buffers()) != 2 {
			return nil
		}
		w /= 8
		vals := newBuf(alloc, n*w, false)
		src := data.Buffers()[1].Bytes()[data.Offset()*w:]
		dst := vals.Bytes()
		switch w {
		case 8:
			gatherFixed(as[uint64](dst), as[uint64](src), valueRows)
		case 4:
			gatherFixed(as[uint32](dst), as[uint32](src), valueRows)
		case 2:
			gatherFixed(as[uint16](dst), as[uint16](src), valueRows)
		case 1:
			gatherFixed(dst, src, valueRows)
		default:
			for i, r := range valueRows {
				copy(dst[i*w:(i+1)*w], src[int(r)*w:int(r+1)*w])
			}
		}
		buffers = []*memory.Buffer{nil, vals}
	default:
		return nil
	}
	nulls := 0
	switch {
	case padded:
		valid := newBuf(alloc, int(bitutil.BytesForBits(int64(n))), true)
		vb := valid.Bytes()
		for i, r := range rows {
			if r >= 0 && col.IsValid(int(r)) {
				bitutil.SetBit(vb, i)
			} else {
				nulls++
			}
		}
		buffers[0] = valid
	case col.NullN() > 0:
		valid := newBuf(alloc, int(bitutil.BytesForBits(int64(n))), false) // gatherBits writes every byte
		gatherBits(valid.Bytes(), data.Buffers()[0].Bytes(), data.Offset(), rows)
		nulls = n - bitutil.CountSetBits(valid.Bytes(), 0, n)
		buffers[0] = valid
	}
	out := array.NewData(col.DataType(), n, buffers, nil, nulls, 0)
	for _, buf := range buffers {
		if buf != nil {
			buf.Release()
		}
	}
	defer out.Release()
	return array.MakeFromData(out)
}

// gatherBinary takes rows of a string or binary column (int32 offsets): the offsets, then the bytes.
func gatherBinary(alloc memory.Allocator, data arrow.ArrayData, rows []int32) []*memory.Buffer {
	n := len(rows)
	srcOffs := as[int32](data.Buffers()[1].Bytes())[data.Offset():]
	var srcBytes []byte
	if b := data.Buffers()[2]; b != nil {
		srcBytes = b.Bytes()
	}
	offs := newBuf(alloc, (n+1)*4, false)
	dstOffs := as[int32](offs.Bytes())
	total := int32(0)
	for i, r := range rows {
		dstOffs[i] = total
		if r >= 0 { // -1: NULL padding, empty
			total += srcOffs[r+1] - srcOffs[r]
		}
	}
	dstOffs[n] = total
	vals := newBuf(alloc, int(total), false)
	dst := vals.Bytes()
	for i := 0; i < n; {
		if rows[i] < 0 {
			i++
			continue
		}
		// A run of consecutive source rows is one copy (rows[j] > rows[j-1] >= 0: never padding).
		j := i + 1
		for j < n && rows[j] == rows[j-1]+1 {
			j++
		}
		copy(dst[dstOffs[i]:dstOffs[j]], srcBytes[srcOffs[rows[i]]:srcOffs[rows[j-1]+1]])
		i = j
	}
	return []*memory.Buffer{nil, offs, vals}
}

// gatherBits sets bit i of dst to bit off+rows[i] of src, for every i, writing every byte of dst (the bits past
// len(rows) in its last byte are 0), so dst need not be cleared first. A byte of dst is built in a register, not
// set bit by bit in memory.
func gatherBits(dst, src []byte, off int, rows []int32) {
	n := len(rows)
	dst = dst[:(n+7)/8]
	bit := func(r int32) byte {
		p := off + int(r)
		return src[p>>3] >> (p & 7) & 1
	}
	i := 0
	for ; i+8 <= n; i += 8 {
		r := rows[i : i+8 : i+8]
		dst[i>>3] = bit(r[0]) | bit(r[1])<<1 | bit(r[2])<<2 | bit(r[3])<<3 |
			bit(r[4])<<4 | bit(r[5])<<5 | bit(r[6])<<6 | bit(r[7])<<7
	}
	if i < n {
		var b byte
		for k, r := range rows[i:] {
			b |= bit(r) << k
		}
		dst[i>>3] = b
	}
}

func gatherFixed[T uint8 | uint16 | uint32 | uint64](dst, src []T, rows []int32) {
	dst = dst[:len(rows)]
	for i, r := range rows {
		dst[i] = src[r]
	}
}

// newBuf is a buffer of n bytes from alloc, zeroed when zero is set (a bitmap; values are all written over). A
// value buffer (zero unset) asked of Go's allocator comes from noZeroAlloc instead: the gathers write every one of
// its n bytes, so the clearing Go's make does first is wasted (it was about a tenth of the hash exchange's CPU).
func newBuf(alloc memory.Allocator, n int, zero bool) *memory.Buffer {
	if _, ok := alloc.(*memory.GoAllocator); ok && !zero && !zeroValueBuffers {
		alloc = noZeroAlloc{}
	}
	buf := memory.NewResizableBuffer(alloc)
	buf.Resize(n)
	if zero {
		clear(buf.Bytes())
	}
	return buf
}

// zeroValueBuffers turns noZeroAlloc off (the tests compare both).
var zeroValueBuffers = false

// noZeroAlloc is Go's allocator without the clearing of new memory: for buffers whose every byte is written
// before anything reads them. Like memory.GoAllocator, it aligns to 64 bytes, frees nothing (the collector does)
// and recycles nothing: a buffer's memory is never handed out again while anything references it.
type noZeroAlloc struct{}

func (noZeroAlloc) Allocate(size int) []byte {
	buf := makeNoZero(size + 64)
	shift := int(-uintptr(unsafe.Pointer(unsafe.SliceData(buf))) & 63)
	buf = buf[shift : shift+size : shift+size]
	if poisonNoZero {
		for i := range buf {
			buf[i] = 0xa5
		}
	}
	return buf
}

// poisonNoZero fills noZeroAlloc's buffers with 0xa5 (tests: a byte a gather forgets to write shows).
var poisonNoZero = false

func (a noZeroAlloc) Reallocate(size int, b []byte) []byte {
	if cap(b) >= size {
		return b[:size]
	}
	nb := a.Allocate(size)
	copy(nb, b)
	return nb
}

func (noZeroAlloc) Free([]byte) {}

// makeNoZero is n bytes of new, uncleared memory (whatever the collector's last use of it left there). The
// standard library's strings.Builder is the only public door to the runtime's allocation without clearing: Grow
// allocates its buffer that way, and the one byte written makes String's data pointer that buffer's start.
func makeNoZero(n int) []byte {
	var sb strings.Builder
	sb.Grow(n)
	sb.WriteByte(0)
	s := sb.String()
	return unsafe.Slice(unsafe.StringData(s), n)
}

// as views a byte slice as a slice of T (Arrow buffers are 64-byte aligned).
func as[T any](b []byte) []T {
	var z T
	sz := int(unsafe.Sizeof(z))
	if len(b) < sz {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/sz)
}
