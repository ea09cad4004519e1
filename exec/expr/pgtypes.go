package expr

import "strconv"

func init() {
	register(bindFormatType, "format_type")
}

// oidTypeNames are the Postgres names of the type OIDs clients ask about (psql's \gdesc sends the OIDs of a
// result's columns to format_type).
var oidTypeNames = map[int64]string{
	16: "boolean", 17: "bytea", 18: "\"char\"", 19: "name", 20: "bigint", 21: "smallint", 23: "integer",
	25: "text", 26: "oid", 700: "real", 701: "double precision", 705: "unknown", 1042: "character",
	1043: "character varying", 1082: "date", 1114: "timestamp without time zone",
	1184: "timestamp with time zone", 1186: "interval", 1700: "numeric",
}

// bindFormatType is format_type(type_oid, typmod): the type's name as Postgres prints it, with the modifier
// (character varying(20), numeric(10,2), timestamp(3) without time zone); NULL for a NULL OID, ??? for an
// unknown one.
func bindFormatType(name string, args []Expr) (Expr, error) {
	if len(args) != 2 {
		return nil, fnNotExist(name, args)
	}
	oid, err := intArg(name, args, args[0])
	if err != nil {
		return nil, err
	}
	mod, err := intArg(name, args, args[1])
	if err != nil {
		return nil, err
	}
	return &callExpr{name: name, args: []Expr{oid, mod}, typ: TypeText,
		kern: func(ec *evalCtx, vals []value) (value, error) {
			oids, mods := primOf[int64](vals[0]), primOf[int64](vals[1])
			at := func(p *prim[int64], i int) (int64, bool) { return p.at(i), !p.null(i) }
			out := newStringOut(ec, TypeText, ec.n*16)
			var buf []byte
			for i := 0; i < ec.n; i++ {
				o, ok := at(&oids, i)
				if !ok {
					out.b.AppendNull()
					continue
				}
				m, hasMod := at(&mods, i)
				out.b.Append(formatType(buf[:0], o, m, hasMod && m >= 0))
			}
			return out.finish(), nil
		}}, nil
}

func formatType(dst []byte, oid, mod int64, hasMod bool) []byte {
	n, ok := oidTypeNames[oid]
	if !ok {
		return append(dst, "???"...)
	}
	if !hasMod {
		return append(dst, n...)
	}
	switch oid {
	case 1043, 1042: // (n) is typmod - 4
		dst = append(dst, n...)
		dst = append(dst, '(')
		dst = strconv.AppendInt(dst, mod-4, 10)
		return append(dst, ')')
	case 1700: // ((precision << 16) | scale) + 4
		m := mod - 4
		dst = append(dst, n...)
		dst = append(dst, '(')
		dst = strconv.AppendInt(dst, m>>16, 10)
		dst = append(dst, ',')
		dst = strconv.AppendInt(dst, m&0xffff, 10)
		return append(dst, ')')
	case 1114, 1184: // timestamp(p) without time zone
		dst = append(dst, "timestamp("...)
		dst = strconv.AppendInt(dst, mod, 10)
		if oid == 1114 {
			return append(dst, ") without time zone"...)
		}
		return append(dst, ") with time zone"...)
	}
	return append(dst, n...)
}
