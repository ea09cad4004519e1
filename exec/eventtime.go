package exec

import (
	"cmp"
	"math"
	"slices"
)

// Event-time arithmetic the windowed and interval operators share. Times and watermarks are int64 microseconds;
// MinWatermark and MaxWatermark are the ends of the line.

// AddSat is a + b saturating at the ends of int64 (a window end past the last instant, a bound before the first).
func AddSat(a, b int64) int64 {
	if s := a + b; (s > a) == (b > 0) {
		return s
	}
	if b > 0 {
		return math.MaxInt64
	}
	return math.MinInt64
}

// WindowID names a window [Start, End).
type WindowID struct{ Start, End int64 }

// Windowed is a window's per-window state, in a map by WindowID.
type Windowed interface{ Window() WindowID }

// DueWindows appends the windows of m that the watermark wm fires (end <= wm) to due, ordered by end then start,
// and returns them with the smallest end of the others (MaxInt64 when there is none).
func DueWindows[W Windowed](m map[WindowID]W, wm int64, due []W) ([]W, int64) {
	next := int64(math.MaxInt64)
	for id, w := range m {
		if id.End <= wm {
			due = append(due, w)
		} else {
			next = min(next, id.End)
		}
	}
	slices.SortFunc(due, func(a, b W) int {
		x, y := a.Window(), b.Window()
		return cmp.Or(cmp.Compare(x.End, y.End), cmp.Compare(x.Start, y.Start))
	})
	return due, next
}
