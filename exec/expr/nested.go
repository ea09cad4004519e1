package expr

import (
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/clinksql/clinksql/sqlerr"
)

// The nested types: ROW (an Arrow struct), ARRAY (a list) and MAP (a map). Their functions gather whole arrays with
// arrow's take kernel (indices computed per row, a NULL index giving a NULL), never a value at a time:
//
//	field(row, 'name')          a ROW's field (row.name); NULL where the row is NULL
//	array(x, y, ...)            ARRAY[x, y, ...]: the arguments unified to one element type
//	map(k1, v1, k2, v2, ...)    MAP[k1, v1, ...] (Flink's constructor): keys of one type, values of one type
//	element_at(a, i)            a[i], 1-based; NULL out of range (Postgres' and Flink's ELEMENT_AT)
//	element_at(m, k)            m[k]: the value of key k, NULL when there is none
//	cardinality(a | m)          the number of elements (INT), NULL for a NULL array

func init() {
	register(bindRowField, "field")
	register(bindArray, "array")
	register(bindMap, "map")
	register(bindElementAt, "element_at")
	register(bindCardinality, "cardinality")
	register(bindRow, "row")
}

// bindRow binds ROW(x, y, ...) (and (x, y, ...)): a ROW of fields f1, f2, ... (Postgres' names), which an INSERT
// or a CAST maps onto a declared ROW type field by field.
func bindRow(name string, args []Expr) (Expr, error) {
	if len(args) == 0 {
		return nil, fnNotExist(name, args)
	}
	fields := make([]arrow.Field, len(args))
	out := make([]Expr, len(args))
	for i, a := range args {
		t := a.Type()
		out[i] = a
		if isNull(t) {
			t = TypeText
			out[i] = NullOf(t)
		}
		fields[i] = arrow.Field{Name: "f" + strconv.Itoa(i+1), Type: t, Nullable: true}
	}
	st := arrow.StructOf(fields...)
	return &callExpr{name: name, args: out, typ: st,
		render: func(a []string) string { return "ROW(" + strings.Join(a, ", ") + ")" },
		kern: func(ec *evalCtx, args []value) (value, error) {
			children := make([]arrow.ArrayData, len(args))
			arrs := make([]arrow.Array, len(args))
			defer func() {
				for _, a := range arrs {
					if a != nil {
						a.Release()
					}
				}
			}()
			for i, v := range args {
				a, err := ec.materialize(retainValue(v))
				if err != nil {
					return value{}, err
				}
				arrs[i], children[i] = a, a.Data()
			}
			d := array.NewData(st, ec.n, []*memory.Buffer{nil}, children, 0, 0)
			defer d.Release()
			return value{arr: array.NewStructData(d)}, nil
		}}, nil
}

func isList(t arrow.DataType) bool   { return t.ID() == arrow.LIST }
func isMap(t arrow.DataType) bool    { return t.ID() == arrow.MAP }
func isStruct(t arrow.DataType) bool { return t.ID() == arrow.STRUCT }

// IsNested reports whether t is a ROW, ARRAY or MAP.
func IsNested(t arrow.DataType) bool { return isList(t) || isMap(t) || isStruct(t) }

// takeRows gathers rows idx of arr (-1: NULL) with arrow's take kernel.
func takeRows(ec *evalCtx, arr arrow.Array, idx []int64) (arrow.Array, error) {
	b := array.NewInt64Builder(ec.mem)
	defer b.Release()
	b.Reserve(len(idx))
	for _, v := range idx {
		if v < 0 {
			b.AppendNull()
		} else {
			b.UnsafeAppend(v)
		}
	}
	ia := b.NewArray()
	defer ia.Release()
	out, err := compute.TakeArray(compute.WithAllocator(ec.cc, ec.mem), arr, ia)
	if err != nil {
		return nil, sqlerr.Wrap(sqlerr.InternalError, err)
	}
	return out, nil
}

func bindRowField(name string, args []Expr) (Expr, error) {
	if len(args) != 2 || !isStruct(args[0].Type()) {
		if len(args) == 2 && !isNull(args[0].Type()) {
			return nil, sqlerr.New(sqlerr.WrongObjectType, sqlerr.NoPos, "a field can only be read from a ROW, not from type %s", TypeName(args[0].Type()))
		}
		return nil, fnNotExist(name, args)
	}
	fname, null, ok := ConstantString(args[1])
	if !ok || null {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, sqlerr.NoPos, "a field name must be a constant")
	}
	st := args[0].Type().(*arrow.StructType)
	k, found := st.FieldIdx(fname)
	if !found {
		// Unquoted names fold to lower case; a field declared with capitals is found when that is unambiguous.
		for i, f := range st.Fields() {
			if strings.EqualFold(f.Name, fname) {
				if found {
					return nil, sqlerr.New(sqlerr.AmbiguousColumn, sqlerr.NoPos, "field %q is ambiguous in %s", fname, TypeName(st))
				}
				k, found = i, true
			}
		}
	}
	if !found {
		return nil, sqlerr.New(sqlerr.UndefinedColumn, sqlerr.NoPos, "field %q does not exist in %s", fname, TypeName(st))
	}
	ft := st.Field(k).Type
	return &callExpr{name: name, args: args, typ: ft, strict: true,
		render: func(a []string) string { return a[0] + "." + st.Field(k).Name },
		kern: func(ec *evalCtx, args []value) (value, error) {
			arr, err := ec.materialize(retainValue(args[0]))
			if err != nil {
				return value{}, err
			}
			defer arr.Release()
			s := arr.(*array.Struct)
			child := s.Field(k)
			if s.NullN() == 0 {
				child.Retain()
				return value{arr: child}, nil
			}
			return value{arr: maskNulls(ec.mem, child, s)}, nil
		}}, nil
}

// retainValue returns v with its array retained once more (materialize takes over what it is given).
func retainValue(v value) value {
	if v.arr != nil {
		v.arr.Retain()
	}
	return v
}

// interleave gathers args (n rows each) row by row: row i's elements are args[0][i], args[1][i], ...
func interleave(ec *evalCtx, args []value) (arrow.Array, error) {
	arrs := make([]arrow.Array, len(args))
	defer func() {
		for _, a := range arrs {
			if a != nil {
				a.Release()
			}
		}
	}()
	for j, v := range args {
		a, err := ec.materialize(retainValue(v))
		if err != nil {
			return nil, err
		}
		arrs[j] = a
	}
	all, err := array.Concatenate(arrs, ec.mem)
	if err != nil {
		return nil, sqlerr.Wrap(sqlerr.InternalError, err)
	}
	defer all.Release()
	k := len(args)
	idx := make([]int64, ec.n*k)
	for i := range ec.n {
		for j := range k {
			idx[i*k+j] = int64(j*ec.n + i)
		}
	}
	return takeRows(ec, all, idx)
}

// fixedOffsets are list offsets of n lists of k elements each.
func fixedOffsets(mem memory.Allocator, n, k int) *memory.Buffer {
	buf := memory.NewResizableBuffer(mem)
	buf.Resize((n + 1) * 4)
	offs := arrow.Int32Traits.CastFromBytes(buf.Bytes())
	for i := range n + 1 {
		offs[i] = int32(i * k)
	}
	return buf
}

func bindArray(name string, args []Expr) (Expr, error) {
	if len(args) == 0 {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, sqlerr.NoPos, "an empty ARRAY[] needs a type: CAST(ARRAY[] AS INT ARRAY) is not supported yet")
	}
	out, t, err := unify("ARRAY", args)
	if err != nil {
		return nil, err
	}
	if isNull(t) {
		t = TypeText
		for i := range out {
			out[i] = NullOf(t)
		}
	}
	lt := arrow.ListOf(t)
	return &callExpr{name: name, args: out, typ: lt,
		render: func(a []string) string { return "ARRAY[" + strings.Join(a, ", ") + "]" },
		kern: func(ec *evalCtx, args []value) (value, error) {
			vals, err := interleave(ec, args)
			if err != nil {
				return value{}, err
			}
			defer vals.Release()
			offs := fixedOffsets(ec.mem, ec.n, len(args))
			defer offs.Release()
			d := array.NewData(lt, ec.n, []*memory.Buffer{nil, offs}, []arrow.ArrayData{vals.Data()}, 0, 0)
			defer d.Release()
			return value{arr: array.NewListData(d)}, nil
		}}, nil
}

func bindMap(name string, args []Expr) (Expr, error) {
	if len(args) == 0 || len(args)%2 != 0 {
		return nil, sqlerr.New(sqlerr.UndefinedFunction, sqlerr.NoPos, "MAP[...] takes keys and values in pairs")
	}
	var ks, vs []Expr
	for i := 0; i < len(args); i += 2 {
		ks, vs = append(ks, args[i]), append(vs, args[i+1])
	}
	ks, kt, err := unify("MAP keys", ks)
	if err != nil {
		return nil, err
	}
	vs, vt, err := unify("MAP values", vs)
	if err != nil {
		return nil, err
	}
	if isNull(kt) || IsNested(kt) {
		return nil, sqlerr.New(sqlerr.DatatypeMismatch, sqlerr.NoPos, "a MAP key cannot be of type %s", TypeName(kt))
	}
	if isNull(vt) {
		vt = TypeText
		for i := range vs {
			vs[i] = NullOf(vt)
		}
	}
	mt := arrow.MapOf(kt, vt)
	all := make([]Expr, 0, len(args))
	all = append(append(all, ks...), vs...)
	n := len(ks)
	return &callExpr{name: name, args: all, typ: mt, canFail: true,
		render: func(a []string) string {
			var parts []string
			for i := range n {
				parts = append(parts, a[i], a[n+i])
			}
			return "MAP[" + strings.Join(parts, ", ") + "]"
		},
		kern: func(ec *evalCtx, args []value) (value, error) {
			keys, err := interleave(ec, args[:n])
			if err != nil {
				return value{}, err
			}
			defer keys.Release()
			if keys.NullN() > 0 {
				return value{}, sqlerr.New("22004", sqlerr.NoPos, "a MAP key cannot be NULL")
			}
			items, err := interleave(ec, args[n:])
			if err != nil {
				return value{}, err
			}
			defer items.Release()
			entries := arrow.StructOf(arrow.Field{Name: "key", Type: kt}, arrow.Field{Name: "value", Type: vt, Nullable: true})
			sd := array.NewData(entries, keys.Len(), []*memory.Buffer{nil}, []arrow.ArrayData{keys.Data(), items.Data()}, 0, 0)
			defer sd.Release()
			offs := fixedOffsets(ec.mem, ec.n, n)
			defer offs.Release()
			d := array.NewData(mt, ec.n, []*memory.Buffer{nil, offs}, []arrow.ArrayData{sd}, 0, 0)
			defer d.Release()
			return value{arr: array.NewMapData(d)}, nil
		}}, nil
}

func bindElementAt(name string, args []Expr) (Expr, error) {
	if len(args) != 2 {
		return nil, fnNotExist(name, args)
	}
	switch t := args[0].Type(); {
	case isList(t):
		i, err := coerce(args[1], TypeBigint)
		if err != nil || !isInteger(args[1].Type()) && !isNull(args[1].Type()) {
			return nil, sqlerr.New(sqlerr.DatatypeMismatch, sqlerr.NoPos, "an array subscript must be an integer, not %s", TypeName(args[1].Type()))
		}
		et := t.(*arrow.ListType).Elem()
		return &callExpr{name: name, args: []Expr{args[0], i}, typ: et, strict: true,
			render: func(a []string) string { return a[0] + "[" + a[1] + "]" },
			kern: func(ec *evalCtx, args []value) (value, error) {
				arr, err := ec.materialize(retainValue(args[0]))
				if err != nil {
					return value{}, err
				}
				defer arr.Release()
				l := arr.(*array.List)
				offs := l.Offsets()
				sub := primOf[int64](args[1])
				idx := make([]int64, ec.n)
				for r := range idx {
					idx[r] = -1
					if l.IsNull(r) || sub.null(r) {
						continue
					}
					if k := sub.at(r); k >= 1 && k <= int64(offs[r+1]-offs[r]) {
						idx[r] = int64(offs[r]) + k - 1
					}
				}
				out, err := takeRows(ec, l.ListValues(), idx)
				return value{arr: out}, err
			}}, nil
	case isMap(t):
		mt := t.(*arrow.MapType)
		k, err := coerce(args[1], mt.KeyType())
		if err != nil {
			return nil, err
		}
		return &callExpr{name: name, args: []Expr{args[0], k}, typ: mt.ItemType(), strict: true,
			render: func(a []string) string { return a[0] + "[" + a[1] + "]" },
			kern: func(ec *evalCtx, args []value) (value, error) {
				arr, err := ec.materialize(retainValue(args[0]))
				if err != nil {
					return value{}, err
				}
				defer arr.Release()
				key, err := ec.materialize(retainValue(args[1]))
				if err != nil {
					return value{}, err
				}
				defer key.Release()
				m := arr.(*array.Map)
				eq, err := keyEquality(m.Keys(), key)
				if err != nil {
					return value{}, err
				}
				offs := m.Offsets()
				idx := make([]int64, ec.n)
				for r := range idx {
					idx[r] = -1
					if m.IsNull(r) || key.IsNull(r) {
						continue
					}
					for j := offs[r+1] - 1; j >= offs[r]; j-- { // the last of equal keys, as a later MAP[] entry wins
						if eq(int(j), r) {
							idx[r] = int64(j)
							break
						}
					}
				}
				out, err := takeRows(ec, m.Items(), idx)
				return value{arr: out}, err
			}}, nil
	case isNull(t):
		return NullOf(TypeText), nil
	}
	return nil, sqlerr.New(sqlerr.DatatypeMismatch, sqlerr.NoPos, "cannot subscript type %s: it is not an array or a map", TypeName(args[0].Type()))
}

// keyEquality compares map key j with lookup key r.
func keyEquality(keys, key arrow.Array) (func(j, r int) bool, error) {
	switch k := keys.(type) {
	case *array.String:
		q := key.(*array.String)
		return func(j, r int) bool { return k.Value(j) == q.Value(r) }, nil
	case *array.Int64:
		q := key.(*array.Int64)
		return func(j, r int) bool { return k.Value(j) == q.Value(r) }, nil
	case *array.Int32:
		q := key.(*array.Int32)
		return func(j, r int) bool { return k.Value(j) == q.Value(r) }, nil
	case *array.Int16:
		q := key.(*array.Int16)
		return func(j, r int) bool { return k.Value(j) == q.Value(r) }, nil
	case *array.Boolean:
		q := key.(*array.Boolean)
		return func(j, r int) bool { return k.Value(j) == q.Value(r) }, nil
	case *array.Date32:
		q := key.(*array.Date32)
		return func(j, r int) bool { return k.Value(j) == q.Value(r) }, nil
	case *array.Timestamp:
		q := key.(*array.Timestamp)
		return func(j, r int) bool { return k.Value(j) == q.Value(r) }, nil
	}
	return nil, sqlerr.New(sqlerr.FeatureNotSupported, sqlerr.NoPos, "a MAP subscript over keys of type %s is not supported", keys.DataType())
}

func bindCardinality(name string, args []Expr) (Expr, error) {
	if len(args) != 1 || !isList(args[0].Type()) && !isMap(args[0].Type()) && !isNull(args[0].Type()) {
		return nil, fnNotExist(name, args)
	}
	if isNull(args[0].Type()) {
		return NullOf(TypeInt), nil
	}
	return &callExpr{name: name, args: args, typ: TypeInt, strict: true,
		kern: func(ec *evalCtx, args []value) (value, error) {
			arr, err := ec.materialize(retainValue(args[0]))
			if err != nil {
				return value{}, err
			}
			defer arr.Release()
			var offs []int32
			switch a := arr.(type) {
			case *array.List:
				offs = a.Offsets()
			case *array.Map:
				offs = a.Offsets()
			default:
				return value{}, sqlerr.New(sqlerr.InternalError, sqlerr.NoPos, "cardinality of %s", arr.DataType())
			}
			return mapLoopWith(ec, args, TypeInt, func(i int) (int32, *sqlerr.Error) { return offs[i+1] - offs[i], nil })
		}}, nil
}

// structCastKernel casts a ROW to another ROW of as many fields, field by field in order (Postgres' composite
// cast), keeping the rows' NULLs.
func structCastKernel(from, to *arrow.StructType) (kernel, bool) {
	if from.NumFields() != to.NumFields() {
		return nil, false
	}
	kids := make([]kernel, from.NumFields())
	canFail := false
	for i := range kids {
		f, t := from.Field(i).Type, to.Field(i).Type
		if arrow.TypeEqual(f, t) {
			continue
		}
		k, cf := castKernel(f, t)
		if k == nil {
			return nil, false
		}
		kids[i], canFail = k, canFail || cf
	}
	return func(ec *evalCtx, args []value) (value, error) {
		arr, err := ec.materialize(retainValue(args[0]))
		if err != nil {
			return value{}, err
		}
		defer arr.Release()
		s := arr.(*array.Struct)
		children := make([]arrow.ArrayData, len(kids))
		var owned []arrow.Array
		defer func() {
			for _, a := range owned {
				a.Release()
			}
		}()
		for i, k := range kids {
			child := s.Field(i)
			if k == nil {
				children[i] = child.Data()
				continue
			}
			sub := &evalCtx{Context: ec.Context, rec: ec.rec, n: child.Len(), cc: ec.cc, mem: ec.mem}
			v, err := k(sub, []value{{arr: child}})
			if err != nil {
				return value{}, err
			}
			a, err := sub.materialize(v)
			if err != nil {
				return value{}, err
			}
			owned = append(owned, a)
			children[i] = a.Data()
		}
		d := array.NewData(to, s.Len(), []*memory.Buffer{s.Data().Buffers()[0]}, children, s.NullN(), s.Data().Offset())
		defer d.Release()
		return value{arr: array.NewStructData(d)}, nil
	}, canFail
}

// listCastKernel casts an ARRAY's elements.
func listCastKernel(from, to *arrow.ListType) (kernel, bool) {
	k, canFail := castKernel(from.Elem(), to.Elem())
	if arrow.TypeEqual(from.Elem(), to.Elem()) {
		k = nil
	} else if k == nil {
		return nil, false
	}
	return func(ec *evalCtx, args []value) (value, error) {
		arr, err := ec.materialize(retainValue(args[0]))
		if err != nil {
			return value{}, err
		}
		defer arr.Release()
		l := arr.(*array.List)
		vals := l.ListValues()
		if k != nil {
			sub := &evalCtx{Context: ec.Context, rec: ec.rec, n: vals.Len(), cc: ec.cc, mem: ec.mem}
			v, err := k(sub, []value{{arr: vals}})
			if err != nil {
				return value{}, err
			}
			if vals, err = sub.materialize(v); err != nil {
				return value{}, err
			}
			defer vals.Release()
		}
		ld := l.Data()
		d := array.NewData(to, l.Len(), ld.Buffers()[:2], []arrow.ArrayData{vals.Data()}, l.NullN(), ld.Offset())
		defer d.Release()
		return value{arr: array.NewListData(d)}, nil
	}, canFail
}

// EmptyList is the constant empty array of list type t (ARRAY[]::INT[]).
func EmptyList(t arrow.DataType) Expr {
	lt := t.(*arrow.ListType)
	vals := array.MakeArrayOfNull(memory.DefaultAllocator, lt.Elem(), 0)
	defer vals.Release()
	return &literal{sc: scalar.NewListScalar(vals)}
}

// maskNulls is child (a field of struct s, of s's length) with s's NULL rows NULL too: the child's buffers are
// shared, only its validity bitmap is new.
func maskNulls(mem memory.Allocator, child arrow.Array, s arrow.Array) arrow.Array {
	cd := child.Data()
	off, n := cd.Offset(), cd.Len()
	bits := memory.NewResizableBuffer(mem)
	bits.Resize(int(bitutil.BytesForBits(int64(off + n))))
	b := bits.Bytes()
	clear(b)
	nulls := 0
	for i := range n {
		if s.IsValid(i) && child.IsValid(i) {
			bitutil.SetBit(b, off+i)
		} else {
			nulls++
		}
	}
	bufs := append([]*memory.Buffer{bits}, cd.Buffers()[1:]...)
	d := array.NewData(cd.DataType(), n, bufs, cd.Children(), nulls, off)
	bits.Release()
	defer d.Release()
	return array.MakeFromData(d)
}
