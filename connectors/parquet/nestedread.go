package parquet

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/parquet-go/parquet-go"
)

// Nested columns in the source: the inverse of nested.go, for the files of any writer. A ROW is read from a group
// (its fields matched by name, the file's other fields skipped), an ARRAY from a LIST in the 3-level form or in one
// of the legacy forms the Parquet spec's backward-compatibility rules describe (a repeated field, or a LIST whose
// repeated group is the element), a MAP from a group holding one repeated group of a key and a value. The file's
// own optional/required/repeated markings, not the declared type, give the repetition and definition levels; a
// NULL where the declared type is NOT NULL is an error, as for flat columns.
//
// Each leaf column is read value by value with its levels (Dremel's record assembly): a row starts at a value of
// repetition level 0, a node is NULL when the definition level of its first leaf's value stops short of it, and a
// list goes on while the next value of its first leaf repeats at the list's level. The Arrow builders are filled
// as the values are consumed, so a NULL ROW appends NULLs to its fields' builders as Arrow requires.

// pqReadNode is one node of a nested column's read plan.
type pqReadNode struct {
	kind     pqNestKind
	name     string // the path, for errors
	optional bool   // the file's node is optional
	nullable bool   // the declared type allows a NULL here
	// def is the definition level a value of the node's first leaf reaches when the node is present; for a list or
	// map, elemDef is the level when it has an element (its repeated group is there), and repLevel the repetition
	// level of its second and later elements.
	def, elemDef, repLevel int
	leaf                   pqReadCol // a leaf: its conversion
	leafIdx                int       // a leaf: its index in the column's leaves
	first                  int       // the index of the first leaf under the node
	leaves                 []int     // the indexes of every leaf under the node
	children               []*pqReadNode
}

// planPQNested plans a nested column: node is the file's top-level field of the column's name.
func planPQNested(sch *parquet.Schema, node parquet.Field, field arrow.Field) (pqReadCol, error) {
	p := pqNestPlanner{sch: sch}
	root, err := p.plan(node, []string{node.Name()}, field.Type, field.Nullable, 0, 0, false)
	if err != nil {
		return pqReadCol{}, fmt.Errorf("column %s: %w", field.Name, err)
	}
	return pqReadCol{name: field.Name, target: field.Type, nullable: field.Nullable, nested: root, leaves: p.leaves}, nil
}

type pqNestPlanner struct {
	sch    *parquet.Schema
	leaves []int // file column indexes, in the order the plan numbers its leaves
}

// plan matches one file node (at path, under def definition and rep repetition levels) to Arrow type t. asElement
// is set for a repeated node that is itself a list's element (the legacy forms): its repetition is the list's.
func (p *pqNestPlanner) plan(node parquet.Node, path []string, t arrow.DataType, nullable bool, def, rep int, asElement bool) (*pqReadNode, error) {
	name := strings.Join(path, ".")
	if node.Repeated() && !asElement {
		// An unannotated repeated field: a list of required elements, the list itself required.
		lt, ok := t.(*arrow.ListType)
		if !ok {
			return nil, fmt.Errorf("%s is a repeated Parquet field, not a %s", name, t)
		}
		n := &pqReadNode{kind: pqNestList, name: name, nullable: nullable, def: def, elemDef: def + 1, repLevel: rep + 1}
		e, err := p.plan(node, path, lt.Elem(), lt.ElemField().Nullable, def+1, rep+1, true)
		if err != nil {
			return nil, err
		}
		return n.with(e), nil
	}
	n := &pqReadNode{name: name, optional: node.Optional(), nullable: nullable, def: def}
	if n.optional {
		n.def++
	}
	fields := node.Fields()
	switch t := t.(type) {
	case *arrow.StructType:
		if node.Leaf() {
			return nil, fmt.Errorf("%s is a Parquet %s, not a %s", name, pqTypeName(node.Type()), t)
		}
		n.kind = pqNestStruct
		for _, f := range t.Fields() {
			i := slices.IndexFunc(fields, func(pf parquet.Field) bool { return pf.Name() == f.Name })
			if i < 0 {
				return nil, fmt.Errorf("%s has no field %q (it has %s)", name, f.Name, pqFieldNames(fields))
			}
			c, err := p.plan(fields[i], append(slices.Clip(path), f.Name), f.Type, f.Nullable, n.def, rep, false)
			if err != nil {
				return nil, err
			}
			n.with(c)
		}
		if len(n.leaves) == 0 {
			return nil, fmt.Errorf("%s: a ROW without fields", name)
		}
		return n, nil
	case *arrow.MapType:
		if node.Leaf() || len(fields) != 1 || !fields[0].Repeated() || fields[0].Leaf() || len(fields[0].Fields()) != 2 {
			return nil, fmt.Errorf("%s is not a Parquet MAP (a group of one repeated group of a key and a value), so not a %s", name, t)
		}
		n.kind, n.elemDef, n.repLevel = pqNestMap, n.def+1, rep+1
		kv := fields[0]
		kvPath := append(slices.Clip(path), kv.Name())
		ks := kv.Fields()
		k, err := p.plan(ks[0], append(slices.Clip(kvPath), ks[0].Name()), t.KeyType(), false, n.elemDef, n.repLevel, false)
		if err != nil {
			return nil, err
		}
		v, err := p.plan(ks[1], append(slices.Clip(kvPath), ks[1].Name()), t.ItemType(), t.ItemField().Nullable, n.elemDef, n.repLevel, false)
		if err != nil {
			return nil, err
		}
		return n.with(k).with(v), nil
	case *arrow.ListType:
		if node.Leaf() || len(fields) != 1 || !fields[0].Repeated() {
			return nil, fmt.Errorf("%s is not a Parquet LIST (a group of one repeated field), so not a %s", name, t)
		}
		n.kind, n.elemDef, n.repLevel = pqNestList, n.def+1, rep+1
		r := fields[0]
		rPath := append(slices.Clip(path), r.Name())
		var e *pqReadNode
		var err error
		if rf := r.Fields(); r.Leaf() || len(rf) != 1 || r.Name() == "array" || r.Name() == path[len(path)-1]+"_tuple" {
			// The legacy 2-level forms: the repeated field is the element.
			e, err = p.plan(r, rPath, t.Elem(), t.ElemField().Nullable, n.elemDef, n.repLevel, true)
		} else {
			e, err = p.plan(rf[0], append(rPath, rf[0].Name()), t.Elem(), t.ElemField().Nullable, n.elemDef, n.repLevel, false)
		}
		if err != nil {
			return nil, err
		}
		return n.with(e), nil
	}
	if !node.Leaf() {
		return nil, fmt.Errorf("%s is a Parquet group, not a %s", name, t)
	}
	leaf, ok := p.sch.Lookup(path...)
	if !ok {
		return nil, fmt.Errorf("no leaf column %s", name)
	}
	if leaf.MaxDefinitionLevel != n.def || leaf.MaxRepetitionLevel != rep {
		return nil, fmt.Errorf("%s: levels (%d, %d) where the schema has (%d, %d)", name, n.def, rep, leaf.MaxDefinitionLevel, leaf.MaxRepetitionLevel)
	}
	col, err := planPQLeaf(node, name, leaf.ColumnIndex, t, nullable)
	if err != nil {
		return nil, err
	}
	n.kind, n.leaf, n.leafIdx = pqNestLeaf, col, len(p.leaves)
	n.first, n.leaves = n.leafIdx, []int{n.leafIdx}
	p.leaves = append(p.leaves, leaf.ColumnIndex)
	return n, nil
}

// with adds a child, and its leaves to the node's.
func (n *pqReadNode) with(c *pqReadNode) *pqReadNode {
	if len(n.leaves) == 0 {
		n.first = c.first
	}
	n.children = append(n.children, c)
	n.leaves = append(n.leaves, c.leaves...)
	return n
}

func pqFieldNames(fields []parquet.Field) string {
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = f.Name()
	}
	return strings.Join(names, ", ")
}

// pqLeafCursor reads one leaf column of a nested column in the current row group, keeping the values read ahead
// (cloned: a page's byte arrays are reused by the next page) until the assembly consumes them.
type pqLeafCursor struct {
	pages parquet.Pages
	page  parquet.Page
	vals  parquet.ValueReader
	buf   []parquet.Value
	pos   int
}

func (c *pqLeafCursor) close() {
	if c.page != nil {
		parquet.Release(c.page)
	}
	if c.pages != nil {
		c.pages.Close()
	}
	*c = pqLeafCursor{}
}

// peek returns the leaf's next value, false at the end of the row group.
func (c *pqLeafCursor) peek(scratch []parquet.Value) (parquet.Value, bool, error) {
	for c.pos == len(c.buf) {
		if c.vals == nil {
			page, err := c.pages.ReadPage()
			if errors.Is(err, io.EOF) {
				return parquet.Value{}, false, nil
			}
			if err != nil {
				return parquet.Value{}, false, err
			}
			c.page, c.vals = page, page.Values()
		}
		got, err := c.vals.ReadValues(scratch)
		c.buf, c.pos = c.buf[:0], 0
		for _, v := range scratch[:got] {
			c.buf = append(c.buf, v.Clone())
		}
		switch {
		case errors.Is(err, io.EOF):
			parquet.Release(c.page)
			c.page, c.vals = nil, nil
		case err != nil:
			return parquet.Value{}, false, err
		case got == 0:
			return parquet.Value{}, false, errors.New("page reader made no progress")
		}
	}
	return c.buf[c.pos], true, nil
}

// pqAssembly assembles the rows of one nested column from its leaves' cursors.
type pqAssembly struct {
	s       *parquetSource
	cur     []pqLeafCursor
	scratch []parquet.Value
}

func (a *pqAssembly) peek(leaf int) (parquet.Value, error) {
	v, ok, err := a.cur[leaf].peek(a.scratch)
	if err == nil && !ok {
		err = errors.New("a leaf column's values end before the row group's rows")
	}
	return v, err
}

// readNested appends the next n rows of nested column c to its builder.
func (s *parquetSource) readNested(c, n int) error {
	of := s.cur
	col := &of.cols[c]
	a := pqAssembly{s: s, cur: of.cursors[c].leaves, scratch: s.vals}
	b := s.bld.Field(c)
	for range n {
		for _, leaf := range col.nested.leaves {
			v, err := a.peek(leaf)
			if err != nil {
				return err
			}
			if v.RepetitionLevel() != 0 {
				return fmt.Errorf("a row of leaf %s starts at repetition level %d", col.nested.name, v.RepetitionLevel())
			}
		}
		if err := a.node(col.nested, b); err != nil {
			return err
		}
	}
	return nil
}

// node appends one value of n's type to b, consuming its leaves' values.
func (a *pqAssembly) node(n *pqReadNode, b array.Builder) error {
	v, err := a.peek(n.first)
	if err != nil {
		return err
	}
	if v.DefinitionLevel() < n.def { // NULL here (only an optional node can be)
		if !n.nullable {
			return fmt.Errorf("NULL in %s, which is NOT NULL", n.name)
		}
		b.AppendNull()
		return a.skip(n, n.def)
	}
	switch n.kind {
	case pqNestLeaf:
		c := &a.cur[n.leafIdx]
		c.pos++
		return a.s.appendValues(&n.leaf, b, c.buf[c.pos-1:c.pos])
	case pqNestStruct:
		sb := b.(*array.StructBuilder)
		sb.Append(true)
		for k, c := range n.children {
			if err := a.node(c, sb.FieldBuilder(k)); err != nil {
				return err
			}
		}
		return nil
	}
	// A list or a map: present, maybe empty.
	var parts []array.Builder
	switch b := b.(type) {
	case *array.MapBuilder:
		b.Append(true)
		parts = []array.Builder{b.KeyBuilder(), b.ItemBuilder()}
	case *array.ListBuilder:
		b.Append(true)
		parts = []array.Builder{b.ValueBuilder()}
	default:
		return fmt.Errorf("%s: builder %T for a list", n.name, b)
	}
	if v.DefinitionLevel() < n.elemDef {
		return a.skip(n, n.elemDef) // empty
	}
	for {
		for k, c := range n.children {
			if err := a.node(c, parts[k]); err != nil {
				return err
			}
		}
		v, ok, err := a.cur[n.first].peek(a.scratch)
		if err != nil || !ok || v.RepetitionLevel() < n.repLevel {
			return err
		}
		if v.RepetitionLevel() > n.repLevel {
			return fmt.Errorf("%s: a value repeats at level %d after a complete element of level %d", n.name, v.RepetitionLevel(), n.repLevel)
		}
	}
}

// skip consumes the one value each leaf under n holds for a NULL n (below is n.def) or an empty list or map (below
// is n.elemDef): each must stop short of that level.
func (a *pqAssembly) skip(n *pqReadNode, below int) error {
	for _, leaf := range n.leaves {
		v, err := a.peek(leaf)
		if err != nil {
			return err
		}
		if v.DefinitionLevel() >= below {
			return fmt.Errorf("%s: its leaves disagree on its definition level", n.name)
		}
		a.cur[leaf].pos++
	}
	return nil
}
