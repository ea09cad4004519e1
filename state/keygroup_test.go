package state

import "testing"

// A restore must route every key to the key group that holds its state: RangeOf and SubtaskOf must agree for every
// parallelism, or a key's state would be owned by one subtask while its rows go to another.
func TestRangeOfInvertsSubtaskOf(t *testing.T) {
	for _, groups := range []int{1, 7, 128} {
		for p := 1; p <= groups && p <= 16; p++ {
			for kg := 0; kg < groups; kg++ {
				sub := SubtaskOf(kg, groups, p)
				if !RangeOf(sub, groups, p).Contains(kg) {
					t.Fatalf("groups=%d p=%d: kg %d -> subtask %d whose range %v misses it", groups, p, kg, sub, RangeOf(sub, groups, p))
				}
			}
		}
	}
}

// The key hash is part of the on-disk format: a changed hash would silently misroute restored keys.
func TestHashKeyIsStable(t *testing.T) {
	if HashKey([]byte("a")) == HashKey([]byte("b")) {
		t.Fatal("distinct keys hash equal")
	}
	// xxhash64 of the empty input is a published constant.
	if got := HashKey(nil); got != 0xef46db3751d8e999 {
		t.Fatalf("HashKey(empty) = %#x, want xxhash64 constant 0xef46db3751d8e999", got)
	}
}
