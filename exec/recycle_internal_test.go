package exec

import (
	"context"
	"slices"
	"testing"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// A part pool hands a freed buffer out again for a request of its class, poisons what it takes back on a
// counting allocator, keeps no more than its budget, and gives everything back when drained: the allocator's
// books balance.
func TestPartPoolRecyclesWithinBudget(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	p := newPartPool(mem)
	if !p.poison {
		t.Fatal("a pool on a counting allocator must poison")
	}
	a := p.Allocate(1000)
	if len(a) != 1000 || cap(a) != 1024 {
		t.Fatalf("len %d cap %d, want 1000 and the class, 1024", len(a), cap(a))
	}
	for i := range a {
		a[i] = 1
	}
	p.Free(a)
	if a[:1024][1023] != 0x5a || a[0] != 0x5a {
		t.Fatal("a buffer taken back is not poisoned")
	}
	b := p.Allocate(600) // same class
	if unsafe.SliceData(b) != unsafe.SliceData(a) || len(b) != 600 {
		t.Fatal("a buffer of the freed one's class was not handed out again")
	}
	if c := p.Allocate(600); unsafe.SliceData(c) == unsafe.SliceData(b) {
		t.Fatal("one buffer handed out twice")
	} else {
		p.Free(c)
	}
	p.Free(b)

	// Over the budget, buffers go back to the allocator at once.
	var big [][]byte
	for range 3 {
		big = append(big, p.Allocate(partPoolMaxBytes/2))
	}
	for _, x := range big {
		p.Free(x)
	}
	if p.bytes > partPoolMaxBytes {
		t.Fatalf("the pool holds %d bytes, over its budget of %d", p.bytes, partPoolMaxBytes)
	}
	p.drain()
	mem.AssertSize(t, 0)

	// On Go's allocator: no poisoning, nothing counted.
	if newPartPool(memory.NewGoAllocator()).poison {
		t.Fatal("a pool on Go's allocator poisons")
	}
}

// A hash exchange into a consumer with a part pool gathers its parts into recycled buffers once the consumer
// released the earlier ones, and the parts hold the right rows.
func TestHashExchangeRecyclesParts(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	schema := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64},
		{Name: "s", Type: arrow.BinaryTypes.String}}, nil)
	batch := func(round int) arrow.RecordBatch {
		b := array.NewRecordBuilder(mem, schema)
		defer b.Release()
		for i := range 3000 {
			b.Field(0).(*array.Int64Builder).Append(int64(i*7919 + round))
			b.Field(1).(*array.StringBuilder).Append(string(rune('a' + (i+round)%26)))
		}
		return b.NewRecordBatch()
	}
	ed := &outEdge{exchange: HashExchange(0), keyGroups: 128}
	for range 2 {
		ch := newChannel(4)
		ch.parts = newPartPool(mem)
		ed.chans = append(ed.chans, ch)
	}
	o := &output{ctx: context.Background(), edges: []*outEdge{ed}, alloc: mem, st: &subStats{}}
	var firstRound []uintptr
	for round := range 3 {
		rec := batch(round)
		want := map[int64]string{}
		for i := range int(rec.NumRows()) {
			want[rec.Column(0).(*array.Int64).Value(i)] = rec.Column(1).(*array.String).Value(i)
		}
		if err := o.Emit(Batch{Rec: rec}); err != nil {
			t.Fatal(err)
		}
		var bufs []uintptr
		for _, ch := range ed.chans {
			e := <-ch.c
			ks, ss := e.Batch.Rec.Column(0).(*array.Int64), e.Batch.Rec.Column(1).(*array.String)
			for i := range ks.Len() {
				if got := ss.Value(i); got != want[ks.Value(i)] {
					t.Fatalf("round %d: key %d has %q, want %q", round, ks.Value(i), got, want[ks.Value(i)])
				}
			}
			for _, c := range e.Batch.Rec.Columns() {
				for _, b := range c.Data().Buffers() {
					if b != nil && b.Len() > 0 {
						bufs = append(bufs, uintptr(unsafe.Pointer(unsafe.SliceData(b.Bytes()))))
					}
				}
			}
			e.Batch.Release()
		}
		slices.Sort(bufs)
		if round == 0 {
			firstRound = bufs
		} else if !slices.Equal(bufs, firstRound) {
			t.Fatalf("round %d gathered into other buffers than round 0 released", round)
		}
	}
	for _, ch := range ed.chans {
		ch.parts.drain()
	}
}
