package state

import (
	"fmt"
	"path/filepath"
	"testing"
)

// TestBatchReserve: values reserved and filled in after later writes (which move the batch's buffer) land as Puts,
// in write order with the Puts and Deletes around them, on both backends.
func TestBatchReserve(t *testing.T) {
	for _, name := range []string{"memory", "pebble"} {
		t.Run(name, func(t *testing.T) {
			var b Backend
			var err error
			if name == "memory" {
				b, err = OpenMemory(Options{})
			} else {
				b, err = OpenPebble(Options{Dir: filepath.Join(t.TempDir(), "db")})
			}
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			b.Put([]byte("gone"), []byte("x"))
			wb := NewBatch(0, 0)
			offs := map[string]int{}
			for i := range 100 {
				k := fmt.Sprintf("k%03d", i)
				switch i % 3 {
				case 0:
					offs[k] = wb.Reserve([]byte(k), len(k)+1)
				case 1:
					wb.Put([]byte(k), []byte("put"))
				default:
					wb.Delete([]byte(k))
				}
			}
			wb.Delete([]byte("gone"))
			wb.Put([]byte("k000"), []byte("later")) // a later write of a reserved key wins
			for k, off := range offs {
				v := wb.Value(off, len(k)+1)
				copy(v, k)
				v[len(k)] = '!'
			}
			WriteBatch(b, wb)
			for i := range 100 {
				k := fmt.Sprintf("k%03d", i)
				v, ok, err := b.Get([]byte(k))
				if err != nil {
					t.Fatal(err)
				}
				want, wok := k+"!", true
				switch {
				case i == 0:
					want = "later"
				case i%3 == 1:
					want = "put"
				case i%3 == 2:
					want, wok = "", false
				}
				if ok != wok || string(v) != want {
					t.Fatalf("%s = %q,%v; want %q,%v", k, v, ok, want, wok)
				}
			}
			if _, ok, _ := b.Get([]byte("gone")); ok {
				t.Fatal("deleted key still there")
			}
		})
	}
}
