package exec_test

import (
	"math"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/state"
)

// Keys that compare equal hash equal, so they meet on one subtask: -0 and +0, and NaNs of any payload (the
// keyed operators' canonical bytes treat each as one key); distinct values do not collide here.
func TestHashKeysFloatsCanonical(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	otherNaN := math.Float64frombits(0x7ff8000000000abc)
	vals := []float64{0, math.Copysign(0, -1), math.NaN(), otherNaN, 1.5}
	b := array.NewFloat64Builder(mem)
	b.AppendValues(vals, nil)
	col := b.NewArray()
	b.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: "f", Type: arrow.PrimitiveTypes.Float64}}, nil)
	rec := array.NewRecordBatch(schema, []arrow.Array{col}, int64(len(vals)))
	col.Release()
	defer rec.Release()
	h, err := exec.HashKeys(rec, []int{0}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if h[0] != h[1] {
		t.Errorf("0 and -0 hash apart: %x %x", h[0], h[1])
	}
	if h[2] != h[3] {
		t.Errorf("two NaNs hash apart: %x %x", h[2], h[3])
	}
	if h[0] == h[2] || h[0] == h[4] || h[2] == h[4] {
		t.Errorf("distinct keys collide: %x", h)
	}
}

// The fast paths of HashKeys (first column, no NULLs) hash as the general path does: CombineHash from 0.
func TestHashKeysFastPathsMatchCombine(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	vals := []int64{0, 1, -1, 42, math.MaxInt64, math.MinInt64}
	b := array.NewInt64Builder(mem)
	b.AppendValues(vals, nil)
	col := b.NewArray()
	b.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64}, {Name: "b", Type: arrow.PrimitiveTypes.Int64}}, nil)
	rec := array.NewRecordBatch(schema, []arrow.Array{col, col}, int64(len(vals)))
	col.Release()
	defer rec.Release()
	one, err := exec.HashKeys(rec, []int{0}, nil)
	if err != nil {
		t.Fatal(err)
	}
	two, err := exec.HashKeys(rec, []int{0, 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vals {
		h := state.CombineHash(0, state.MixInt64(uint64(v)))
		if one[i] != h {
			t.Errorf("row %d: one key hashes to %x, want %x", i, one[i], h)
		}
		if want := state.CombineHash(h, state.MixInt64(uint64(v))); two[i] != want {
			t.Errorf("row %d: two keys hash to %x, want %x", i, two[i], want)
		}
	}

	// Strings without NULLs, whole and sliced (the offsets of a slice start past 0), first and second column;
	// runs of equal values (hashed once a run) next to values of the same length that differ.
	sb := array.NewStringBuilder(mem)
	strs := []string{"", "a", "channel-1", "", "2026-01-01", "2026-01-01", "2026-01-01", "2026-01-02", "2026-01-02",
		"2026-02-01", "xyz", "xyz", "xyy", "", ""}
	sb.AppendValues(strs, nil)
	whole := sb.NewArray()
	sb.Release()
	defer whole.Release()
	sliced := array.NewSlice(whole, 2, int64(len(strs)))
	defer sliced.Release()
	sschema := arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.BinaryTypes.String}, {Name: "t", Type: arrow.BinaryTypes.String}}, nil)
	for _, tc := range []struct {
		col  arrow.Array
		vals []string
	}{{whole, strs}, {sliced, strs[2:]}} {
		srec := array.NewRecordBatch(sschema, []arrow.Array{tc.col, tc.col}, int64(len(tc.vals)))
		got, err := exec.HashKeys(srec, []int{0, 1}, nil)
		srec.Release()
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range tc.vals {
			h := state.CombineHash(0, state.HashKey([]byte(v)))
			if want := state.CombineHash(h, state.HashKey([]byte(v))); got[i] != want {
				t.Errorf("string %q (row %d of %d): hashes to %x, want %x", v, i, len(tc.vals), got[i], want)
			}
		}
	}
}

// A string key column hashes each row as state.HashKey of its value, whichever path it takes: every row one value
// (hashed once), runs of equal values, values of one length that differ (which the one-value check must not take
// for one), empty strings, and a slice of a larger array (offsets not starting at 0).
func TestHashKeysStringRunsMatchPerRow(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	schema := arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.BinaryTypes.String}}, nil)
	for _, vals := range [][]string{
		{"2026-01-01", "2026-01-01", "2026-01-01", "2026-01-01"},
		{"2026-01-01", "2026-01-01", "2026-01-02", "2026-01-02"},
		{"ab", "ba", "ab", "ba"},
		{"aa", "aa", "a", "aaa"},
		{"abab", "abab", "ab", "ab"},
		{"", "", ""},
		{"x"},
	} {
		b := array.NewStringBuilder(mem)
		b.AppendValues(append([]string{"pad", "pad!"}, vals...), nil)
		full := b.NewArray()
		b.Release()
		col := array.NewSlice(full, 2, int64(2+len(vals)))
		full.Release()
		rec := array.NewRecordBatch(schema, []arrow.Array{col}, int64(len(vals)))
		col.Release()
		h, err := exec.HashKeys(rec, []int{0}, nil)
		rec.Release()
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range vals {
			if want := state.CombineHash(0, state.HashKey([]byte(v))); h[i] != want {
				t.Errorf("%q row %d: hash %x, want %x", vals, i, h[i], want)
			}
		}
	}
}
