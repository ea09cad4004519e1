package agg

import (
	"bytes"
	"math"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestMinMaxIntGroupKeepsMinMaxBytesFormat: the integer group form writes the state value and the result bytes
// minMaxBytes writes for the same rows, and each decodes the other's state, so checkpoints taken before it restore
// into it (and back); a group without a value, and the extremes of int64, included.
func TestMinMaxIntGroupKeepsMinMaxBytesFormat(t *testing.T) {
	b := array.NewInt64Builder(memory.DefaultAllocator)
	b.AppendValues([]int64{5, -3, math.MaxInt64, math.MinInt64, 7, 7}, nil)
	b.AppendNull()
	col := b.NewArray()
	defer col.Release()
	// group 0: 5, -3; group 1: MaxInt64, MinInt64; group 2: 7, 7, NULL; group 3: nothing
	rows, grps := []int32{0, 1, 2, 3, 4, 5, 6}, []int32{0, 0, 1, 1, 2, 2, 2}
	for _, isMax := range []bool{false, true} {
		ints, bs := &minMaxIntGroup{minMaxInt{max: isMax}}, &minMaxBytes{max: isMax}
		for range 4 {
			ints.grow()
			bs.grow()
		}
		if err := ints.update(col, rows, grps, nil); err != nil {
			t.Fatal(err)
		}
		if err := bs.update(col, rows, grps, nil); err != nil {
			t.Fatal(err)
		}
		for g := int32(0); g < 4; g++ {
			ri, _ := ints.result(nil, g)
			rb, _ := bs.result(nil, g)
			ei, eb := ints.encode(nil, g), bs.encode(nil, g)
			if !bytes.Equal(ri, rb) || !bytes.Equal(ei, eb) {
				t.Fatalf("max=%v group %d: result %x state %x, minMaxBytes result %x state %x", isMax, g, ri, ei, rb, eb)
			}
			// Each restores the other's state into a fresh group 3 and gives the same result.
			ints.reset(3)
			if rest, err := ints.decode(eb, 3); err != nil || len(rest) != 0 {
				t.Fatalf("decode minMaxBytes' state %x: %v, rest %x", eb, err, rest)
			}
			bs.reset(3)
			if rest, err := bs.decode(ei, 3); err != nil || len(rest) != 0 {
				t.Fatalf("minMaxBytes decodes %x: %v, rest %x", ei, err, rest)
			}
			ri3, _ := ints.result(nil, 3)
			rb3, _ := bs.result(nil, 3)
			if !bytes.Equal(ri3, rb) || !bytes.Equal(rb3, rb) {
				t.Fatalf("max=%v group %d restored: %x and %x, want %x", isMax, g, ri3, rb3, rb)
			}
		}
	}
	// A value of another width is damage, not a value.
	var bad minMaxIntGroup
	bad.grow()
	if _, err := bad.decode([]byte{1, 4, 0, 0, 0, 0}, 0); err == nil {
		t.Fatal("decoded a 4-byte extreme")
	}
}
