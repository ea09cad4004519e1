package pgwire

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/clinksql/clinksql/catalog"
)

// Binary forms of nested result values, for a client that asks for them (pgx and JDBC ask for int4[] and record
// in binary). Like the scalars, a value is parsed back from its text form (exec/textform writes it as Postgres'
// array_out and record_out do), guided by the column's Arrow type:
//
//   - an ARRAY whose OID is an array type (int4[], text[], record[], ...: catalog.OID) is array_send's form: the
//     number of dimensions (1, or 0 when empty), a flag for NULL elements, the element's OID, the length and lower
//     bound (1) of the dimension, then each element as a length (-1 for NULL) and its binary form;
//   - a ROW (OID 2249, record) is record_send's: the number of fields, then each field's OID, length (-1 for NULL)
//     and binary form;
//   - a value whose OID is text (a MAP, an ARRAY of ARRAYs: Postgres has no such type for us to name) is its text,
//     which is text's binary form too.

// nestedBinary reports whether the result column type t is a nested type with a binary form here: a ROW, or an
// ARRAY sent as a Postgres array type, whose parts all have one.
func nestedBinary(t arrow.DataType) bool {
	switch t := t.(type) {
	case *arrow.StructType:
		for _, f := range t.Fields() {
			if !partBinary(f.Type) {
				return false
			}
		}
		return true
	case *arrow.ListType:
		return catalog.OID(t) != catalog.OIDText && partBinary(t.Elem())
	}
	return false
}

// partBinary reports whether a part (a field or an element) of type t has a binary form.
func partBinary(t arrow.DataType) bool {
	oid := catalog.OID(t)
	return oid == catalog.OIDText || nestedBinary(t) || (hasBinary(oid) && oid != catalog.OIDUnknown)
}

// appendNestedBinary appends the binary form of a nested value of type t (nestedBinary) given in text form.
func appendNestedBinary(dst []byte, t arrow.DataType, text string) ([]byte, error) {
	switch t := t.(type) {
	case *arrow.StructType:
		fields, err := splitRecord(text)
		if err != nil {
			return dst, err
		}
		if len(fields) != t.NumFields() {
			return dst, fmt.Errorf("record %q has %d fields, its type %d", text, len(fields), t.NumFields())
		}
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(fields)))
		for k, f := range t.Fields() {
			dst = binary.BigEndian.AppendUint32(dst, catalog.OID(f.Type))
			if dst, err = appendPart(dst, f.Type, fields[k]); err != nil {
				return dst, err
			}
		}
		return dst, nil
	case *arrow.ListType:
		elems, err := splitArray(text)
		if err != nil {
			return dst, err
		}
		ndim, hasNull := uint32(1), uint32(0)
		if len(elems) == 0 {
			ndim = 0
		}
		for _, e := range elems {
			if e == nil {
				hasNull = 1
			}
		}
		dst = binary.BigEndian.AppendUint32(dst, ndim)
		dst = binary.BigEndian.AppendUint32(dst, hasNull)
		dst = binary.BigEndian.AppendUint32(dst, catalog.OID(t.Elem()))
		if ndim == 1 {
			dst = binary.BigEndian.AppendUint32(dst, uint32(len(elems)))
			dst = binary.BigEndian.AppendUint32(dst, 1)
		}
		for _, e := range elems {
			if dst, err = appendPart(dst, t.Elem(), e); err != nil {
				return dst, err
			}
		}
		return dst, nil
	}
	return dst, fmt.Errorf("no binary form for %s", t)
}

// appendPart appends a part's length (-1 for NULL) and binary form.
func appendPart(dst []byte, t arrow.DataType, text *string) ([]byte, error) {
	if text == nil {
		return binary.BigEndian.AppendUint32(dst, 0xffffffff), nil
	}
	at := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	var err error
	if nestedBinary(t) {
		dst, err = appendNestedBinary(dst, t, *text)
	} else {
		dst, err = appendBinary(dst, catalog.OID(t), *text)
	}
	if err != nil {
		return dst, err
	}
	binary.BigEndian.PutUint32(dst[at:], uint32(len(dst)-at-4))
	return dst, nil
}

// splitArray splits the text of a one-dimensional array ({a,"b c",NULL}) into its elements, unquoted (nil for
// NULL), as array_in reads them.
func splitArray(text string) ([]*string, error) {
	if len(text) < 2 || text[0] != '{' || text[len(text)-1] != '}' {
		return nil, fmt.Errorf("malformed array literal %q", text)
	}
	body := text[1 : len(text)-1]
	if strings.TrimSpace(body) == "" {
		return nil, nil
	}
	var out []*string
	for i := 0; ; {
		v, quoted, next, err := scanElem(body, i, '{', true)
		if err != nil {
			return nil, fmt.Errorf("malformed array literal %q: %v", text, err)
		}
		if !quoted && strings.EqualFold(v, "NULL") {
			out = append(out, nil)
		} else {
			out = append(out, &v)
		}
		if next >= len(body) {
			return out, nil
		}
		i = next + 1 // past the comma
	}
}

// splitRecord splits the text of a record ((1,"a b",)) into its fields, unquoted (nil for an empty unquoted
// field: NULL), as record_in reads them.
func splitRecord(text string) ([]*string, error) {
	if len(text) < 2 || text[0] != '(' || text[len(text)-1] != ')' {
		return nil, fmt.Errorf("malformed record literal %q", text)
	}
	body := text[1 : len(text)-1]
	var out []*string
	for i := 0; ; {
		v, quoted, next, err := scanElem(body, i, '(', false)
		if err != nil {
			return nil, fmt.Errorf("malformed record literal %q: %v", text, err)
		}
		if !quoted && v == "" {
			out = append(out, nil)
		} else {
			out = append(out, &v)
		}
		if next >= len(body) {
			return out, nil
		}
		i = next + 1
	}
}

// scanElem reads one element of body from i up to the next unquoted comma (or the end): quoted parts lose their
// quotes, a backslash escapes the next byte, and "" inside quotes is one quote (record_out's escape); with trim
// (array_in) blanks around an element are not part of it. An unquoted open bracket (open) is an error: only one
// level is split here. It returns the value, whether any of it was quoted, and the index of the comma (len(body)
// at the end).
func scanElem(body string, i int, open byte, trim bool) (string, bool, int, error) {
	var b strings.Builder
	quoted, inQuotes := false, false
	for ; i < len(body); i++ {
		c := body[i]
		switch {
		case c == '\\':
			if i+1 >= len(body) {
				return "", false, 0, fmt.Errorf("a backslash at the end")
			}
			i++
			b.WriteByte(body[i])
		case c == '"':
			if inQuotes && i+1 < len(body) && body[i+1] == '"' {
				b.WriteByte('"')
				i++
				continue
			}
			inQuotes, quoted = !inQuotes, true
		case inQuotes:
			b.WriteByte(c)
		case c == ',':
			return trimUnquoted(b.String(), quoted || !trim), quoted, i, nil
		case c == open:
			return "", false, 0, fmt.Errorf("a nested value")
		default:
			b.WriteByte(c)
		}
	}
	if inQuotes {
		return "", false, 0, fmt.Errorf("an unterminated quote")
	}
	return trimUnquoted(b.String(), quoted || !trim), quoted, len(body), nil
}

func trimUnquoted(s string, keep bool) string {
	if keep {
		return s
	}
	return strings.TrimSpace(s)
}
