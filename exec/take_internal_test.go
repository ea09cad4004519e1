package exec

import (
	"bytes"
	"context"
	"slices"
	"testing"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clinksql/clinksql/state"
)

// newBuf takes a value buffer asked of Go's allocator from noZeroAlloc (uncleared, 64-byte aligned), a bitmap
// cleared, and any other allocator's buffers from that allocator.
func TestNewBufNoZeroOnlyForGoValueBuffers(t *testing.T) {
	defer PoisonNoZeroBuffers()()
	for _, n := range []int{0, 1, 7, 63, 64, 65, 1000, 40000} {
		vals := newBuf(memory.NewGoAllocator(), n, false)
		if vals.Len() != n {
			t.Fatalf("n=%d: %d bytes", n, vals.Len())
		}
		if n > 0 {
			if uintptr(unsafe.Pointer(&vals.Bytes()[0]))%64 != 0 {
				t.Fatalf("n=%d: not 64-byte aligned", n)
			}
			for i, b := range vals.Bytes() {
				if b != 0xa5 {
					t.Fatalf("n=%d: byte %d is %#x: the value buffer did not come from noZeroAlloc", n, i, b)
				}
			}
		}
		vals.Release()
		bits := newBuf(memory.NewGoAllocator(), n, true)
		for i, b := range bits.Bytes() {
			if b != 0 {
				t.Fatalf("n=%d: bitmap byte %d is %#x, want 0", n, i, b)
			}
		}
		bits.Release()
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	buf := newBuf(mem, 100, false)
	if mem.CurrentAlloc() < 100 {
		t.Fatalf("a checked allocator's value buffer went around it: %d bytes allocated", mem.CurrentAlloc())
	}
	buf.Release()
}

// The hash exchange sends each row to the subtask owning its key group (state.KeyGroupOf, state.SubtaskOf), with
// a power-of-two number of key groups (the mask) as with any other (the modulo).
func TestHashExchangeRoutesByKeyGroup(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ib := array.NewInt64Builder(mem)
	for i := range 5000 {
		ib.Append(int64(i*7919) ^ int64(i)<<40)
	}
	col := ib.NewArray()
	ib.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64}}, nil)
	rec := array.NewRecordBatch(schema, []arrow.Array{col}, int64(col.Len()))
	col.Release()
	defer rec.Release()
	for _, groups := range []int{128, 100, 64, 7} {
		for _, p := range []int{2, 3} {
			ed := &outEdge{exchange: HashExchange(0), keyGroups: groups}
			for range p {
				ed.chans = append(ed.chans, newChannel(4))
			}
			o := &output{ctx: context.Background(), edges: []*outEdge{ed}, alloc: mem, st: &subStats{}}
			rec.Retain()
			if err := o.Emit(Batch{Rec: rec}); err != nil {
				t.Fatal(err)
			}
			total := 0
			for sub, ch := range ed.chans {
				for len(ch.c) > 0 {
					e := <-ch.c
					hs, err := HashKeys(e.Batch.Rec, []int{0}, nil)
					if err != nil {
						t.Fatal(err)
					}
					// The part carries the key groups of its rows, for the keyed operator behind it
					// (BatchKeyGroups): only over the same columns, and only while the batch holds the record they
					// were made of.
					kgs := make([]uint16, len(hs))
					for i, h := range hs {
						kgs[i] = uint16(state.KeyGroupOf(h, groups))
					}
					if got := e.Batch.KeyGroups([]int{0}); !slices.Equal(got, kgs) {
						t.Fatalf("groups %d p %d: the part carries key groups %v, want %v", groups, p, got[:min(4, len(got))], kgs[:min(4, len(kgs))])
					}
					if e.Batch.KeyGroups([]int{0, 0}) != nil {
						t.Fatalf("key groups offered for other key columns")
					}
					other := e.Batch
					other.Rec = rec
					if other.KeyGroups([]int{0}) != nil {
						t.Fatalf("key groups offered for another record")
					}
					for i, h := range hs {
						if want := state.SubtaskOf(state.KeyGroupOf(h, groups), groups, p); want != sub {
							t.Fatalf("groups %d p %d: row %d reached subtask %d, want %d", groups, p, i, sub, want)
						}
					}
					total += len(hs)
					e.Batch.Release()
				}
			}
			if total != int(rec.NumRows()) {
				t.Fatalf("groups %d p %d: %d rows arrived, want %d", groups, p, total, rec.NumRows())
			}
		}
	}
}

// gatherBits writes every byte of its output (poisoned first here) with the bits asked for, zero past the last.
func TestGatherBits(t *testing.T) {
	src := []byte{0b10110010, 0b01101111, 0b00000001, 0b11110000, 0xff}
	for off := 0; off < 9; off++ {
		for n := 0; n <= 21; n++ {
			rows := make([]int32, n)
			for i := range rows {
				rows[i] = int32((i*7 + off) % (8*len(src) - off))
			}
			dst := bytes.Repeat([]byte{0xa5}, (n+7)/8)
			gatherBits(dst, src, off, rows)
			for i := 0; i < 8*len(dst); i++ {
				want := i < n && bitutil.BitIsSet(src, off+int(rows[i]))
				if bitutil.BitIsSet(dst, i) != want {
					t.Fatalf("off %d n %d: bit %d is %v, want %v", off, n, i, !want, want)
				}
			}
		}
	}
}
