package operators

import "github.com/apache/arrow-go/v18/arrow"

// TextRows renders every row of rec in Postgres text form (what psql shows and pgwire's text format sends); a
// NULL is nil. It is the one place results become text, shared by pgwire, `clinksql exec` and the tests.
func TextRows(rec arrow.RecordBatch) ([][]*string, error) {
	n := int(rec.NumRows())
	cols := make([]textColumn, rec.NumCols())
	for j := range cols {
		c, err := newTextColumn(rec.Column(j))
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
			if cols[j].isNull(i) {
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
