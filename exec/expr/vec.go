package expr

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"
)

// This file holds the plumbing every hand-written kernel uses: typed read access to an argument that is an array
// or a constant, and output buffers written in place. Kernels read with these in tight loops; nothing here boxes
// a value.

type fixedWidth interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~float32 | ~float64 |
		decimal128.Num
}

// prim reads a fixed-width argument: vals[i] for an array, c for a constant (vals nil).
type prim[T fixedWidth] struct {
	vals  []T
	c     T
	valid []byte // validity bitmap of the array (nil: no nulls)
	off   int
	cnull bool // constant NULL
}

func primOf[T fixedWidth](v value) prim[T] {
	if v.arr == nil {
		var p prim[T]
		if !v.sc.IsValid() {
			p.cnull = true
			return p
		}
		if ps, ok := v.sc.(scalar.PrimitiveScalar); ok {
			d := ps.Data()
			if len(d) > 0 {
				p.c = arrow.GetData[T](d)[0]
			}
		} else if ds, ok := v.sc.(*scalar.Decimal128); ok {
			var n any = ds.Value
			p.c = n.(T)
		}
		return p
	}
	data := v.arr.Data()
	p := prim[T]{off: data.Offset()}
	if buf := data.Buffers()[1]; buf != nil && buf.Len() > 0 {
		p.vals = arrow.GetData[T](buf.Bytes())[data.Offset() : data.Offset()+data.Len()]
	}
	if v.arr.NullN() > 0 {
		p.valid = data.Buffers()[0].Bytes()
	}
	return p
}

func (p *prim[T]) isConst() bool { return p.vals == nil }

func (p *prim[T]) null(i int) bool {
	if p.vals == nil {
		return p.cnull
	}
	return p.valid != nil && !bitutil.BitIsSet(p.valid, p.off+i)
}

func (p *prim[T]) at(i int) T {
	if p.vals == nil {
		return p.c
	}
	return p.vals[i]
}

// strs reads a string or binary argument.
type strs struct {
	arr   *array.String
	bin   *array.Binary
	c     string
	cnull bool
}

func strsOf(v value) strs {
	if v.arr == nil {
		if !v.sc.IsValid() {
			return strs{cnull: true}
		}
		return strs{c: scalarString(v.sc)}
	}
	switch a := v.arr.(type) {
	case *array.String:
		return strs{arr: a}
	case *array.Binary:
		return strs{bin: a}
	}
	return strs{cnull: true}
}

func (s *strs) null(i int) bool {
	switch {
	case s.arr != nil:
		return s.arr.IsNull(i)
	case s.bin != nil:
		return s.bin.IsNull(i)
	}
	return s.cnull
}

func (s *strs) at(i int) string {
	switch {
	case s.arr != nil:
		return s.arr.Value(i)
	case s.bin != nil:
		return string(s.bin.Value(i)) // bytea is rare on hot paths
	}
	return s.c
}

// bools reads a boolean argument.
type bools struct {
	arr   *array.Boolean
	c     bool
	cnull bool
}

func boolsOf(v value) bools {
	if v.arr == nil {
		if !v.sc.IsValid() {
			return bools{cnull: true}
		}
		return bools{c: scalarBool(v.sc)}
	}
	return bools{arr: v.arr.(*array.Boolean)}
}

func (b *bools) null(i int) bool {
	if b.arr == nil {
		return b.cnull
	}
	return b.arr.IsNull(i)
}

func (b *bools) at(i int) bool {
	if b.arr == nil {
		return b.c
	}
	return b.arr.Value(i)
}

// primOut is a fixed-width output of n rows written in place.
type primOut[T fixedWidth] struct {
	typ   arrow.DataType
	n     int
	buf   *memory.Buffer
	vals  []T
	vbuf  *memory.Buffer // validity, nil while every row is valid
	valid []byte
	mem   memory.Allocator
}

func newPrimOut[T fixedWidth](ec *evalCtx, typ arrow.DataType) *primOut[T] {
	o := &primOut[T]{typ: typ, n: ec.n, mem: ec.mem}
	o.buf = memory.NewResizableBuffer(ec.mem)
	var zero T
	o.buf.Resize(ec.n * int(sizeOf(zero)))
	if ec.n > 0 {
		o.vals = arrow.GetData[T](o.buf.Bytes())[:ec.n]
	}
	return o
}

func sizeOf[T fixedWidth](v T) uintptr {
	switch any(v).(type) {
	case int8, uint8:
		return 1
	case int16, uint16:
		return 2
	case int32, uint32, float32:
		return 4
	case decimal128.Num:
		return 16
	}
	return 8
}

// initValidity starts the output validity as the AND of the arguments' (constants count as valid; a NULL
// constant must have been handled by the caller).
func (o *primOut[T]) initValidity(args ...value) {
	o.vbuf, o.valid = andValidity(o.mem, o.n, args...)
}

func (o *primOut[T]) setNull(i int) {
	if o.valid == nil {
		o.vbuf = allValid(o.mem, o.n)
		o.valid = o.vbuf.Bytes()
	}
	bitutil.ClearBit(o.valid, i)
}

func (o *primOut[T]) isNull(i int) bool {
	return o.valid != nil && !bitutil.BitIsSet(o.valid, i)
}

func (o *primOut[T]) finish() value {
	nulls := 0
	if o.valid != nil {
		nulls = o.n - bitutil.CountSetBits(o.valid, 0, o.n)
		if nulls == 0 {
			o.vbuf.Release()
			o.vbuf = nil
		}
	}
	data := array.NewData(o.typ, o.n, []*memory.Buffer{o.vbuf, o.buf}, nil, nulls, 0)
	arr := array.MakeFromData(data)
	data.Release()
	o.buf.Release()
	if o.vbuf != nil {
		o.vbuf.Release()
	}
	return value{arr: arr}
}

func (o *primOut[T]) release() {
	o.buf.Release()
	if o.vbuf != nil {
		o.vbuf.Release()
	}
}

func allValid(mem memory.Allocator, n int) *memory.Buffer {
	b := memory.NewResizableBuffer(mem)
	b.Resize(int(bitutil.BytesForBits(int64(n))))
	bs := b.Bytes()
	for i := range bs {
		bs[i] = 0xff
	}
	return b
}

// andValidity ANDs the validity bitmaps of the array arguments that have nulls into a new bitmap of n bits;
// (nil, nil) when none has.
func andValidity(mem memory.Allocator, n int, args ...value) (*memory.Buffer, []byte) {
	var out *memory.Buffer
	for _, a := range args {
		if a.arr == nil || a.arr.NullN() == 0 {
			continue
		}
		d := a.arr.Data()
		src := d.Buffers()[0].Bytes()
		if out == nil {
			out = memory.NewResizableBuffer(mem)
			out.Resize(int(bitutil.BytesForBits(int64(n))))
			bitutil.CopyBitmap(src, d.Offset(), n, out.Bytes(), 0)
			continue
		}
		bitutil.BitmapAnd(out.Bytes(), src, 0, int64(d.Offset()), out.Bytes(), 0, int64(n))
	}
	if out == nil {
		return nil, nil
	}
	return out, out.Bytes()
}

// retype returns arr's data viewed as type t (same physical layout: timestamp/duration/date as integers and
// back); it takes over arr.
func retype(arr arrow.Array, t arrow.DataType) arrow.Array {
	if arrow.TypeEqual(arr.DataType(), t) {
		return arr
	}
	d := arr.Data()
	nd := array.NewData(t, d.Len(), d.Buffers(), nil, d.NullN(), d.Offset())
	out := array.MakeFromData(nd)
	nd.Release()
	arr.Release()
	return out
}

// retypeValue is retype for a value (a constant is rebuilt with the same bits).
func retypeValue(v value, t arrow.DataType) value {
	if v.arr != nil {
		return value{arr: retype(v.arr, t)}
	}
	if arrow.TypeEqual(v.sc.DataType(), t) {
		return v
	}
	if !v.sc.IsValid() {
		return value{sc: scalar.MakeNullScalar(t)}
	}
	switch t.ID() {
	case arrow.INT64:
		return value{sc: scalar.NewInt64Scalar(scalarInt64(v.sc))}
	case arrow.INT32:
		return value{sc: scalar.NewInt32Scalar(int32(scalarInt64(v.sc)))}
	case arrow.TIMESTAMP:
		return value{sc: scalar.NewTimestampScalar(arrow.Timestamp(scalarInt64(v.sc)), t)}
	case arrow.DURATION:
		return value{sc: scalar.NewDurationScalar(arrow.Duration(scalarInt64(v.sc)), t)}
	case arrow.DATE32:
		return value{sc: scalar.NewDate32Scalar(arrow.Date32(scalarInt64(v.sc)))}
	}
	return v
}

// nullValue is a NULL constant of type t.
func nullValue(t arrow.DataType) value { return value{sc: scalar.MakeNullScalar(t)} }

// stringOut builds a string (or binary) output.
type stringOut struct {
	b *array.BinaryBuilder
}

func newStringOut(ec *evalCtx, t arrow.DataType, dataHint int) stringOut {
	var b *array.BinaryBuilder
	if t.ID() == arrow.STRING {
		b = array.NewStringBuilder(ec.mem).BinaryBuilder
	} else {
		b = array.NewBinaryBuilder(ec.mem, t.(arrow.BinaryDataType))
	}
	b.Reserve(ec.n)
	if dataHint > 0 {
		b.ReserveData(dataHint)
	}
	return stringOut{b: b}
}

func (s stringOut) finish() value {
	arr := s.b.NewArray()
	s.b.Release()
	if arr.DataType().ID() == arrow.STRING {
		if _, ok := arr.(*array.String); !ok {
			d := array.MakeFromData(arr.Data())
			arr.Release()
			arr = d
		}
	}
	return value{arr: arr}
}

// boolOut builds a boolean output of n rows in place.
type boolOut struct {
	n     int
	buf   *memory.Buffer
	bits  []byte
	vbuf  *memory.Buffer
	valid []byte
	mem   memory.Allocator
}

func newBoolOut(ec *evalCtx) *boolOut {
	o := &boolOut{n: ec.n, mem: ec.mem}
	o.buf = memory.NewResizableBuffer(ec.mem)
	o.buf.Resize(int(bitutil.BytesForBits(int64(ec.n))))
	o.bits = o.buf.Bytes()
	clear(o.bits)
	return o
}

func (o *boolOut) set(i int, v bool) {
	if v {
		bitutil.SetBit(o.bits, i)
	}
}

func (o *boolOut) setNull(i int) {
	if o.valid == nil {
		o.vbuf = allValid(o.mem, o.n)
		o.valid = o.vbuf.Bytes()
	}
	bitutil.ClearBit(o.valid, i)
}

func (o *boolOut) finish() value {
	nulls := 0
	if o.valid != nil {
		nulls = o.n - bitutil.CountSetBits(o.valid, 0, o.n)
	}
	data := array.NewData(arrow.FixedWidthTypes.Boolean, o.n, []*memory.Buffer{o.vbuf, o.buf}, nil, nulls, 0)
	arr := array.MakeFromData(data)
	data.Release()
	o.buf.Release()
	if o.vbuf != nil {
		o.vbuf.Release()
	}
	return value{arr: arr}
}
