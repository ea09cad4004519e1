package engine

import (
	"strings"

	"github.com/clinksql/clinksql/catalog"
)

// ---------- psql: \df ----------

// recogniseFunctionList: psql's \df (and \df+, \df PATTERN): one row per user-defined function whose name the
// pattern (p.proname) selects, in the schema public; aggregates, window functions and procedures (\dfa, \dfw,
// \dfp) are none.
func recogniseFunctionList(n string, _ *introQuery) func(*Session, []*string) (*Result, error) {
	items, rest, ok := selectList(n)
	if !ok || len(items) < 3 || !startsWith(rest, "FROM pg_catalog.pg_proc p") || items[0].name != "Schema" ||
		items[1].name != "Name" || !strings.Contains(n, frag("pg_catalog.pg_get_function_result(")) {
		return nil
	}
	// \dfa, \dfw, \dfp filter on prokind; plain functions are 'f' (psql writes p.prokind <> 'a' ... for \df).
	onlyOther := false
	for _, k := range []string{"p.prokind = 'a'", "p.prokind = 'w'", "p.prokind = 'p'", "p.prokind IN ('a'", "p.prokind IN ('w'", "p.prokind IN ('p'"} {
		onlyOther = onlyOther || strings.Contains(rest, frag(k))
	}
	return func(s *Session, _ []*string) (*Result, error) {
		re, hasPattern, err := namePattern(rest, "p.proname")
		if err != nil {
			return nil, err
		}
		inSchema, err := schemaMatches(rest)
		if err != nil {
			return nil, err
		}
		fns := map[string]*catalog.Function{}
		var rs []*row
		for _, fn := range s.e.cat.Functions() {
			if inSchema && !onlyOther && (!hasPattern || re.MatchString(fn.Name)) {
				fns[fn.Name] = fn
				rs = append(rs, &row{s: s, name: fn.Name})
			}
		}
		of := func(f func(fn *catalog.Function) string) func(r *row) *string {
			return func(r *row) *string { return str(f(fns[r.name])) }
		}
		return project(items, rs, func(it selItem) (colSpec, bool) {
			switch strings.ToLower(it.name) {
			case "schema":
				return constText(it, str("public")), true
			case "name":
				return textOf(it, of(func(fn *catalog.Function) string { return fn.Name })), true
			case "result data type":
				return textOf(it, of(func(fn *catalog.Function) string { return pgTypeName(fn.Returns) })), true
			case "argument data types":
				return textOf(it, of(pgArguments)), true
			case "type":
				return constText(it, str("func")), true
			case "volatility":
				return constText(it, str("immutable")), true
			case "parallel":
				return constText(it, str("safe")), true
			case "owner":
				return textOf(it, func(r *row) *string { return str(r.s.user()) }), true
			case "security":
				return constText(it, str("invoker")), true
			case "language":
				return textOf(it, of(func(fn *catalog.Function) string { return fn.Language })), true
			case "source code", "internal name":
				return textOf(it, of(func(fn *catalog.Function) string {
					if fn.Language == "wasm" {
						return fn.Export
					}
					return fn.Body
				})), true
			}
			return colSpec{}, false
		}), nil
	}
}

// pgArguments is a function's parameter list as pg_get_function_arguments prints it: "price bigint, rate double
// precision".
func pgArguments(fn *catalog.Function) string {
	parts := make([]string, len(fn.Params))
	for i, p := range fn.Params {
		parts[i] = pgTypeName(p.Type)
		if p.Name != "" {
			parts[i] = p.Name + " " + parts[i]
		}
	}
	return strings.Join(parts, ", ")
}
