package expr

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/clinksql/clinksql/sqlerr"
)

// JSON held as text (JSON and JSONB are VARCHAR here). Flink's and the SQL standard's functions, lax mode (a
// path that finds nothing, or text that is not JSON, gives NULL, never an error):
//
//	json_value(j, path)     the scalar at path as text (a string without its quotes); NULL for an object or array
//	json_query(j, path)     the object or array at path as JSON text; NULL for a scalar
//	json_exists(j, path)    whether path finds something
//	json_get(j, k)          Postgres' j -> k: the member k (text) or element k (integer, 0-based) as JSON text
//	json_get_text(j, k)     Postgres' j ->> k: the same as text (a string without its quotes, JSON null as NULL)
//
// Paths: $ then .key, ."quoted key", ['key'], [n] (0-based), in any sequence ('$.person.emails[0]'); 'lax' or
// 'strict' may prefix them ('lax $.a'), strict is read as lax. A path must be a constant.

func init() {
	register(bindJSONPath, "json_value", "json_query", "json_exists")
	register(bindJSONGet, "json_get", "json_get_text")
}

// jsonStep is one step of a path: a member name, or an array index when isIndex.
type jsonStep struct {
	key     string
	index   int
	isIndex bool
}

func parseJSONPath(p string) ([]jsonStep, error) {
	bad := func() ([]jsonStep, error) {
		return nil, sqlerr.New(sqlerr.InvalidParameter, sqlerr.NoPos, "invalid JSON path %q", p)
	}
	s := strings.TrimSpace(p)
	for _, mode := range []string{"lax ", "strict "} {
		if strings.HasPrefix(strings.ToLower(s), mode) {
			s = strings.TrimSpace(s[len(mode):])
		}
	}
	if !strings.HasPrefix(s, "$") {
		return bad()
	}
	s = s[1:]
	var steps []jsonStep
	for s != "" {
		switch s[0] {
		case '.':
			s = s[1:]
			if strings.HasPrefix(s, `"`) {
				end := strings.Index(s[1:], `"`)
				if end < 0 {
					return bad()
				}
				steps = append(steps, jsonStep{key: s[1 : 1+end]})
				s = s[2+end:]
				continue
			}
			k := 0
			for k < len(s) && s[k] != '.' && s[k] != '[' {
				k++
			}
			if k == 0 {
				return bad()
			}
			steps = append(steps, jsonStep{key: s[:k]})
			s = s[k:]
		case '[':
			end := strings.IndexByte(s, ']')
			if end < 0 {
				return bad()
			}
			in := strings.TrimSpace(s[1:end])
			s = s[end+1:]
			if len(in) >= 2 && (in[0] == '\'' || in[0] == '"') && in[len(in)-1] == in[0] {
				steps = append(steps, jsonStep{key: in[1 : len(in)-1]})
				continue
			}
			n, err := strconv.Atoi(in)
			if err != nil || n < 0 {
				return bad()
			}
			steps = append(steps, jsonStep{index: n, isIndex: true})
		default:
			return bad()
		}
	}
	return steps, nil
}

// jsonAt follows steps into j and returns the value there as it is written in j (Postgres' json keeps the text:
// j -> 'a' is the member's own text); ok is false when j is not JSON or nothing is there.
func jsonAt(j string, steps []jsonStep) (json.RawMessage, bool) {
	raw := json.RawMessage(strings.TrimSpace(j))
	if !json.Valid(raw) {
		return nil, false
	}
	for _, st := range steps {
		switch {
		case len(raw) > 0 && raw[0] == '{' && !st.isIndex:
			var m map[string]json.RawMessage
			if json.Unmarshal(raw, &m) != nil {
				return nil, false
			}
			v, found := m[st.key]
			if !found {
				return nil, false
			}
			raw = v
		case len(raw) > 0 && raw[0] == '[' && st.isIndex:
			var a []json.RawMessage
			if json.Unmarshal(raw, &a) != nil || st.index >= len(a) {
				return nil, false
			}
			raw = a[st.index]
		default:
			return nil, false
		}
	}
	return raw, true
}

// kindOf is the first byte of a JSON value: '{', '[', '"', 'n' (null), 't'/'f', or a digit or '-'.
func kindOf(raw json.RawMessage) byte {
	if len(raw) == 0 {
		return 0
	}
	return raw[0]
}

// appendCompact appends raw without insignificant white space (JSON_QUERY's result, as Flink returns it).
func appendCompact(dst []byte, raw json.RawMessage) []byte {
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return append(dst, raw...)
	}
	return append(dst, buf.Bytes()...)
}

// appendScalarText appends a scalar's text (a string unquoted); ok is false for null, objects and arrays.
func appendScalarText(dst []byte, raw json.RawMessage) ([]byte, bool) {
	switch kindOf(raw) {
	case '{', '[', 'n', 0:
		return dst, false
	case '"':
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return dst, false
		}
		return append(dst, s...), true
	}
	return append(dst, raw...), true // a number, true or false: as written
}

func bindJSONPath(name string, args []Expr) (Expr, error) {
	if len(args) != 2 || !(isString(args[0].Type()) || isNull(args[0].Type())) {
		return nil, fnNotExist(name, args)
	}
	path, null, ok := ConstantString(args[1])
	if !ok || null {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, sqlerr.NoPos, "%s needs a constant JSON path", strings.ToUpper(name))
	}
	steps, err := parseJSONPath(path)
	if err != nil {
		return nil, err
	}
	render := func(a []string) string { return strings.ToUpper(name) + "(" + a[0] + ", " + a[1] + ")" }
	if name == "json_exists" {
		return &callExpr{name: name, args: args, typ: TypeBool, strict: true, render: render,
			kern: func(ec *evalCtx, args []value) (value, error) {
				s := strsOf(args[0])
				return mapBoolLoop(ec, args[:1], func(i int) (bool, *sqlerr.Error) {
					_, ok := jsonAt(s.at(i), steps)
					return ok, nil
				})
			}}, nil
	}
	query := name == "json_query"
	return &callExpr{name: name, args: args, typ: TypeText, strict: true, render: render,
		kern: func(ec *evalCtx, args []value) (value, error) {
			s := strsOf(args[0])
			return textLoop(ec, args[:1], 16, func(dst []byte, i int) ([]byte, bool) {
				v, ok := jsonAt(s.at(i), steps)
				if !ok {
					return dst, true
				}
				if k := kindOf(v); k == '{' || k == '[' {
					if query {
						return appendCompact(dst, v), false
					}
					return dst, true
				}
				if query {
					return dst, true
				}
				out, ok := appendScalarText(dst, v)
				return out, !ok
			})
		}}, nil
}

func bindJSONGet(name string, args []Expr) (Expr, error) {
	if len(args) != 2 || !(isString(args[0].Type()) || isNull(args[0].Type())) {
		return nil, fnNotExist(name, args)
	}
	byIndex := isInteger(args[1].Type())
	if !byIndex && !isString(args[1].Type()) && !isNull(args[1].Type()) {
		return nil, fnNotExist(name, args)
	}
	k := args[1]
	if byIndex {
		var err error
		if k, err = coerce(k, TypeBigint); err != nil {
			return nil, err
		}
	}
	op := map[string]string{"json_get": " -> ", "json_get_text": " ->> "}[name]
	asText := name == "json_get_text"
	return &callExpr{name: name, args: []Expr{args[0], k}, typ: TypeText, strict: true,
		render: func(a []string) string { return "(" + a[0] + op + a[1] + ")" },
		kern: func(ec *evalCtx, args []value) (value, error) {
			s := strsOf(args[0])
			var keys strs
			var idx prim[int64]
			if byIndex {
				idx = primOf[int64](args[1])
			} else {
				keys = strsOf(args[1])
			}
			return textLoop(ec, args, 16, func(dst []byte, i int) ([]byte, bool) {
				st := jsonStep{}
				if byIndex {
					n := idx.at(i)
					if n < 0 {
						return dst, true
					}
					st.index, st.isIndex = int(n), true
				} else {
					st.key = keys.at(i)
				}
				v, ok := jsonAt(s.at(i), []jsonStep{st})
				if !ok || kindOf(v) == 'n' && asText {
					return dst, true
				}
				if asText {
					if out, ok := appendScalarText(dst, v); ok {
						return out, false
					}
				}
				return append(dst, v...), false
			})
		}}, nil
}
