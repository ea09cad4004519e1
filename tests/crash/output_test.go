package crash

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/parquet-go/parquet-go"
)

// committed is a sink's committed output: every row in comparable form, with the file it came from.
type committed struct {
	rows  []string
	files []string // files[i] holds rows[i] (base name)
	n     int      // committed files
}

// readCommittedParquet reads every committed Parquet file of a sink (the files directly in dir; staging in
// dir/_staging is not output) with parquet-go, columns matched by name, timestamps as epoch milliseconds.
func readCommittedParquet(dir string, columns []string) (*committed, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.parquet"))
	if err != nil {
		return nil, err
	}
	out := &committed{n: len(paths)}
	for _, path := range paths {
		if err := readParquetFile(path, columns, out); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	return out, nil
}

func readParquetFile(path string, columns []string, out *committed) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		return err
	}
	leaf := map[string]int{}
	for i, p := range pf.Schema().Columns() {
		leaf[strings.Join(p, ".")] = i
	}
	idx := make([]int, len(columns))
	perMs := make([]int64, len(columns)) // timestamps: units per millisecond (the sink may write any unit)
	for i, c := range columns {
		j, ok := leaf[c]
		if !ok {
			return fmt.Errorf("no column %s (file has %v)", c, pf.Schema().Columns())
		}
		idx[i] = j
		if lc, ok := pf.Schema().Lookup(c); ok {
			if lt := lc.Node.Type().LogicalType(); lt != nil && strings.HasPrefix(lt.String(), "TIMESTAMP") {
				switch lts := lt.String(); {
				case strings.Contains(lts, "MILLIS"):
					perMs[i] = 1
				case strings.Contains(lts, "MICROS"):
					perMs[i] = 1000
				case strings.Contains(lts, "NANOS"):
					perMs[i] = 1000_000
				}
			}
		}
	}
	base := filepath.Base(path)
	buf := make([]parquet.Row, 128)
	for _, rg := range pf.RowGroups() {
		rr := parquet.NewRowGroupReader(rg)
		for {
			n, err := rr.ReadRows(buf)
			for _, row := range buf[:n] {
				byLeaf := make(map[int]parquet.Value, len(row))
				for _, v := range row {
					byLeaf[v.Column()] = v
				}
				parts := make([]string, len(columns))
				for i, j := range idx {
					v, ok := byLeaf[j]
					switch {
					case !ok || v.IsNull():
						parts[i] = "NULL"
					case v.Kind() == parquet.Int32:
						parts[i] = strconv.FormatInt(int64(v.Int32()), 10)
					case v.Kind() == parquet.Int64 && perMs[i] > 1:
						ms := v.Int64() / perMs[i]
						if v.Int64()%perMs[i] < 0 {
							ms-- // floor
						}
						parts[i] = strconv.FormatInt(ms, 10)
					case v.Kind() == parquet.Int64:
						parts[i] = strconv.FormatInt(v.Int64(), 10)
					default:
						parts[i] = v.String()
					}
				}
				out.rows = append(out.rows, strings.Join(parts, "|"))
				out.files = append(out.files, base)
			}
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				rr.Close()
				return err
			}
		}
		rr.Close()
	}
	return nil
}

// readCommittedCSV reads every committed CSV file of a sink as lines (re-joined after CSV parsing, so a quoted
// field compares by its value).
func readCommittedCSV(dir string) (*committed, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.csv"))
	if err != nil {
		return nil, err
	}
	out := &committed{n: len(paths)}
	for _, path := range paths {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		r := csv.NewReader(f)
		r.FieldsPerRecord = -1
		recs, err := r.ReadAll()
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		for _, rec := range recs {
			out.rows = append(out.rows, strings.Join(rec, ","))
			out.files = append(out.files, filepath.Base(path))
		}
	}
	return out, nil
}

// readPartitionedCSV reads a CSV sink partitioned by one column: every committed file of every key=<value>/
// directory, the value put back into each row as field at. Every partition must be committed (its _SUCCESS file
// there) once the jobs finished.
func readPartitionedCSV(dir, key string, at int) (*committed, error) {
	parts, err := filepath.Glob(filepath.Join(dir, key+"=*"))
	if err != nil {
		return nil, err
	}
	out := &committed{}
	for _, part := range parts {
		value := strings.TrimPrefix(filepath.Base(part), key+"=")
		if _, err := os.Stat(filepath.Join(part, "_SUCCESS")); err != nil {
			return nil, fmt.Errorf("partition %s is not committed: %w", part, err)
		}
		c, err := readCommittedCSV(part)
		if err != nil {
			return nil, err
		}
		for i, row := range c.rows {
			fields := strings.Split(row, ",")
			fields = append(fields[:at], append([]string{value}, fields[at:]...)...)
			out.rows = append(out.rows, strings.Join(fields, ","))
			out.files = append(out.files, filepath.Base(part)+"/"+c.files[i])
		}
		out.n += c.n
	}
	return out, nil
}

// diff compares committed rows with the expected multiset. It returns "" when they are equal, else a report: how
// many rows were lost, duplicated and unexpected, with examples (a duplicated row names the files that hold it,
// whose names carry the subtask and the checkpoint id).
func diff(got *committed, want []string) string {
	count := map[string]int{}
	for _, w := range want {
		count[w]++
	}
	where := map[string][]string{}
	for i, g := range got.rows {
		count[g]--
		where[g] = append(where[g], got.files[i])
	}
	var lost, dup, extra []string
	nLost, nDup, nExtra := 0, 0, 0
	keys := make([]string, 0, len(count))
	for k := range count {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		c := count[k]
		switch {
		case c > 0:
			nLost += c
			if len(lost) < 8 {
				lost = append(lost, k)
			}
		case c < 0 && len(where[k]) > -c:
			nDup += -c
			if len(dup) < 8 {
				dup = append(dup, fmt.Sprintf("%s (x%d, in %s)", k, len(where[k]), strings.Join(where[k], " ")))
			}
		case c < 0:
			nExtra += -c
			if len(extra) < 8 {
				extra = append(extra, fmt.Sprintf("%s (in %s)", k, strings.Join(where[k], " ")))
			}
		}
	}
	if nLost+nDup+nExtra == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d rows committed in %d files, %d expected: %d lost, %d duplicated, %d unexpected",
		len(got.rows), got.n, len(want), nLost, nDup, nExtra)
	for _, s := range lost {
		fmt.Fprintf(&b, "\n  lost: %s", s)
	}
	for _, s := range dup {
		fmt.Fprintf(&b, "\n  duplicated: %s", s)
	}
	for _, s := range extra {
		fmt.Fprintf(&b, "\n  unexpected: %s", s)
	}
	return b.String()
}
