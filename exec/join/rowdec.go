package join

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/clinksql/clinksql/exec/rowcodec"
)

// rowDecoder decodes canonical row bytes (rowcodec.Encoding with NULL markers, as rowcodec's DecodeKey reads them)
// into builders bound once: the common column types are appended through their concrete builders, without the
// type switches DecodeKey does per value.
type rowDecoder struct {
	cols []colDecoder
}

type colDecoder struct {
	kind uint8
	i64  *array.Int64Builder
	ts   *array.TimestampBuilder
	b    array.Builder
	t    arrow.DataType
}

const (
	decGeneric uint8 = iota
	decInt64
	decTimestamp
)

func newRowDecoder(enc *rowcodec.Encoding, bs []array.Builder) rowDecoder {
	d := rowDecoder{cols: make([]colDecoder, len(enc.Types))}
	for c, t := range enc.Types {
		cd := colDecoder{b: bs[c], t: t}
		switch b := bs[c].(type) {
		case *array.Int64Builder:
			if t.ID() == arrow.INT64 {
				cd.kind, cd.i64 = decInt64, b
			}
		case *array.TimestampBuilder:
			if t.ID() == arrow.TIMESTAMP {
				cd.kind, cd.ts = decTimestamp, b
			}
		}
		d.cols[c] = cd
	}
	return d
}

// decode appends one row.
func (d *rowDecoder) decode(row []byte) error {
	for c := range d.cols {
		cd := &d.cols[c]
		if len(row) == 0 {
			return rowcodec.ErrState
		}
		null := row[0] == 0
		row = row[1:]
		if null {
			cd.b.AppendNull()
			continue
		}
		switch cd.kind {
		case decInt64:
			if len(row) < 8 {
				return rowcodec.ErrState
			}
			cd.i64.Append(rowcodec.OrderedInt(row))
			row = row[8:]
		case decTimestamp:
			if len(row) < 8 {
				return rowcodec.ErrState
			}
			cd.ts.Append(arrow.Timestamp(rowcodec.OrderedInt(row)))
			row = row[8:]
		default:
			var err error
			if row, err = rowcodec.DecodeValue(cd.b, cd.t, row); err != nil {
				return err
			}
		}
	}
	if len(row) != 0 {
		return fmt.Errorf("join: %d stray bytes after a row", len(row))
	}
	return nil
}
