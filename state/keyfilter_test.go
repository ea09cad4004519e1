package state

import (
	"encoding/binary"
	"testing"
)

// The filter never rejects a key it was given, across its generations, and rejects most keys it was not given.
func TestKeyFilterNoFalseNegatives(t *testing.T) {
	f := newKeyFilter()
	const n = 3 * filterFirstKeys // spans two generations
	key := func(i int) []byte { return binary.BigEndian.AppendUint64([]byte{0, 1, 1}, uint64(i)) }
	add, done := f.adder()
	for i := 0; i < n; i += 2 {
		add(key(i))
	}
	done()
	if gens := len(f.gens); gens != 2 {
		t.Fatalf("%d generations, want 2", gens)
	}
	fp := 0
	for i := 0; i < n; i++ {
		ok := f.mayContain(key(i))
		if i%2 == 0 && !ok {
			t.Fatalf("key %d added but rejected", i)
		}
		if i%2 == 1 && ok {
			fp++
		}
	}
	if rate := float64(fp) / (n / 2); rate > 0.005 {
		t.Fatalf("false positive rate %.3f", rate)
	}
}
