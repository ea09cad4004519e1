package textform

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// Row renders rows one at a time as a CSV line or a JSON object in the text forms: the CSV and JSON-lines file
// sinks write its rows followed by '\n', and a Kafka sink makes each one a record's key or value. Bind a batch's
// columns, Append each row, Unbind before the batch is released.
type Row struct {
	json    bool
	keys    [][]byte // JSON: `{"a":` then `,"b":` ...
	cols    []Column
	nested  []*jsonNested // JSON: per column, its tree when nested, else nil
	scratch []byte
}

// NewRow returns the renderer of rows of schema in format "csv" (RFC 4180: NULL is an empty field, an empty string
// is "") or "json" (an object with the columns as keys in order, NULL as null, numbers and booleans as JSON values,
// everything else - timestamps, dates, intervals, bytea - as a string in its text form; NaN and ±Infinity, which
// JSON numbers cannot spell, as strings, as Postgres' to_json prints them; a ROW as an object of its fields, an
// ARRAY as an array, a MAP as an object keyed by its keys' text, their parts by the same rules, as to_json does).
// Every column must have a text form.
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
	r.cols, r.nested = r.cols[:0], r.nested[:0]
	for _, arr := range cols {
		c, err := NewColumn(arr)
		if err != nil {
			return err
		}
		r.cols = append(r.cols, c)
		var n *jsonNested
		if r.json && nestedJSON(arr) {
			if n, err = newJSONNested(arr); err != nil {
				return err
			}
		}
		r.nested = append(r.nested, n)
	}
	return nil
}

// Unbind drops the references to the bound columns.
func (r *Row) Unbind() {
	clear(r.cols)
	clear(r.nested)
	r.cols, r.nested = r.cols[:0], r.nested[:0]
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
		if n := r.nested[c]; n != nil {
			dst = r.appendJSONNested(dst, n, i)
			continue
		}
		dst = r.appendJSONLeaf(dst, col, i)
	}
	return append(dst, '}')
}

// appendJSONLeaf appends element i (not NULL) of a column of a scalar type as a JSON value.
func (r *Row) appendJSONLeaf(dst []byte, col *Column, i int) []byte {
	switch col.class {
	case Number:
		return col.text(dst, i)
	case Bool:
		if col.bools.Value(i) {
			return append(dst, "true"...)
		}
		return append(dst, "false"...)
	case Float:
		start := len(dst)
		dst = col.text(dst, i)
		if last := dst[len(dst)-1]; last < '0' || last > '9' { // NaN, Infinity
			r.scratch = append(r.scratch[:0], dst[start:]...)
			dst = AppendJSONString(dst[:start], r.scratch)
		}
		return dst
	}
	r.scratch = col.text(r.scratch[:0], i)
	return AppendJSONString(dst, r.scratch)
}

// jsonNested is a nested column (or a part of one) bound for JSON: a leaf's Column, or a ROW's, ARRAY's or MAP's
// parts.
type jsonNested struct {
	arr   arrow.Array
	leaf  *Column
	list  array.ListLike // ARRAY and MAP: the offsets
	names [][]byte       // ROW: `"name":` per field
	kids  []*jsonNested  // ROW: the fields; ARRAY: the elements; MAP: the keys and the values
	isMap bool
}

func nestedJSON(arr arrow.Array) bool {
	switch arr.(type) {
	case *array.Struct, *array.List, *array.LargeList, *array.Map:
		return true
	}
	return false
}

func newJSONNested(arr arrow.Array) (*jsonNested, error) {
	n := &jsonNested{arr: arr}
	var parts []arrow.Array
	switch a := arr.(type) {
	case *array.Struct:
		st := a.DataType().(*arrow.StructType)
		for k := 0; k < a.NumField(); k++ {
			n.names = append(n.names, append(AppendJSONString(nil, []byte(st.Field(k).Name)), ':'))
			parts = append(parts, a.Field(k))
		}
	case *array.Map:
		n.list, n.isMap, parts = a, true, []arrow.Array{a.Keys(), a.Items()}
	case *array.List:
		n.list, parts = a, []arrow.Array{a.ListValues()}
	case *array.LargeList:
		n.list, parts = a, []arrow.Array{a.ListValues()}
	default:
		c, err := NewColumn(arr)
		if err != nil {
			return nil, err
		}
		n.leaf = &c
		return n, nil
	}
	for _, p := range parts {
		k, err := newJSONNested(p)
		if err != nil {
			return nil, err
		}
		n.kids = append(n.kids, k)
	}
	return n, nil
}

// appendJSONNested appends element i of n as a JSON value.
func (r *Row) appendJSONNested(dst []byte, n *jsonNested, i int) []byte {
	if n.arr.IsNull(i) {
		return append(dst, "null"...)
	}
	switch {
	case n.leaf != nil:
		return r.appendJSONLeaf(dst, n.leaf, i)
	case n.names != nil || n.list == nil: // a ROW (of no fields, too)
		dst = append(dst, '{')
		for k, kid := range n.kids {
			if k > 0 {
				dst = append(dst, ',')
			}
			dst = r.appendJSONNested(append(dst, n.names[k]...), kid, i)
		}
		return append(dst, '}')
	case n.isMap:
		lo, hi := n.list.ValueOffsets(i)
		dst = append(dst, '{')
		for j := int(lo); j < int(hi); j++ {
			if j > int(lo) {
				dst = append(dst, ',')
			}
			r.scratch = n.kids[0].leafText(r.scratch[:0], j)
			dst = append(AppendJSONString(dst, r.scratch), ':')
			dst = r.appendJSONNested(dst, n.kids[1], j)
		}
		return append(dst, '}')
	}
	lo, hi := n.list.ValueOffsets(i)
	dst = append(dst, '[')
	for j := int(lo); j < int(hi); j++ {
		if j > int(lo) {
			dst = append(dst, ',')
		}
		dst = r.appendJSONNested(dst, n.kids[0], j)
	}
	return append(dst, ']')
}

// leafText appends the text form of a map key (keys are never NULL): a scalar's text, a nested key's Postgres
// text.
func (n *jsonNested) leafText(dst []byte, j int) []byte {
	if n.leaf != nil {
		return n.leaf.text(dst, j)
	}
	c, err := NewColumn(n.arr)
	if err != nil {
		return dst
	}
	return c.text(dst, j)
}
