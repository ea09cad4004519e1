package connectors

import (
	"fmt"
	"testing"
)

func TestStridedRest(t *testing.T) {
	sizes := []int64{1, 10, 100, 1000, 10000}
	rest := StridedRest(len(sizes), 2, func(i int) int64 { return sizes[i] })
	if got, want := fmt.Sprint(rest), "[10101 1010 10100 1000 10000 0 0]"; got != want {
		t.Errorf("stride 2: %s, want %s", got, want)
	}
	// An unknown size (-1) makes what is left before it on its stride unknown, not what is after it or on another.
	sizes[2] = -1
	rest = StridedRest(len(sizes), 2, func(i int) int64 { return sizes[i] })
	if got, want := fmt.Sprint(rest), "[-1 1010 -1 1000 10000 0 0]"; got != want {
		t.Errorf("stride 2, size 2 unknown: %s, want %s", got, want)
	}
}
