package join

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clinksql/clinksql/state"
)

// TestFreshBuf: rows of every size come back as they went in, across blocks, a row longer than a block, and reuse
// after reset.
func TestFreshBuf(t *testing.T) {
	var f freshBuf
	for round := range 2 {
		var offs []int32
		var rows [][]byte
		for i := range 3000 {
			n := (i * 977) % 2000
			if i%1000 == 999 {
				n = freshBlock + 123 // longer than a block
			}
			row := bytes.Repeat([]byte{byte(i), byte(round)}, n/2+1)
			offs = append(offs, f.add(row))
			rows = append(rows, row)
		}
		for i, row := range rows {
			if got := f.get(offs[i], int32(len(row))); !bytes.Equal(got, row) {
				t.Fatalf("round %d row %d: got %d bytes, want %d", round, i, len(got), len(row))
			}
		}
		f.reset()
		if len(f.blocks) != 0 || len(f.spare) == 0 {
			t.Fatalf("reset kept %d blocks and %d spare", len(f.blocks), len(f.spare))
		}
	}
}

// TestKeyedKeyLayout: the keys the regular join builds itself are state.KeyedKey's.
func TestKeyedKeyLayout(t *testing.T) {
	for _, kg := range []int{0, 1, 300, 0xFFFE} {
		want := state.KeyedKey(kg, chunkStateID+1, append([]byte{0, 0, 0, 9}, "key"...))
		if got := chunkKey(kg, 1, 9, "key"); !bytes.Equal(got, want) {
			t.Fatalf("chunkKey(%d) = %x, want %x", kg, got, want)
		}
	}
}

// TestTakeColumn: the typed takes equal arrow's take kernel, NULLs and -1 indices included, and leak nothing.
func TestTakeColumn(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	sb := array.NewStringBuilder(mem)
	ib := array.NewInt64Builder(mem)
	for i := range 50 {
		if i%7 == 3 {
			sb.AppendNull()
			ib.AppendNull()
			continue
		}
		sb.Append(strings.Repeat("x", i%5) + strconv.Itoa(i))
		ib.Append(int64(i * 3))
	}
	strs, ints := sb.NewArray(), ib.NewArray()
	sb.Release()
	ib.Release()
	defer strs.Release()
	defer ints.Release()
	for _, arr := range []arrow.Array{strs, ints, array.NewSlice(strs, 5, 40), array.NewSlice(ints, 5, 40)} {
		idx := []int32{0, 3, -1, 10, 10, 2, -1, 24, 1}
		got, ok := takeColumn(mem, arr, idx)
		if !ok {
			t.Fatalf("%s: not taken", arr.DataType())
		}
		for k, i := range idx {
			switch {
			case i < 0 || arr.IsNull(int(i)):
				if got.IsValid(k) {
					t.Fatalf("%s: row %d is %s, want NULL", arr.DataType(), k, got.ValueStr(k))
				}
			case !got.IsValid(k) || got.ValueStr(k) != arr.ValueStr(int(i)):
				t.Fatalf("%s: row %d is %s, want %s", arr.DataType(), k, got.ValueStr(k), arr.ValueStr(int(i)))
			}
		}
		got.Release()
		if arr != strs && arr != ints {
			arr.Release()
		}
	}
}
