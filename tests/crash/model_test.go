package crash

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math/bits"
	"strconv"
	"strings"
	"time"
)

// The reference computed in Go from the datagen connector's definition (docs/connectors.md, and the generator's
// doc comment): row r of a sequence column is start + r*step; row r of a random column is a pure function of
// (seed, column name, r), splitmix64's finalizer over a per-column key. Nothing here runs the engine's code.

const (
	gamma  = 0x9E3779B97F4A7C15
	gamma2 = 0xD1B54A32D192ED03
)

func mix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	return z ^ (z >> 31)
}

// columnKey is the hash key of a generated column's values.
func columnKey(seed int64, column string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(column))
	return mix64(uint64(seed) ^ mix64(h.Sum64()))
}

// randomInt is row r of a random integer column in [lo, hi].
func randomInt(key uint64, row uint64, lo, hi int64) int64 {
	h := mix64(key + row*gamma)
	span := uint64(hi-lo) + 1
	if span != 0 {
		h, _ = bits.Mul64(h, span)
	}
	return lo + int64(h)
}

const alphanumeric = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// randomString is row r of a random VARCHAR column of the given length: alphanumeric characters drawn from 8
// bytes per hash.
func randomString(key uint64, row uint64, length int) string {
	buf := make([]byte, length)
	base := mix64(key + row*gamma)
	for k := 0; k < length; k += 8 {
		h := base
		if k > 0 {
			h = mix64(base + uint64(k/8)*gamma2)
		}
		var word [8]byte
		binary.LittleEndian.PutUint64(word[:], h)
		for w := k; w < min(k+8, length); w++ {
			buf[w] = alphanumeric[int(word[w-k])*len(alphanumeric)>>8]
		}
	}
	return string(buf)
}

// epoch is the event time of row 0.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// genRow is one generated row of the stream ev.
type genRow struct {
	id, tsMs int64 // tsMs: milliseconds since the Unix epoch
	k        int64
	v        int64
	name     string
}

// generate returns the rows of ev for the iteration, in row order.
func (c *iterConfig) generate() []genRow {
	kk, kv, kn := columnKey(c.GenSeed, "k"), columnKey(c.GenSeed, "v"), columnKey(c.GenSeed, "name")
	rows := make([]genRow, c.Rows)
	for r := range rows {
		u := uint64(r)
		rows[r] = genRow{
			id:   int64(r),
			tsMs: epoch.UnixMilli() + int64(r)*c.StepMs,
			k:    randomInt(kk, u, 0, int64(c.Keys-1)),
			v:    randomInt(kv, u, vMin, vMax),
			name: randomString(kn, u, nameLen),
		}
	}
	return rows
}

// pgTimestamp is the Postgres text form of a TIMESTAMP(3): no trailing zeros in the fraction, no fraction when 0.
func pgTimestamp(ms int64) string {
	t := time.UnixMilli(ms).UTC()
	s := t.Format("2006-01-02 15:04:05")
	if frac := ms % 1000; frac != 0 {
		if frac < 0 {
			frac += 1000
		}
		s += strings.TrimRight(fmt.Sprintf(".%03d", frac), "0")
	}
	return s
}

// modelCSV is the CSV sink's expected lines: SELECT id, ts, k, v, name, k * 1000 + v FROM ev WHERE v % 3 <> 0.
func modelCSV(rows []genRow) []string {
	var out []string
	for _, r := range rows {
		if r.v%3 == 0 { // Go's % truncates like SQL's
			continue
		}
		out = append(out, strings.Join([]string{strconv.FormatInt(r.id, 10), pgTimestamp(r.tsMs),
			strconv.FormatInt(r.k, 10), strconv.FormatInt(r.v, 10), r.name, strconv.FormatInt(r.k*1000+r.v, 10)}, ","))
	}
	return out
}

// modelJoin is the self-join sink's expected rows: every pair (x, y) of rows with the same k and
// x.ts <= y.ts <= x.ts + joinMs (a row pairs with itself too), as "x.id,y.id".
func modelJoin(c *iterConfig, rows []genRow) []string {
	byKey := map[int64][]genRow{}
	for _, r := range rows {
		byKey[r.k] = append(byKey[r.k], r) // in row order, so in time order
	}
	var out []string
	for _, rs := range byKey {
		for i, x := range rs {
			for _, y := range rs[i:] {
				if y.tsMs > x.tsMs+c.joinMs() {
					break
				}
				out = append(out, strconv.FormatInt(x.id, 10)+","+strconv.FormatInt(y.id, 10))
			}
		}
	}
	return out
}

// modelUpd is the upsert sink's result once its changelog is applied: per key, COUNT(*) and SUM(v), as "k,n,sum".
func modelUpd(rows []genRow) []string {
	type acc struct{ n, sum int64 }
	per := map[int64]*acc{}
	for _, r := range rows {
		a := per[r.k]
		if a == nil {
			a = &acc{}
			per[r.k] = a
		}
		a.n++
		a.sum += r.v
	}
	var out []string
	for k, a := range per {
		out = append(out, fmt.Sprintf("%d,%d,%d", k, a.n, a.sum))
	}
	return out
}

// applyChangelog folds an upsert sink's rows ("op,col,...") into the rows they leave: +I and +U add a row, -U and
// -D take one away. A row taken away more often than it was added is an error (a change applied twice or lost).
func applyChangelog(c *committed) (*committed, error) {
	count := map[string]int{}
	for _, r := range c.rows {
		op, row, ok := strings.Cut(r, ",")
		if !ok {
			return nil, fmt.Errorf("changelog row %q has no row kind", r)
		}
		switch op {
		case "+I", "+U":
			count[row]++
		case "-U", "-D":
			count[row]--
		default:
			return nil, fmt.Errorf("changelog row %q: unknown row kind", r)
		}
	}
	out := &committed{n: c.n}
	for row, n := range count {
		if n < 0 {
			return nil, fmt.Errorf("row %q retracted %d times more than it was added", row, -n)
		}
		for range n {
			out.rows = append(out.rows, row)
			out.files = append(out.files, "(applied changelog)")
		}
	}
	return out, nil
}

// aggKey is one window of one key.
type aggKey struct{ k, start int64 }

type aggVal struct{ n, sumID, minID, maxID, sumV, minV, maxV int64 }

// modelAgg is the Parquet sink's expected rows: per key and HOP(slide, size) window (TUMBLE when slide = size),
// COUNT(*), SUM/MIN/MAX(id), SUM/MIN/MAX(v), in aggRow's form. Windows are aligned to the Unix epoch, half open.
func modelAgg(c *iterConfig, rows []genRow) []string {
	acc := map[aggKey]*aggVal{}
	slide, size := c.SlideMs, c.SizeMs
	for _, r := range rows {
		last := r.tsMs - ((r.tsMs%slide)+slide)%slide // the latest window start <= ts
		for s := last; s > r.tsMs-size; s -= slide {
			key := aggKey{r.k, s}
			a := acc[key]
			if a == nil {
				a = &aggVal{minID: r.id, maxID: r.id, minV: r.v, maxV: r.v}
				acc[key] = a
			}
			a.n++
			a.sumID += r.id
			a.sumV += r.v
			a.minID, a.maxID = min(a.minID, r.id), max(a.maxID, r.id)
			a.minV, a.maxV = min(a.minV, r.v), max(a.maxV, r.v)
		}
	}
	out := make([]string, 0, len(acc))
	for key, a := range acc {
		out = append(out, aggRow(key.k, key.start, key.start+size, a.n, a.sumID, a.minID, a.maxID, a.sumV, a.minV, a.maxV))
	}
	return out
}

// aggRow is the comparable form of a row of the Parquet sink: its columns in declaration order, timestamps as
// milliseconds since the Unix epoch.
func aggRow(vals ...int64) string {
	parts := make([]string, len(vals))
	for i, v := range vals {
		parts[i] = strconv.FormatInt(v, 10)
	}
	return strings.Join(parts, "|")
}
