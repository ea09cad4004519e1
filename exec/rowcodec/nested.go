package rowcodec

import (
	"encoding/binary"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// Canonical bytes of nested values (ROW, ARRAY, MAP), built from the bytes of their parts:
//
//	struct (ROW)    per field in order: 0x00 for NULL, else 0x01 then the field's value
//	list (ARRAY)    uvarint element count, then per element 0x00 for NULL or 0x01 and the element's value
//	map (MAP)       uvarint entry count, then per entry in the map's order: the key (0x00 or 0x01 and the value,
//	                as list elements) then the value (the same)
//
// Every part is self-delimiting, so equal values have equal bytes and unequal ones unequal bytes (a NULL element
// is equal to a NULL element, as GROUP BY has it); key bytes make a float anywhere inside -0 = 0 and one NaN, as at
// the top. The bytes do not sort like the values (a count comes before the elements): a nested column can be kept
// and grouped by, never ordered by.

// Nested reports whether t is a nested type (struct, list or map).
func Nested(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.STRUCT, arrow.LIST, arrow.LARGE_LIST, arrow.MAP:
		return true
	}
	return false
}

// nestedRowType reports whether every leaf of the nested type t is a RowType.
func nestedRowType(t arrow.DataType) bool {
	switch t := t.(type) {
	case *arrow.StructType:
		for _, f := range t.Fields() {
			if !RowType(f.Type) {
				return false
			}
		}
		return true
	case *arrow.MapType: // before ListLike: a map is a list of entries
		return RowType(t.KeyType()) && RowType(t.ItemType())
	case *arrow.ListType:
		return RowType(t.Elem())
	case *arrow.LargeListType:
		return RowType(t.Elem())
	}
	return false
}

// GroupKeyType reports whether values of t can be a GROUP BY or PARTITION BY key, compared by their canonical key
// bytes: a KeyType, or a nested type of RowTypes (two ROWs, ARRAYs or MAPs are one key when their parts are equal,
// NULL parts equal to NULL parts, as Postgres groups arrays and records). A join key stays a KeyType: Postgres'
// `=` on records with a NULL field is NULL, not a match.
func GroupKeyType(t arrow.DataType) bool {
	return KeyType(t) || (Nested(t) && nestedRowType(t))
}

// partAppender appends element i of one array, NULL or not, with its marker.
type partAppender func(dst []byte, i int) []byte

func newPartAppender(arr arrow.Array, exact bool) (partAppender, error) {
	var scratch []int64
	app, err := NewValueAppender(arr, &scratch, exact)
	if err != nil {
		return nil, err
	}
	if arr.NullN() == 0 {
		return func(dst []byte, i int) []byte { return app(append(dst, 1), i) }, nil
	}
	return func(dst []byte, i int) []byte {
		if arr.IsNull(i) {
			return append(dst, 0)
		}
		return app(append(dst, 1), i)
	}, nil
}

// newNestedAppender is NewValueAppender's case for nested arrays, or nil for other types.
func newNestedAppender(arr arrow.Array, exact bool) (ValueAppender, error) {
	switch a := arr.(type) {
	case *array.Struct:
		parts := make([]partAppender, a.NumField())
		for k := range parts {
			var err error
			if parts[k], err = newPartAppender(a.Field(k), exact); err != nil {
				return nil, err
			}
		}
		return func(dst []byte, i int) []byte {
			for _, p := range parts {
				dst = p(dst, i)
			}
			return dst
		}, nil
	case *array.Map: // before List: a Map is one
		key, err := newPartAppender(a.Keys(), exact)
		if err != nil {
			return nil, err
		}
		item, err := newPartAppender(a.Items(), exact)
		if err != nil {
			return nil, err
		}
		return func(dst []byte, i int) []byte {
			lo, hi := a.ValueOffsets(i)
			dst = binary.AppendUvarint(dst, uint64(hi-lo))
			for j := int(lo); j < int(hi); j++ {
				dst = item(key(dst, j), j)
			}
			return dst
		}, nil
	case *array.List, *array.LargeList:
		l := arr.(array.ListLike)
		elem, err := newPartAppender(l.ListValues(), exact)
		if err != nil {
			return nil, err
		}
		return func(dst []byte, i int) []byte {
			lo, hi := l.ValueOffsets(i)
			dst = binary.AppendUvarint(dst, uint64(hi-lo))
			for j := int(lo); j < int(hi); j++ {
				dst = elem(dst, j)
			}
			return dst
		}, nil
	}
	return nil, nil
}

// decodePart appends one marked part (0x00 for NULL, or 0x01 and the value) to b.
func decodePart(b array.Builder, t arrow.DataType, src []byte) ([]byte, error) {
	if len(src) == 0 {
		return nil, ErrState
	}
	if src[0] == 0 {
		b.AppendNull()
		return src[1:], nil
	}
	return DecodeValue(b, t, src[1:])
}

// decodeNested is DecodeValue's case for nested types; ok is false for other builders.
func decodeNested(b array.Builder, t arrow.DataType, src []byte) (rest []byte, ok bool, err error) {
	switch b := b.(type) {
	case *array.StructBuilder:
		st, isStruct := t.(*arrow.StructType)
		if !isStruct || st.NumFields() != b.NumField() {
			return nil, true, fmt.Errorf("rowcodec: a %s decoded into a struct builder", t)
		}
		b.Append(true)
		for k, f := range st.Fields() {
			if src, err = decodePart(b.FieldBuilder(k), f.Type, src); err != nil {
				return nil, true, err
			}
		}
		return src, true, nil
	case *array.MapBuilder:
		mt, isMap := t.(*arrow.MapType)
		if !isMap {
			return nil, true, fmt.Errorf("rowcodec: a %s decoded into a map builder", t)
		}
		n, src, err := GetUvarint(src)
		if err != nil || n > uint64(len(src)) { // each entry takes 2 bytes at least
			return nil, true, ErrState
		}
		b.Append(true)
		kb, ib := b.KeyBuilder(), b.ItemBuilder()
		for ; n > 0; n-- {
			if src, err = decodePart(kb, mt.KeyType(), src); err != nil {
				return nil, true, err
			}
			if src, err = decodePart(ib, mt.ItemType(), src); err != nil {
				return nil, true, err
			}
		}
		return src, true, nil
	case array.ListLikeBuilder:
		var elem arrow.DataType
		switch lt := t.(type) {
		case *arrow.ListType:
			elem = lt.Elem()
		case *arrow.LargeListType:
			elem = lt.Elem()
		default:
			return nil, true, fmt.Errorf("rowcodec: a %s decoded into a list builder", t)
		}
		n, src, err := GetUvarint(src)
		if err != nil || n > uint64(len(src)) { // each element takes a byte at least
			return nil, true, ErrState
		}
		b.Append(true)
		vb := b.ValueBuilder()
		for ; n > 0; n-- {
			if src, err = decodePart(vb, elem, src); err != nil {
				return nil, true, err
			}
		}
		return src, true, nil
	}
	return nil, false, nil
}
