package textform

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
)

// Row renders rows one at a time as a CSV line or a JSON object in the text forms: the CSV and JSON-lines file
// sinks write its rows followed by '\n', and a Kafka sink makes each one a record's key or value. Bind a batch's
// columns, Append each row, Unbind before the batch is released.
type Row struct {
	json    bool
	keys    [][]byte // JSON: `{"a":` then `,"b":` ...
	cols    []Column
	scratch []byte
}

// NewRow returns the renderer of rows of schema in format "csv" (RFC 4180: NULL is an empty field, an empty string
// is "") or "json" (an object with the columns as keys in order, NULL as null, numbers and booleans as JSON values,
// everything else - timestamps, dates, intervals, bytea - as a string in its text form; NaN and ±Infinity, which
// JSON numbers cannot spell, as strings, as Postgres' to_json prints them). Every column must have a text form.
func NewRow(format string, schema *arrow.Schema) (*Row, error) {
	r := &Row{}
	switch format {
	case "csv":
	case "json":
		r.json = true
		for i, f := range schema.Fields() {
			sep := byte(',')
			if i == 0 {
				sep = '{'
			}
			k := AppendJSONString([]byte{sep}, []byte(f.Name))
			r.keys = append(r.keys, append(k, ':'))
		}
	default:
		return nil, fmt.Errorf("unknown text format %q (want csv or json)", format)
	}
	for _, f := range schema.Fields() {
		if err := CheckType(f.Type); err != nil {
			return nil, fmt.Errorf("column %s: %w", f.Name, err)
		}
	}
	return r, nil
}

// Bind takes the columns of the next rows, one per field of the schema, in order.
func (r *Row) Bind(cols []arrow.Array) error {
	r.cols = r.cols[:0]
	for _, arr := range cols {
		c, err := NewColumn(arr)
		if err != nil {
			return err
		}
		r.cols = append(r.cols, c)
	}
	return nil
}

// Unbind drops the references to the bound columns.
func (r *Row) Unbind() {
	clear(r.cols)
	r.cols = r.cols[:0]
}

// Append appends the text of row i of the bound columns to dst, without a line end.
func (r *Row) Append(dst []byte, i int) []byte {
	if r.json {
		return r.appendJSON(dst, i)
	}
	for c := range r.cols {
		col := &r.cols[c]
		if c > 0 {
			dst = append(dst, ',')
		}
		if col.IsNull(i) {
			continue
		}
		if col.class == String {
			r.scratch = col.text(r.scratch[:0], i)
			dst = AppendCSVField(dst, r.scratch)
		} else {
			dst = col.text(dst, i)
		}
	}
	return dst
}

func (r *Row) appendJSON(dst []byte, i int) []byte {
	if len(r.cols) == 0 {
		dst = append(dst, '{')
	}
	for c := range r.cols {
		col := &r.cols[c]
		dst = append(dst, r.keys[c]...)
		if col.IsNull(i) {
			dst = append(dst, "null"...)
			continue
		}
		switch col.class {
		case Number:
			dst = col.text(dst, i)
		case Bool:
			if col.bools.Value(i) {
				dst = append(dst, "true"...)
			} else {
				dst = append(dst, "false"...)
			}
		case Float:
			start := len(dst)
			dst = col.text(dst, i)
			if last := dst[len(dst)-1]; last < '0' || last > '9' { // NaN, Infinity
				r.scratch = append(r.scratch[:0], dst[start:]...)
				dst = AppendJSONString(dst[:start], r.scratch)
			}
		default:
			r.scratch = col.text(r.scratch[:0], i)
			dst = AppendJSONString(dst, r.scratch)
		}
	}
	return append(dst, '}')
}
