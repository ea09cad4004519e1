package parquet

import (
	"encoding/binary"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/parquet-go/parquet-go"
)

// Nested columns in the sink. A ROW is a Parquet group of its fields (in their order), an ARRAY the LIST logical
// type in its 3-level form (optional group (LIST) { repeated group list { optional element } }), a MAP the MAP
// logical type (optional group (MAP) { repeated group key_value { required key; optional value } }), nesting
// freely. Each leaf is its own Parquet column: a nested value is shredded into values of its leaves with
// repetition and definition levels (Dremel's scheme, as the Parquet spec has it), written column by column.

type pqNestKind uint8

const (
	pqNestLeaf pqNestKind = iota
	pqNestStruct
	pqNestList
	pqNestMap
)

// pqNested is one node of a nested column's tree.
type pqNested struct {
	kind     pqNestKind
	optional bool // a NULL is possible here: the node's presence adds one definition level
	leaf     pqColumn
	leafCol  int // the leaf's Parquet column index
	children []*pqNested
	// repLevel: a list's or map's repeated group: the repetition level of its second and later elements
	repLevel int
	leaves   []int // the Parquet column indexes of every leaf under the node, for its NULLs
}

// nestedNode maps a nested Arrow type to its Parquet node and tree; leaves are numbered from *next in schema
// order. reps is the number of repeated groups above.
func nestedNode(t arrow.DataType, nullable bool, next *int, reps int) (parquet.Node, *pqNested, error) {
	n := &pqNested{optional: nullable}
	var node parquet.Node
	switch t := t.(type) {
	case *arrow.StructType:
		n.kind = pqNestStruct
		group, order := parquet.Group{}, make([]string, 0, t.NumFields())
		for _, f := range t.Fields() {
			if _, dup := group[f.Name]; dup {
				return nil, nil, fmt.Errorf("duplicate field name %q", f.Name)
			}
			cn, c, err := nestedNode(f.Type, f.Nullable, next, reps)
			if err != nil {
				return nil, nil, fmt.Errorf("field %s: %w", f.Name, err)
			}
			group[f.Name], order = cn, append(order, f.Name)
			n.children = append(n.children, c)
		}
		node = newOrderedGroup(group, order)
	case *arrow.MapType: // a MapType is no ListType: its own case
		n.kind, n.repLevel = pqNestMap, reps+1
		kn, k, err := nestedNode(t.KeyType(), false, next, reps+1)
		if err != nil {
			return nil, nil, fmt.Errorf("map key: %w", err)
		}
		vn, v, err := nestedNode(t.ItemType(), true, next, reps+1)
		if err != nil {
			return nil, nil, fmt.Errorf("map value: %w", err)
		}
		n.children = []*pqNested{k, v}
		node = parquet.Map(kn, vn) // the key Required, the value as given (Optional)
	case *arrow.ListType:
		n.kind, n.repLevel = pqNestList, reps+1
		en, e, err := nestedNode(t.Elem(), true, next, reps+1)
		if err != nil {
			return nil, nil, fmt.Errorf("array element: %w", err)
		}
		n.children = []*pqNested{e}
		node = parquet.List(en)
	default:
		leaf, col, err := parquetNode(t)
		if err != nil {
			return nil, nil, err
		}
		n.kind, n.leaf, n.leafCol = pqNestLeaf, col, *next
		n.leaves = []int{*next}
		*next++
		node = leaf
	}
	for _, c := range n.children {
		n.leaves = append(n.leaves, c.leaves...)
	}
	if nullable {
		node = parquet.Optional(node)
	} else {
		node = parquet.Required(node)
	}
	return node, n, nil
}

// pqShredder collects the leaf values of nested rows, per Parquet column.
type pqShredder struct {
	vals map[int][]parquet.Value
}

func (s *pqShredder) add(col int, v parquet.Value) { s.vals[col] = append(s.vals[col], v) }

// shred appends the leaf values of element i of arr (a value of n's type, or NULL) whose first value repeats at
// level rep, under def definition levels already reached.
func (s *pqShredder) shred(n *pqNested, arr arrow.Array, i, rep, def int) error {
	if n.optional {
		if arr.IsNull(i) {
			s.nulls(n, rep, def)
			return nil
		}
		def++
	} else if arr.IsNull(i) {
		return fmt.Errorf("NULL in a NOT NULL part")
	}
	switch n.kind {
	case pqNestLeaf:
		v, err := leafValue(n.leaf, arr, i)
		if err != nil {
			return err
		}
		s.add(n.leafCol, v.Level(rep, def, n.leafCol))
	case pqNestStruct:
		st := arr.(*array.Struct)
		for k, c := range n.children {
			if err := s.shred(c, st.Field(k), i, rep, def); err != nil {
				return err
			}
		}
	case pqNestList, pqNestMap:
		l := arr.(array.ListLike)
		lo, hi := l.ValueOffsets(i)
		if lo == hi { // empty: the list is there, no element is
			for _, c := range n.children {
				s.nulls(c, rep, def)
			}
			return nil
		}
		parts := []arrow.Array{l.ListValues()}
		if m, ok := arr.(*array.Map); ok {
			parts = []arrow.Array{m.Keys(), m.Items()}
		}
		for j := int(lo); j < int(hi); j++ {
			r := rep
			if j > int(lo) {
				r = n.repLevel
			}
			for k, c := range n.children {
				if err := s.shred(c, parts[k], j, r, def+1); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// nulls appends a NULL at the given levels to every leaf under n.
func (s *pqShredder) nulls(n *pqNested, rep, def int) {
	for _, col := range n.leaves {
		s.add(col, parquet.NullValue().Level(rep, def, col))
	}
}

// leafValue converts element i (not NULL) of a scalar array into the parquet value the flat columns' loops make.
func leafValue(col pqColumn, arr arrow.Array, i int) (parquet.Value, error) {
	switch col.kind {
	case pqBool:
		return parquet.BooleanValue(arr.(*array.Boolean).Value(i)), nil
	case pqInt8:
		return parquet.Int32Value(int32(arr.(*array.Int8).Value(i))), nil
	case pqInt16:
		return parquet.Int32Value(int32(arr.(*array.Int16).Value(i))), nil
	case pqInt32:
		return parquet.Int32Value(arr.(*array.Int32).Value(i)), nil
	case pqDate32:
		return parquet.Int32Value(int32(arr.(*array.Date32).Value(i))), nil
	case pqDecimalInt32:
		return parquet.Int32Value(int32(arr.(*array.Decimal128).Value(i).LowBits())), nil
	case pqInt64:
		return parquet.Int64Value(arr.(*array.Int64).Value(i)), nil
	case pqDecimalInt64:
		return parquet.Int64Value(int64(arr.(*array.Decimal128).Value(i).LowBits())), nil
	case pqTimestamp:
		return parquet.Int64Value(int64(arr.(*array.Timestamp).Value(i))), nil
	case pqTimestampSeconds:
		return parquet.Int64Value(int64(arr.(*array.Timestamp).Value(i)) * 1000), nil
	case pqUint8:
		return parquet.Int32Value(int32(arr.(*array.Uint8).Value(i))), nil
	case pqUint16:
		return parquet.Int32Value(int32(arr.(*array.Uint16).Value(i))), nil
	case pqUint32:
		return parquet.Int32Value(int32(arr.(*array.Uint32).Value(i))), nil
	case pqUint64:
		return parquet.Int64Value(int64(arr.(*array.Uint64).Value(i))), nil
	case pqFloat32:
		return parquet.FloatValue(arr.(*array.Float32).Value(i)), nil
	case pqFloat64:
		return parquet.DoubleValue(arr.(*array.Float64).Value(i)), nil
	case pqString:
		return parquet.ByteArrayValue([]byte(arr.(*array.String).Value(i))), nil
	case pqBinary:
		return parquet.ByteArrayValue(arr.(*array.Binary).Value(i)), nil
	case pqDecimalFixed:
		v := arr.(*array.Decimal128).Value(i)
		var be [16]byte
		binary.BigEndian.PutUint64(be[:8], uint64(v.HighBits()))
		binary.BigEndian.PutUint64(be[8:], v.LowBits())
		return parquet.FixedLenByteArrayValue(append([]byte(nil), be[16-col.fixedLen:]...)), nil
	}
	return parquet.Value{}, fmt.Errorf("unhandled parquet column kind %d", col.kind)
}

// writeNested shreds rows [off, end) of a nested column and writes each of its leaf columns.
func (e *parquetEncoder) writeNested(n *pqNested, arr arrow.Array, off, end int) error {
	s := pqShredder{vals: make(map[int][]parquet.Value, len(n.leaves))}
	for i := off; i < end; i++ {
		if err := s.shred(n, arr, i, 0, 0); err != nil {
			return err
		}
	}
	for _, col := range n.leaves {
		if _, err := e.writers[col].WriteRowValues(s.vals[col]); err != nil {
			return err
		}
	}
	return nil
}
