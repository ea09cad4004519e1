package join

import (
	"bytes"
	"testing"

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

// TestFreshLog: records come back by index and block by block, across blocks, and after a reset that keeps some
// blocks for reuse.
func TestFreshLog(t *testing.T) {
	var l freshLog
	for round, n := range []int{3*freshLogBlock + 17, freshLogBlock + 1, 5} {
		for i := range n {
			if got := l.add(freshRec{off: int32(i), ent: int32(round)}); got != int32(i+1) {
				t.Fatalf("round %d: add %d returned %d", round, i, got)
			}
		}
		for i := range n {
			if r := l.at(int32(i)); r.off != int32(i) || r.ent != int32(round) {
				t.Fatalf("round %d: record %d is %+v", round, i, r)
			}
		}
		k := 0
		for b := range l.blocks {
			for _, r := range l.block(b) {
				if r.off != int32(k) {
					t.Fatalf("round %d: record %d in block order is %+v", round, k, r)
				}
				k++
			}
		}
		if k != n {
			t.Fatalf("round %d: %d records in blocks, want %d", round, k, n)
		}
		l.reset(2 * freshLogBlock)
		if l.n != 0 || len(l.blocks) != 0 || cap(l.blocks) > 2 {
			t.Fatalf("round %d: reset left n %d, %d blocks, cap %d", round, l.n, len(l.blocks), cap(l.blocks))
		}
	}
}
