package textform

import (
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
)

// Rows renders every row of rec in Postgres text form (what psql shows and pgwire's text format sends); a
// NULL is nil. It is the one place results become text, shared by pgwire, `clinksql exec` and the tests.
func Rows(rec arrow.RecordBatch) ([][]*string, error) { return RowsIn(rec, time.UTC) }

// RowsIn is Rows with TIMESTAMP WITH TIME ZONE values in loc.
func RowsIn(rec arrow.RecordBatch, loc *time.Location) ([][]*string, error) {
	n := int(rec.NumRows())
	cols := make([]Column, rec.NumCols())
	for j := range cols {
		c, err := NewColumnIn(rec.Column(j), loc)
		if err != nil {
			return nil, err
		}
		cols[j] = c
	}
	rows := make([][]*string, n)
	var buf []byte
	for i := range n {
		row := make([]*string, len(cols))
		for j := range cols {
			if cols[j].IsNull(i) {
				continue
			}
			buf = cols[j].text(buf[:0], i)
			s := string(buf)
			row[j] = &s
		}
		rows[i] = row
	}
	return rows, nil
}

// RowKey is a map key of a row in text form (Rows): equal rows, NULLs included, give equal keys. Folding a
// changelog uses it to match a retraction with the row it retracts.
func RowKey(row []*string) string {
	var sb strings.Builder
	for _, v := range row {
		if v == nil {
			sb.WriteString("\x00N")
		} else {
			sb.WriteString("\x00V")
			sb.WriteString(*v)
		}
	}
	return sb.String()
}
