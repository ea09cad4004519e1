package engine

// Client introspection: the catalog queries that psql and the Postgres drivers send, answered from our catalog.
//
// clinksql has no pg_catalog and no joins, so these queries are recognised by shape: the text is normalised
// (comments dropped, case folded and whitespace collapsed outside quotes, no spaces around punctuation), a family
// is picked by distinctive fragments, its parameters are read out (a relation name regex, an OID, a type name, a
// $n), and the select list is projected item by item: each item is known by its alias or by the column or function
// it reads (relkind, attname, format_type, typname, ...), so a psql or driver version that adds, drops or reorders
// columns still gets one value per column, in its order. Unknown items are NULL, which psql reads as "no" or
// "none". Results carry Postgres' text forms; columns are text, bool or integers (OIDs as bigint).
//
// The families, with what sends them (texts captured from psql 15 and pgjdbc 42.5 against a real PostgreSQL are
// in testdata/introspect):
//
//   - relation list: psql \d, \dt, \dv, \dm, \ds, \di, \dE, \dS, \dp and their + forms, with patterns. Streams and
//     sinks are relkind 'r' (listed by \dt) with Type "stream" / "sink"; views 'v', materialized views 'm'.
//   - relation lookup: the first query of psql \d NAME (c.relname OPERATOR(pg_catalog.~) '^(NAME)$'): oid, schema,
//     name of each match. Object OIDs are a stable hash of the name, at or above 16384.
//   - relation details: \d NAME's pg_class row (relkind and flags: no indexes, rules, triggers, checks) and its
//     pg_attribute rows (column, Postgres type name such as "timestamp(3) without time zone", nullable, storage;
//     \d+ shows a stream's watermark as the description of its event-time column), pg_get_viewdef for views
//     and materialized views (\d+).
//   - empty catalogs: the footer queries of \d NAME and other catalog reads whose answer is "none" in clinksql:
//     policies, extended statistics, publications, inheritance and partitions, rules, triggers, constraints,
//     indexes, foreign tables, sequences, dependencies, user types (\dT), extensions (\dx).
//   - functions (\df, \df+, \df PATTERN): the user-defined functions (introspect_functions.go).
//   - databases (\l: one, "clinksql"), schemas (\dn: "public"), roles (\du: the session user).
//   - pg_type lookups by OID or name: pgjdbc's TypeInfoCache (getPGType, getSQLType, type OID by name, array
//     element/array type/delimiter lookups, which are empty: clinksql has no arrays) and similar driver queries.
//   - pgjdbc's ResultSetMetaData column lookup (relation and column of each (table OID, attnum) pair).
//   - functions without FROM: SELECT version() / pg_catalog.version() (PostgreSQL 16.0, as server_version says),
//     current_schema(), current_schemas(bool), current_database(), current_catalog, current_user, session_user,
//     user, current_role, current_setting('name').
//   - SET SESSION CHARACTERISTICS AS TRANSACTION ... (pgjdbc's setReadOnly/setTransactionIsolation): accepted, does
//     nothing, like BEGIN.
//
// Other statements that name the catalogs (pg_catalog., information_schema., pg_class, pg_type, ::regclass, ...)
// and that our parser cannot read get a 0A000 error naming their first words; ones it can read take the normal path.
//
// Through the extended protocol (Prepare/ExecutePrepared) a recognised query becomes an introStmt: its columns
// come from running it with NULL parameters, its $n types are the client's or inferred from use (an OID is
// bigint, a name text, a bare condition boolean).

import (
	"context"
	"fmt"
	"hash/fnv"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/clinksql/clinksql/catalog"
	"github.com/clinksql/clinksql/sql/parser"
	"github.com/clinksql/clinksql/sqlerr"
)

// introspect answers the catalog queries clients send (psql's \d family, drivers' type lookups, SELECT version())
// from our catalog: ok is false for every other statement.
func (s *Session) introspect(ctx context.Context, sql string) (*Result, bool, error) {
	q, err := recognise(sql)
	if err != nil {
		return nil, true, err
	}
	if q == nil {
		return nil, false, nil
	}
	if q.nparams > 0 {
		return nil, true, sqlerr.New(sqlerr.UndefinedParameter, sqlerr.NoPos, "there is no parameter $1")
	}
	r, err := q.run(s, nil)
	return r, true, err
}

// introStmt is a recognised catalog query prepared through the extended protocol.
type introStmt struct {
	parser.StmtBase
	q *introQuery
}

// prepareIntrospection prepares sql when it is a recognised catalog query (ok true), with the parameter types the
// client gave (any OID is kept: the values arrive as text) or those inferred from where each $n is used.
func (s *Session) prepareIntrospection(sql string, paramOIDs []uint32) (*Prepared, bool, error) {
	q, err := recognise(sql)
	if err != nil {
		return nil, true, err
	}
	if q == nil {
		return nil, false, nil
	}
	p := &Prepared{SQL: sql, Stmt: &introStmt{StmtBase: parser.StmtBase{Start: 0, End: len(sql), Text: sql}, q: q}}
	for i := 0; i < q.nparams; i++ {
		oid := q.paramOIDs[i+1]
		if oid == 0 {
			oid = catalog.OIDText
		}
		if i < len(paramOIDs) && paramOIDs[i] != 0 {
			oid = paramOIDs[i]
		}
		t, ok := catalog.TypeOfOID(oid)
		if !ok {
			t = arrow.BinaryTypes.String
		}
		p.ParamOIDs = append(p.ParamOIDs, oid)
		p.ParamTypes = append(p.ParamTypes, t)
	}
	// The columns do not depend on the parameters' values.
	r, err := q.run(s, make([]*string, q.nparams))
	if err != nil {
		return nil, true, err
	}
	p.Columns = r.Columns
	return p, true, nil
}

// executeIntrospection runs a prepared catalog query with its parameter values (text, nil is NULL).
func (s *Session) executeIntrospection(st *introStmt, values []*string) (*Result, error) {
	if len(values) != st.q.nparams {
		return nil, sqlerr.New(sqlerr.ProtocolViolation, sqlerr.NoPos, "bind message supplies %d parameters, but prepared statement requires %d",
			len(values), st.q.nparams)
	}
	return st.q.run(s, values)
}

// SetUser records the name the client logged in as (pgwire's startup user): current_user, \du and the Owner
// column of \d show it. Without it they show "clinksql".
func (s *Session) SetUser(name string) {
	s.vars["session_authorization"] = name
}

func (s *Session) user() string {
	if u := s.vars["session_authorization"]; u != "" {
		return u
	}
	return "clinksql"
}

// introQuery is a recognised catalog query.
type introQuery struct {
	nparams   int
	paramOIDs map[int]uint32 // inferred types of $n, by n
	run       func(s *Session, args []*string) (*Result, error)
}

// recognise returns the catalog query sql is, nil when it is none (err when it names the catalogs but is neither
// recognised nor readable by our parser).
func recognise(sql string) (*introQuery, error) {
	n := normalize(sql)
	if n == "" || indexTop(n, ";") >= 0 {
		return nil, nil
	}
	q := &introQuery{paramOIDs: map[int]uint32{}}
	for _, f := range families {
		if run := f(n, q); run != nil {
			q.run = run
			q.nparams = maxParamRef(n)
			return q, nil
		}
	}
	if mentionsCatalog(n) {
		if _, err := parser.Parse(sql); err != nil {
			e := sqlerr.New(sqlerr.FeatureNotSupported, sqlerr.NoPos, "clinksql does not answer this catalog query: %s", firstWords(sql, 8))
			e.Hint = `clinksql answers psql's \d, \dt, \dv, \dm, \d NAME, \l and \dn and the usual driver type lookups; SHOW STREAMS, SHOW SINKS, SHOW VIEWS and DESCRIBE name show the catalog.`
			return nil, e
		}
	}
	return nil, nil
}

// families are the recognisers, most specific first: each returns nil when n is not its query.
var families = []func(n string, q *introQuery) func(*Session, []*string) (*Result, error){
	recogniseFunctions,
	recogniseSetCharacteristics,
	recogniseRelationList,
	recogniseRelationLookup,
	recogniseRelationInfo,
	recogniseAttributes,
	recogniseViewDef,
	recogniseFieldMetadata,
	recogniseTypeLookup,
	recogniseDatabases,
	recogniseSchemas,
	recogniseRoles,
	recogniseFunctionList, // introspect_functions.go
	recogniseEmpty,
}

var catalogWords = []string{"pg_catalog.", "information_schema.", "pg_class", "pg_type", "pg_namespace", "pg_attribute",
	"pg_proc", "pg_database", "pg_roles", "pg_settings", "pg_index", "pg_constraint", "pg_description", "pg_tables",
	"pg_views", "current_schemas(", "::regclass", "::regtype", "::regproc", "::oid", "operator(pg_catalog."}

func mentionsCatalog(n string) bool {
	for _, w := range catalogWords {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// firstWords returns the first n words of sql, for an error message.
func firstWords(sql string, n int) string {
	w := strings.Fields(sql)
	if len(w) > n {
		return strings.Join(w[:n], " ") + " ..."
	}
	return strings.Join(w, " ")
}

// ---------- normalisation and scanning ----------

// normalize folds sql for matching: comments dropped, ASCII letters lower-cased and whitespace collapsed outside
// string literals and quoted identifiers (which stay as written), no space next to ( ) , = < > ! ~ :, and no
// trailing semicolons.
func normalize(sql string) string {
	b := make([]byte, 0, len(sql))
	space := false
	tight := func(c byte) bool { return strings.IndexByte("(),=<>!~:", c) >= 0 }
	put := func(c byte) {
		if space && len(b) > 0 && !tight(b[len(b)-1]) && !tight(c) {
			b = append(b, ' ')
		}
		space = false
		b = append(b, c)
	}
	for i := 0; i < len(sql); {
		c := sql[i]
		switch {
		case c == '\'' || c == '"':
			put(c)
			esc := c == '\'' && isEString(b[:len(b)-1])
			j := i + 1
			for j < len(sql) {
				if esc && sql[j] == '\\' && j+1 < len(sql) {
					j += 2
					continue
				}
				if sql[j] == c {
					if j+1 < len(sql) && sql[j+1] == c {
						j += 2
						continue
					}
					break
				}
				j++
			}
			end := min(j+1, len(sql))
			b = append(b, sql[i+1:end]...)
			i = end
		case c == '-' && strings.HasPrefix(sql[i:], "--"):
			for i < len(sql) && sql[i] != '\n' {
				i++
			}
			space = true
		case c == '/' && strings.HasPrefix(sql[i:], "/*"):
			if j := strings.Index(sql[i+2:], "*/"); j >= 0 {
				i += j + 4
			} else {
				i = len(sql)
			}
			space = true
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			space = true
			i++
		default:
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			put(c)
			i++
		}
	}
	out := string(b)
	for {
		t := strings.TrimRight(out, " ;")
		if t == out {
			return out
		}
		out = t
	}
}

// isEString reports whether a string literal starting after prefix is an E'...' literal (backslash escapes).
func isEString(prefix []byte) bool {
	n := len(prefix)
	return n > 0 && prefix[n-1] == 'e' && (n == 1 || !isIdent(prefix[n-2]))
}

func isIdent(c byte) bool {
	return c == '_' || c == '$' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c >= 0x80
}

// literalEnd returns the index just past the quoted literal or identifier starting at s[i].
func literalEnd(s string, i int) int {
	q := s[i]
	esc := q == '\'' && isEString([]byte(s[:i]))
	for j := i + 1; j < len(s); j++ {
		switch {
		case esc && s[j] == '\\':
			j++
		case s[j] == q:
			if j+1 < len(s) && s[j+1] == q {
				j++
				continue
			}
			return j + 1
		}
	}
	return len(s)
}

// scanTop calls fn at every position of s outside quotes with the parenthesis depth there, until fn returns false.
func scanTop(s string, fn func(i, depth int) bool) {
	depth := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c == '\'' || c == '"' {
			if !fn(i, depth) {
				return
			}
			i = literalEnd(s, i)
			continue
		}
		switch c {
		case '(', '[':
			if !fn(i, depth) {
				return
			}
			depth++
			i++
			continue
		case ')', ']':
			depth--
		}
		if !fn(i, depth) {
			return
		}
		i++
	}
}

// indexTop returns the first index of word at depth 0 outside quotes, as a whole word when it starts or ends with
// a letter; -1 when there is none.
func indexTop(s, word string) int {
	at := -1
	scanTop(s, func(i, depth int) bool {
		if depth == 0 && strings.HasPrefix(s[i:], word) &&
			(!isIdent(word[0]) || i == 0 || !isIdent(s[i-1])) &&
			(!isIdent(word[len(word)-1]) || i+len(word) == len(s) || !isIdent(s[i+len(word)])) {
			at = i
			return false
		}
		return true
	})
	return at
}

// lastIndexTop is indexTop's last occurrence.
func lastIndexTop(s, word string) int {
	at := -1
	for off := 0; ; {
		i := indexTop(s[off:], word)
		if i < 0 {
			return at
		}
		at = off + i
		off = at + 1
	}
}

// splitTop splits s at the commas at depth 0 outside quotes.
func splitTop(s string) []string {
	var parts []string
	start := 0
	scanTop(s, func(i, depth int) bool {
		if depth == 0 && s[i] == ',' {
			parts = append(parts, strings.TrimSpace(s[start:i]))
			start = i + 1
		}
		return true
	})
	return append(parts, strings.TrimSpace(s[start:]))
}

// unquoteLiteral reads the string literal at s[i] ('...' or E'...' whose e is at s[i-1]).
func unquoteLiteral(s string, i int) (string, int) {
	end := literalEnd(s, i)
	body := s[i+1 : max(end-1, i+1)]
	if isEString([]byte(s[:i])) {
		var b strings.Builder
		for j := 0; j < len(body); j++ {
			if body[j] == '\\' && j+1 < len(body) {
				j++
				switch body[j] {
				case 'n':
					b.WriteByte('\n')
				case 't':
					b.WriteByte('\t')
				default:
					b.WriteByte(body[j])
				}
				continue
			}
			b.WriteByte(body[j])
		}
		body = b.String()
	}
	return strings.ReplaceAll(body, "''", "'"), end
}

var paramRef = regexp.MustCompile(`\$([0-9]+)`)

// maxParamRef returns the highest $n outside quotes.
func maxParamRef(n string) int {
	m := 0
	scanTop(n, func(i, _ int) bool {
		if n[i] == '$' && (i == 0 || !isIdent(n[i-1])) {
			if loc := paramRef.FindStringSubmatch(n[i:]); loc != nil && strings.HasPrefix(n[i:], loc[0]) {
				if v, err := strconv.Atoi(loc[1]); err == nil && v > m {
					m = v
				}
			}
		}
		return true
	})
	return m
}

// startsWith reports whether n starts with the normalised fragment f as whole words.
func startsWith(n, f string) bool {
	f = frag(f)
	return strings.HasPrefix(n, f) && (len(n) == len(f) || !isIdent(f[len(f)-1]) || !isIdent(n[len(f)]))
}

// frag normalises a fragment written in code the way normalize folds the queries.
func frag(s string) string { return normalize(s) }

// ---------- select lists ----------

// selItem is one item of a select list.
type selItem struct {
	expr  string // the expression, normalised, without its alias
	name  string // the result column's name: the alias, or what Postgres names it
	key   string // what it reads: the column or function name, or a marker such as "onpath"
	lit   *string
	isLit bool
}

var (
	qualifiedRef = regexp.MustCompile(`(?:^|[^a-z0-9_.$])([a-z_][a-z0-9_]*)\.([a-z_][a-z0-9_]*)\b`)
	plainRef     = regexp.MustCompile(`^(?:[a-z_][a-z0-9_]*\.)*([a-z_][a-z0-9_]*)$`)
	funcCall     = regexp.MustCompile(`^(?:[a-z_][a-z0-9_]*\.)?([a-z_][a-z0-9_]*)\(`)
	numberLit    = regexp.MustCompile(`^-?[0-9]+(\.[0-9]+)?$`)
	leadingIdent = regexp.MustCompile(`^([a-z_][a-z0-9_]*)(?:[^a-z0-9_.(]|$)`)
	keywords     = []string{"case", "not", "select", "array", "exists", "null", "true", "false"}
)

// selectList splits a normalised "select ... from ..." into its items and the text from FROM on ("" without FROM).
func selectList(n string) ([]selItem, string, bool) {
	if !strings.HasPrefix(n, "select ") {
		return nil, "", false
	}
	body, rest := n[len("select "):], ""
	if i := indexTop(body, "from"); i >= 0 {
		body, rest = strings.TrimSpace(body[:i]), body[i:]
	}
	var items []selItem
	for _, part := range splitTop(body) {
		items = append(items, parseItem(part))
	}
	return items, rest, true
}

func parseItem(part string) selItem {
	it := selItem{expr: part}
	if i := lastIndexTop(part, "as"); i > 0 && i+2 < len(part) && part[i+2] == ' ' {
		alias := strings.TrimSpace(part[i+2:])
		if alias != "" && (plainRef.MatchString(alias) || alias[0] == '"') {
			it.expr = strings.TrimSpace(part[:i])
			it.name = unquoteIdent(alias)
		}
	}
	e := it.expr
	if i := indexTop(e, "::"); i > 0 {
		e = e[:i] // a cast does not change what an item reads
	}
	switch {
	case e == "null":
		it.isLit = true
	case e == "true" || e == "false":
		v := e[:1]
		it.lit, it.isLit = &v, true
	case numberLit.MatchString(e):
		it.lit, it.isLit = &e, true
	case strings.HasPrefix(e, "'") || strings.HasPrefix(e, "e'"):
		at := strings.IndexByte(e, '\'')
		if literalEnd(e, at) == len(e) {
			v, _ := unquoteLiteral(e, at)
			it.lit, it.isLit = &v, true
		}
	}
	if !it.isLit {
		switch {
		case strings.Contains(e, "any(current_schemas("):
			it.key = "onpath"
		case plainRef.MatchString(e):
			it.key = plainRef.FindStringSubmatch(e)[1]
		case funcCall.MatchString(e) && closesAt(e, strings.IndexByte(e, '(')) == len(e)-1:
			it.key = funcCall.FindStringSubmatch(e)[1]
		default:
			// The first column it reads.
			bare := stripLiterals(e)
			for _, m := range qualifiedRef.FindAllStringSubmatchIndex(bare, -1) {
				if end := m[5]; end < len(bare) && bare[end] == '(' {
					continue // a schema-qualified function
				}
				it.key = bare[m[4]:m[5]]
				break
			}
			if m := leadingIdent.FindStringSubmatch(bare); it.key == "" && m != nil && !slices.Contains(keywords, m[1]) {
				it.key = m[1]
			}
		}
	}
	if it.name == "" {
		switch {
		case it.key != "" && it.key != "onpath":
			it.name = it.key
		case strings.HasPrefix(e, "case "):
			it.name = "case"
		default:
			it.name = "?column?"
		}
	}
	return it
}

// closesAt returns the index of the parenthesis that closes the one at s[open].
func closesAt(s string, open int) int {
	at := -1
	depth := 0
	scanTop(s[open:], func(i, _ int) bool {
		switch s[open+i] {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				at = open + i
				return false
			}
		}
		return true
	})
	return at
}

// stripLiterals empties the string literals and quoted identifiers of s.
func stripLiterals(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		if s[i] == '\'' || s[i] == '"' {
			end := literalEnd(s, i)
			b.WriteByte(s[i])
			b.WriteByte(s[i])
			i = end
			continue
		}
		b.WriteByte(s[i])
		i++
	}
	return b.String()
}

func unquoteIdent(s string) string {
	if len(s) >= 2 && s[0] == '"' {
		return strings.ReplaceAll(s[1:len(s)-1], `""`, `"`)
	}
	return s
}

// ---------- result building ----------

// row is what one result row describes: an object, one of its columns, a type, a database or schema.
type row struct {
	s    *Session
	obj  *catalog.Object
	col  int // index into obj.Columns
	typ  *pgType
	name string // a database, schema or role
}

// colSpec is how one select item is answered.
type colSpec struct {
	col Column
	val func(r *row) *string
}

// valueFn answers one item of a family's select list; ok false leaves it NULL.
type valueFn func(it selItem) (colSpec, bool)

// project builds a result of one row per element of rs, each item answered by fn (literals as written, the rest
// NULL when fn does not know them).
func project(items []selItem, rs []*row, fn valueFn) *Result {
	specs := make([]colSpec, len(items))
	for i, it := range items {
		switch {
		case it.isLit:
			v := it.lit
			c := textColumn(it.name)
			if v != nil && (*v == "t" || *v == "f") && !strings.HasPrefix(it.expr, "'") {
				c = boolCol(it.name)
			} else if v != nil && numberLit.MatchString(it.expr) {
				c = intCol(it.name, catalog.OIDInt4)
			}
			specs[i] = colSpec{c, func(*row) *string { return v }}
		default:
			// An alias says what an item means (typinput = ... AS is_array); else what it reads does.
			alias := it
			alias.key = strings.ToLower(it.name)
			sp, ok := fn(alias)
			if !ok && alias.key != it.key {
				sp, ok = fn(it)
			}
			if !ok {
				sp = colSpec{textColumn(it.name), func(*row) *string { return nil }}
			}
			specs[i] = sp
		}
	}
	res := &Result{Tag: fmt.Sprintf("SELECT %d", len(rs))}
	for _, sp := range specs {
		res.Columns = append(res.Columns, sp.col)
	}
	for _, r := range rs {
		vals := make([]*string, len(specs))
		for i, sp := range specs {
			vals[i] = sp.val(r)
		}
		res.Rows = append(res.Rows, vals)
	}
	return res
}

func boolCol(name string) Column {
	return Column{Name: name, Type: arrow.FixedWidthTypes.Boolean, OID: catalog.OIDBool}
}

func intCol(name string, oid uint32) Column {
	t, _ := catalog.TypeOfOID(oid)
	return Column{Name: name, Type: t, OID: oid}
}

func str(v string) *string { return &v }

func boolStr(b bool) *string {
	if b {
		return str("t")
	}
	return str("f")
}

func constText(it selItem, v *string) colSpec {
	return colSpec{textColumn(it.name), func(*row) *string { return v }}
}

func constBool(it selItem, b bool) colSpec {
	v := boolStr(b)
	return colSpec{boolCol(it.name), func(*row) *string { return v }}
}

func constInt(it selItem, oid uint32, n int64) colSpec {
	v := str(strconv.FormatInt(n, 10))
	return colSpec{intCol(it.name, oid), func(*row) *string { return v }}
}

func textOf(it selItem, f func(r *row) *string) colSpec { return colSpec{textColumn(it.name), f} }

// ---------- our objects as Postgres relations ----------

// relOID is an object's OID: a stable hash of its name, at or above 16384 (Postgres' first user OID) and below 2^31.
func relOID(name string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(name))
	return 16384 + h.Sum32()%(1<<31-16384)
}

func oidStr(o *catalog.Object) *string { return str(strconv.FormatUint(uint64(relOID(o.Name)), 10)) }

func relKind(o *catalog.Object) string {
	switch o.Kind {
	case catalog.View:
		return "v"
	case catalog.MaterializedView:
		return "m"
	}
	return "r" // streams and sinks are table-like
}

func kindLabel(o *catalog.Object) string {
	switch o.Kind {
	case catalog.Stream:
		return "stream"
	case catalog.Sink:
		return "sink"
	case catalog.View:
		return "view"
	}
	return "materialized view"
}

// relDescription is what \d+ shows as an object's description: its connector and options, a watermark, the
// job that maintains a materialized view.
func relDescription(o *catalog.Object) *string {
	var parts []string
	switch o.Kind {
	case catalog.Stream, catalog.Sink:
		if c := o.Connector(); c != "" {
			p := "connector " + c
			if opts := optionList(o.Options); opts != "" {
				p += " (" + opts + ")"
			}
			parts = append(parts, p)
		} else {
			parts = append(parts, "fed by INSERT")
		}
	case catalog.MaterializedView:
		if o.Job != "" {
			parts = append(parts, "maintained by "+o.Job)
		}
	}
	if o.Watermark != nil {
		parts = append(parts, "watermark for "+o.Watermark.Column+" AS "+o.Watermark.Expr)
	}
	if len(parts) == 0 {
		return nil
	}
	return str(strings.Join(parts, "; "))
}

// pgTypeName is a column type as Postgres' format_type writes it.
func pgTypeName(t catalog.Type) string {
	switch t.Name {
	case "BOOLEAN":
		return "boolean"
	case "SMALLINT":
		return "smallint"
	case "INT":
		return "integer"
	case "BIGINT":
		return "bigint"
	case "REAL":
		return "real"
	case "DOUBLE":
		return "double precision"
	case "DECIMAL":
		if t.Precision >= 0 {
			return fmt.Sprintf("numeric(%d,%d)", t.Precision, max(t.Scale, 0))
		}
		return "numeric"
	case "VARCHAR":
		if t.Precision >= 0 {
			return fmt.Sprintf("character varying(%d)", t.Precision)
		}
		return "character varying"
	case "TEXT":
		return "text"
	case "DATE":
		return "date"
	case "TIMESTAMP":
		if t.Precision >= 0 {
			return fmt.Sprintf("timestamp(%d) without time zone", t.Precision)
		}
		return "timestamp without time zone"
	case "INTERVAL":
		return "interval"
	case "BYTEA":
		return "bytea"
	}
	return strings.ToLower(t.String())
}

// typeOID is the Postgres type OID of a declared column type.
func typeOID(t catalog.Type) uint32 {
	if t.Name == "TEXT" {
		return catalog.OIDText
	}
	if at, err := t.Arrow(); err == nil {
		return catalog.OID(at)
	}
	return catalog.OIDUnknown
}

// attStorage is Postgres' attstorage of a type: p(lain), m(ain) or (e)x(tended).
func attStorage(t catalog.Type) string {
	switch t.Name {
	case "VARCHAR", "TEXT", "BYTEA":
		return "x"
	case "DECIMAL":
		return "m"
	}
	return "p"
}

// objectByOID returns the object whose OID is oid (decimal), nil when none has it.
func (s *Session) objectByOID(oid string) *catalog.Object {
	for _, o := range s.e.cat.Objects() {
		if strconv.FormatUint(uint64(relOID(o.Name)), 10) == oid {
			return o
		}
	}
	return nil
}

// namePattern reads psql's "col OPERATOR(pg_catalog.~) '^(...)$'" (or "col ~ '...'") filter on col: ok is false
// when there is none.
func namePattern(n, col string) (*regexp.Regexp, bool, error) {
	for _, f := range []string{frag(col + " OPERATOR(pg_catalog.~) '"), frag(col + " ~ '")} {
		f = strings.TrimSuffix(f, "'")
		i := strings.Index(n, f)
		if i < 0 {
			continue
		}
		at := i + len(f)
		if at >= len(n) || n[at] != '\'' {
			continue
		}
		pat, _ := unquoteLiteral(n, at)
		re, err := regexp.Compile(pat)
		if err != nil {
			return nil, true, sqlerr.New(sqlerr.InvalidRegex, sqlerr.NoPos, "invalid regular expression %q: %v", pat, err)
		}
		return re, true, nil
	}
	return nil, false, nil
}

// schemaMatches applies psql's schema pattern (\d public.x, \dn pattern) to "public".
func schemaMatches(n string) (bool, error) {
	re, ok, err := namePattern(n, "n.nspname")
	if err != nil || !ok {
		return err == nil, err
	}
	return re.MatchString("public"), nil
}

var quotedOID = regexp.MustCompile(`^'?([0-9]+)'?`)

// oidAfter returns the OID written after the fragment f ("c.oid = '16384'"), "" when f is not there.
func oidAfter(n, f string) string {
	i := strings.Index(n, frag(f))
	if i < 0 {
		return ""
	}
	m := quotedOID.FindStringSubmatch(n[i+len(frag(f)):])
	if m == nil {
		return ""
	}
	return m[1]
}

// ---------- psql: relation list ----------

// recogniseRelationList: psql's \d, \dt, \dv, \dm, \di, \ds, \dE, \dS, \dp (and + forms): one row per object
// whose relkind is listed.
func recogniseRelationList(n string, _ *introQuery) func(*Session, []*string) (*Result, error) {
	items, rest, ok := selectList(n)
	if !ok || len(items) < 3 || !startsWith(rest, "FROM pg_catalog.pg_class c") ||
		items[0].name != "Schema" || items[1].name != "Name" || items[2].name != "Type" {
		return nil
	}
	var kinds []string
	if i := strings.Index(rest, frag("c.relkind IN (")); i >= 0 {
		list := rest[i+len(frag("c.relkind IN (")):]
		list = list[:max(closesAt("("+list, 0)-1, 0)]
		for _, k := range splitTop(list) {
			if strings.HasPrefix(k, "'") {
				v, _ := unquoteLiteral(k, 0)
				kinds = append(kinds, v)
			}
		}
	}
	return func(s *Session, _ []*string) (*Result, error) {
		rs, err := matchingObjects(s, rest, kinds)
		if err != nil {
			return nil, err
		}
		return project(items, rs, func(it selItem) (colSpec, bool) {
			switch strings.ToLower(it.name) {
			case "schema":
				return constText(it, str("public")), true
			case "name":
				return textOf(it, func(r *row) *string { return str(r.obj.Name) }), true
			case "type":
				return textOf(it, func(r *row) *string { return str(kindLabel(r.obj)) }), true
			case "owner":
				return textOf(it, func(r *row) *string { return str(r.s.user()) }), true
			case "persistence":
				return constText(it, str("permanent")), true
			case "description":
				return textOf(it, func(r *row) *string { return relDescription(r.obj) }), true
			}
			return colSpec{}, false
		}), nil
	}
}

// matchingObjects returns the catalog objects that psql's name and schema patterns in rest select (c.relname,
// n.nspname), of the given relkinds (all when nil).
func matchingObjects(s *Session, rest string, kinds []string) ([]*row, error) {
	re, hasPattern, err := namePattern(rest, "c.relname")
	if err != nil {
		return nil, err
	}
	inSchema, err := schemaMatches(rest)
	if err != nil || !inSchema {
		return nil, err
	}
	var rs []*row
	for _, o := range s.e.cat.Objects() {
		if (kinds == nil || slices.Contains(kinds, relKind(o))) && (!hasPattern || re.MatchString(o.Name)) {
			rs = append(rs, &row{s: s, obj: o})
		}
	}
	return rs, nil
}

// ---------- psql: \d NAME ----------

// recogniseRelationLookup: the first query of \d NAME: oid, schema and name of the objects NAME matches.
func recogniseRelationLookup(n string, _ *introQuery) func(*Session, []*string) (*Result, error) {
	if !startsWith(n, "SELECT c.oid, n.nspname, c.relname FROM pg_catalog.pg_class c") {
		return nil
	}
	items, rest, _ := selectList(n)
	return func(s *Session, _ []*string) (*Result, error) {
		rs, err := matchingObjects(s, rest, nil)
		if err != nil {
			return nil, err
		}
		return project(items, rs, relationValues), nil
	}
}

// relationValues answers pg_class (and pg_namespace) items about an object.
func relationValues(it selItem) (colSpec, bool) {
	switch it.key {
	case "oid", "attrelid":
		return colSpec{intCol(it.name, catalog.OIDInt8), func(r *row) *string { return oidStr(r.obj) }}, true
	case "nspname":
		return constText(it, str("public")), true
	case "relname":
		return textOf(it, func(r *row) *string { return str(r.obj.Name) }), true
	case "relkind":
		return textOf(it, func(r *row) *string { return str(relKind(r.obj)) }), true
	case "relchecks":
		return constInt(it, catalog.OIDInt2, 0), true
	case "relhasindex", "relhasrules", "relhastriggers", "relrowsecurity", "relforcerowsecurity", "relhasoids",
		"relispartition", "relhassubclass":
		return constBool(it, false), true
	case "reltablespace", "reloftype":
		if strings.HasPrefix(it.expr, "case ") {
			return constText(it, str("")), true // psql's "CASE WHEN c.reloftype = 0 THEN '' ..."
		}
		return constInt(it, catalog.OIDInt8, 0), true
	case "relpersistence":
		return constText(it, str("p")), true
	case "relreplident":
		return constText(it, str("d")), true
	case "array_to_string", "reloptions":
		return constText(it, str("")), true
	case "relowner", "pg_get_userbyid":
		return textOf(it, func(r *row) *string { return str(r.s.user()) }), true
	}
	return colSpec{}, false
}

// recogniseRelationInfo: \d NAME's pg_class row for one OID (relkind and flags).
func recogniseRelationInfo(n string, _ *introQuery) func(*Session, []*string) (*Result, error) {
	if !startsWith(n, "SELECT c.relchecks, c.relkind,") {
		return nil
	}
	items, rest, _ := selectList(n)
	if !startsWith(rest, "FROM pg_catalog.pg_class c") {
		return nil
	}
	oid := oidAfter(rest, "WHERE c.oid = ")
	return func(s *Session, _ []*string) (*Result, error) {
		var rs []*row
		if o := s.objectByOID(oid); o != nil {
			rs = append(rs, &row{s: s, obj: o})
		}
		return project(items, rs, relationValues), nil
	}
}

// recogniseAttributes: \d NAME's column list (pg_attribute of one OID).
func recogniseAttributes(n string, _ *introQuery) func(*Session, []*string) (*Result, error) {
	if !startsWith(n, "SELECT a.attname,") {
		return nil
	}
	items, rest, _ := selectList(n)
	if !startsWith(rest, "FROM pg_catalog.pg_attribute a") {
		return nil
	}
	oid := oidAfter(rest, "a.attrelid = ")
	return func(s *Session, _ []*string) (*Result, error) {
		var rs []*row
		if o := s.objectByOID(oid); o != nil {
			for i := range o.Columns {
				rs = append(rs, &row{s: s, obj: o, col: i})
			}
		}
		return project(items, rs, attributeValues), nil
	}
}

// attributeValues answers pg_attribute items about one column of an object.
func attributeValues(it selItem) (colSpec, bool) {
	colType := func(r *row) catalog.Type { return r.obj.Columns[r.col].Type }
	switch it.key {
	case "attname":
		return textOf(it, func(r *row) *string { return str(r.obj.Columns[r.col].Name) }), true
	case "format_type":
		return textOf(it, func(r *row) *string { return str(pgTypeName(colType(r))) }), true
	case "atttypid":
		return colSpec{intCol(it.name, catalog.OIDInt8), func(r *row) *string {
			return str(strconv.FormatUint(uint64(typeOID(colType(r))), 10))
		}}, true
	case "attnum":
		return colSpec{intCol(it.name, catalog.OIDInt2), func(r *row) *string { return str(strconv.Itoa(r.col + 1)) }}, true
	case "attnotnull":
		// A table's key columns are NOT NULL (a NULL in one is refused); every other column takes NULL.
		return colSpec{boolCol(it.name), func(r *row) *string {
			return boolStr(r.obj.IsTable() && slices.Contains(r.obj.PrimaryKey, r.obj.Columns[r.col].Name))
		}}, true
	case "atthasdef", "attisdropped":
		return constBool(it, false), true
	case "attidentity", "attgenerated", "attcompression":
		return constText(it, str("")), true
	case "attstorage":
		return textOf(it, func(r *row) *string { return str(attStorage(colType(r))) }), true
	case "col_description":
		// \d+ shows a stream's watermark as the description of its event-time column.
		return textOf(it, func(r *row) *string {
			if w := r.obj.Watermark; w != nil && w.Column == r.obj.Columns[r.col].Name {
				return str("watermark: " + w.Expr)
			}
			return nil
		}), true
	}
	return colSpec{}, false
}

// recogniseViewDef: \d+ of a view or materialized view: its query.
func recogniseViewDef(n string, _ *introQuery) func(*Session, []*string) (*Result, error) {
	if !startsWith(n, "SELECT pg_catalog.pg_get_viewdef(") || strings.Contains(n, " from ") {
		return nil
	}
	oid := oidAfter(n, "pg_catalog.pg_get_viewdef(")
	return func(s *Session, _ []*string) (*Result, error) {
		res := &Result{Tag: "SELECT 1", Columns: []Column{textColumn("pg_get_viewdef")}}
		var def *string
		if o := s.objectByOID(oid); o != nil && o.Query != "" {
			def = str(" " + o.Query + ";")
		}
		res.Rows = [][]*string{{def}}
		return res, nil
	}
}

// ---------- databases, schemas, roles ----------

// recogniseDatabases: \l (and drivers listing databases): one database, "clinksql".
func recogniseDatabases(n string, _ *introQuery) func(*Session, []*string) (*Result, error) {
	items, rest, ok := selectList(n)
	if !ok || !startsWith(rest, "FROM pg_catalog.pg_database d") {
		return nil
	}
	return func(s *Session, _ []*string) (*Result, error) {
		re, has, err := namePattern(rest, "d.datname")
		if err != nil {
			return nil, err
		}
		var rs []*row
		if !has || re.MatchString("clinksql") {
			rs = append(rs, &row{s: s, name: "clinksql"})
		}
		return project(items, rs, func(it selItem) (colSpec, bool) {
			switch strings.ToLower(it.name) {
			case "name", "datname":
				return constText(it, str("clinksql")), true
			case "owner":
				return textOf(it, func(r *row) *string { return str(r.s.user()) }), true
			case "encoding":
				return constText(it, str("UTF8")), true
			case "collate", "ctype":
				return constText(it, str("C")), true
			case "locale provider":
				return constText(it, str("libc")), true
			case "tablespace":
				return constText(it, str("pg_default")), true
			}
			return colSpec{}, false
		}), nil
	}
}

// recogniseSchemas: \dn: one schema, "public".
func recogniseSchemas(n string, _ *introQuery) func(*Session, []*string) (*Result, error) {
	items, rest, ok := selectList(n)
	if !ok || !startsWith(rest, "FROM pg_catalog.pg_namespace n") || strings.Contains(rest, " join ") ||
		len(items) == 0 || items[0].key != "nspname" {
		return nil
	}
	return func(s *Session, _ []*string) (*Result, error) {
		in, err := schemaMatches(rest)
		if err != nil {
			return nil, err
		}
		var rs []*row
		if in {
			rs = append(rs, &row{s: s, name: "public"})
		}
		return project(items, rs, func(it selItem) (colSpec, bool) {
			switch {
			case it.key == "nspname":
				return constText(it, str("public")), true
			case strings.EqualFold(it.name, "owner") || it.key == "pg_get_userbyid":
				return textOf(it, func(r *row) *string { return str(r.s.user()) }), true
			case strings.EqualFold(it.name, "description") || it.key == "obj_description":
				return constText(it, str("standard public schema")), true
			}
			return colSpec{}, false
		}), nil
	}
}

// recogniseRoles: \du / \dg: the session's user, a superuser.
func recogniseRoles(n string, _ *introQuery) func(*Session, []*string) (*Result, error) {
	items, rest, ok := selectList(n)
	if !ok || !startsWith(rest, "FROM pg_catalog.pg_roles r") {
		return nil
	}
	return func(s *Session, _ []*string) (*Result, error) {
		re, has, err := namePattern(rest, "r.rolname")
		if err != nil {
			return nil, err
		}
		var rs []*row
		if u := s.user(); !has || re.MatchString(u) {
			rs = append(rs, &row{s: s, name: u})
		}
		return project(items, rs, func(it selItem) (colSpec, bool) {
			switch it.key {
			case "rolname":
				return textOf(it, func(r *row) *string { return str(r.name) }), true
			case "rolsuper", "rolinherit", "rolcreaterole", "rolcreatedb", "rolcanlogin":
				return constBool(it, true), true
			case "rolreplication", "rolbypassrls":
				return constBool(it, false), true
			case "rolconnlimit":
				return constInt(it, catalog.OIDInt4, -1), true
			}
			if it.name == "memberof" {
				return constText(it, str("{}")), true
			}
			return colSpec{}, false
		}), nil
	}
}

// ---------- catalogs that are empty in clinksql ----------

// emptyCatalogs are the catalogs that hold nothing for clinksql's objects, as they appear after FROM or JOIN.
var emptyCatalogs = []string{"pg_catalog.pg_policy", "pg_catalog.pg_statistic_ext", "pg_catalog.pg_publication",
	"pg_catalog.pg_inherits", "pg_catalog.pg_rewrite", "pg_catalog.pg_trigger", "pg_catalog.pg_constraint",
	"pg_catalog.pg_index", "pg_catalog.pg_foreign_table", "pg_catalog.pg_partitioned_table",
	"pg_catalog.pg_sequence", "pg_catalog.pg_depend", "pg_catalog.pg_proc", "pg_catalog.pg_extension",
	"pg_catalog.pg_event_trigger", "pg_catalog.pg_subscription", "pg_catalog.pg_attrdef", "pg_catalog.pg_description"}

// recogniseEmpty: \d NAME's footers (policies, statistics, publications, parents and partitions, rules,
// triggers, constraints, indexes, ...), \dT (clinksql has no user-defined types), \dx: no rows, with the
// query's columns.
func recogniseEmpty(n string, _ *introQuery) func(*Session, []*string) (*Result, error) {
	items, rest, ok := selectList(n)
	if !ok || rest == "" {
		return nil
	}
	hit := false
	for _, c := range emptyCatalogs {
		if strings.Contains(rest, c) {
			hit = true
			break
		}
	}
	// \dT: the user-defined types visible on the search path.
	if startsWith(rest, "FROM pg_catalog.pg_type t") && strings.Contains(rest, "pg_type_is_visible(") {
		hit = true
	}
	if !hit {
		return nil
	}
	return func(s *Session, _ []*string) (*Result, error) {
		return project(items, nil, func(it selItem) (colSpec, bool) { return colSpec{}, false }), nil
	}
}

// ---------- pg_type ----------

// pgType is a row of pg_type for the types clinksql's values and parameters have.
type pgType struct {
	oid      uint32
	name     string // typname
	format   string // format_type
	typtype  string
	category string
	length   int
	array    uint32
	input    string
}

var pgTypes = []pgType{
	{16, "bool", "boolean", "b", "B", 1, 1000, "boolin"},
	{17, "bytea", "bytea", "b", "U", -1, 1001, "byteain"},
	{18, "char", `"char"`, "b", "Z", 1, 1002, "charin"},
	{19, "name", "name", "b", "S", 64, 1003, "namein"},
	{20, "int8", "bigint", "b", "N", 8, 1016, "int8in"},
	{21, "int2", "smallint", "b", "N", 2, 1005, "int2in"},
	{23, "int4", "integer", "b", "N", 4, 1007, "int4in"},
	{25, "text", "text", "b", "S", -1, 1009, "textin"},
	{26, "oid", "oid", "b", "N", 4, 1028, "oidin"},
	{700, "float4", "real", "b", "N", 4, 1021, "float4in"},
	{701, "float8", "double precision", "b", "N", 8, 1022, "float8in"},
	{705, "unknown", "unknown", "p", "X", -2, 0, "unknownin"},
	{1042, "bpchar", "character", "b", "S", -1, 1014, "bpcharin"},
	{1043, "varchar", "character varying", "b", "S", -1, 1015, "varcharin"},
	{1082, "date", "date", "b", "D", 4, 1182, "date_in"},
	{1114, "timestamp", "timestamp without time zone", "b", "D", 8, 1115, "timestamp_in"},
	{1184, "timestamptz", "timestamp with time zone", "b", "D", 8, 1185, "timestamptz_in"},
	{1186, "interval", "interval", "b", "T", 16, 1187, "interval_in"},
	{1700, "numeric", "numeric", "b", "N", -1, 1231, "numeric_in"},
}

// typeFilter is a WHERE condition "oid = X" or "typname = X" of a pg_type lookup: X is a $n or a literal.
var typeFilter = regexp.MustCompile(`(?:^|[^a-z0-9_.])(?:[a-z_]+\.)?(oid|typname)=\(?(\$[0-9]+|'(?:[^']|'')*'|[0-9]+)`)

// flagParam is a $n used as a condition on its own ("$3 AND ...").
var flagParam = regexp.MustCompile(`\$([0-9]+) and `)

// recogniseTypeLookup: pg_type by OID or by name (pgjdbc's TypeInfoCache and the like); lookups through typelem or
// typarray (array types) are empty.
func recogniseTypeLookup(n string, q *introQuery) func(*Session, []*string) (*Result, error) {
	items, rest, ok := selectList(n)
	if !ok || !(startsWith(rest, "FROM pg_catalog.pg_type") || startsWith(rest, "from pg_type")) ||
		strings.Contains(rest, "pg_type_is_visible(") {
		return nil
	}
	where := ""
	if i := indexTop(rest, "where"); i >= 0 {
		where = rest[i:]
	}
	if strings.Contains(rest, "typelem") || strings.Contains(rest, "typarray") {
		return func(*Session, []*string) (*Result, error) { return project(items, nil, typeValues), nil }
	}
	m := typeFilter.FindStringSubmatch(where)
	var byParam int
	var byLit string
	if m != nil {
		if strings.HasPrefix(m[2], "$") {
			byParam, _ = strconv.Atoi(m[2][1:])
			if m[1] == "oid" {
				q.paramOIDs[byParam] = catalog.OIDInt8
			}
		} else if strings.HasPrefix(m[2], "'") {
			byLit, _ = unquoteLiteral(m[2], 0)
		} else {
			byLit = m[2]
		}
	}
	// A bare "$n AND" (pgjdbc's "searching the path too" flag) is a boolean.
	for _, pm := range flagParam.FindAllStringSubmatch(where, -1) {
		k, _ := strconv.Atoi(pm[1])
		q.paramOIDs[k] = catalog.OIDBool
	}
	return func(s *Session, args []*string) (*Result, error) {
		var rs []*row
		if m == nil && where != "" {
			return project(items, nil, typeValues), nil // a condition we cannot read: no answer beats a wrong one
		}
		for i := range pgTypes {
			t := &pgTypes[i]
			if m != nil {
				var v *string
				if byParam > 0 {
					if byParam <= len(args) {
						v = args[byParam-1]
					}
				} else {
					v = &byLit
				}
				if v == nil {
					continue
				}
				want := strings.TrimSpace(*v)
				if m[1] == "oid" && want != strconv.FormatUint(uint64(t.oid), 10) ||
					m[1] == "typname" && want != t.name {
					continue
				}
			}
			rs = append(rs, &row{s: s, typ: t})
		}
		return project(items, rs, typeValues), nil
	}
}

// typeValues answers pg_type (and pg_namespace) items about a type.
func typeValues(it selItem) (colSpec, bool) {
	num := func(f func(t *pgType) int64, oid uint32) colSpec {
		return colSpec{intCol(it.name, oid), func(r *row) *string { return str(strconv.FormatInt(f(r.typ), 10)) }}
	}
	switch it.key {
	case "onpath":
		return constBool(it, true), true
	case "is_array":
		return constBool(it, false), true
	case "oid":
		return num(func(t *pgType) int64 { return int64(t.oid) }, catalog.OIDInt8), true
	case "typname":
		return textOf(it, func(r *row) *string { return str(r.typ.name) }), true
	case "format_type":
		return textOf(it, func(r *row) *string { return str(r.typ.format) }), true
	case "nspname":
		return constText(it, str("pg_catalog")), true
	case "typnamespace":
		return constInt(it, catalog.OIDInt8, 11), true
	case "typtype":
		return textOf(it, func(r *row) *string { return str(r.typ.typtype) }), true
	case "typcategory":
		return textOf(it, func(r *row) *string { return str(r.typ.category) }), true
	case "typlen":
		return num(func(t *pgType) int64 { return int64(t.length) }, catalog.OIDInt2), true
	case "typarray":
		return num(func(t *pgType) int64 { return int64(t.array) }, catalog.OIDInt8), true
	case "typinput":
		return textOf(it, func(r *row) *string { return str(r.typ.input) }), true
	case "typelem", "typbasetype", "typrelid", "typcollation":
		return constInt(it, catalog.OIDInt8, 0), true
	case "typtypmod":
		return constInt(it, catalog.OIDInt4, -1), true
	case "typnotnull":
		return constBool(it, false), true
	case "typisdefined":
		return constBool(it, true), true
	case "typdelim":
		return constText(it, str(",")), true
	}
	return colSpec{}, false
}

// ---------- pgjdbc: ResultSetMetaData ----------

var fieldPair = regexp.MustCompile(`select ([0-9]+)(?: as oid)?,([0-9]+)(?: as attnum)?`)

// recogniseFieldMetadata: pgjdbc's lookup of the relation and column behind result columns (isNullable,
// getTableName, ...) for (table OID, attnum) pairs.
func recogniseFieldMetadata(n string, _ *introQuery) func(*Session, []*string) (*Result, error) {
	items, rest, ok := selectList(n)
	if !ok || !startsWith(rest, "FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n") ||
		!strings.Contains(rest, frag("JOIN pg_catalog.pg_attribute a")) {
		return nil
	}
	pairs := fieldPair.FindAllStringSubmatch(rest, -1)
	return func(s *Session, _ []*string) (*Result, error) {
		var rs []*row
		for _, p := range pairs {
			o := s.objectByOID(p[1])
			num, _ := strconv.Atoi(p[2])
			if o != nil && num >= 1 && num <= len(o.Columns) {
				rs = append(rs, &row{s: s, obj: o, col: num - 1})
			}
		}
		return project(items, rs, func(it selItem) (colSpec, bool) {
			switch it.key {
			case "attidentity":
				return constBool(it, false), true // not an identity or serial column
			}
			if sp, ok := attributeValues(it); ok {
				return sp, true
			}
			return relationValues(it)
		}), nil
	}
}

// ---------- functions without FROM ----------

// serverVersion is what version() says; psql and drivers read the number after "PostgreSQL".
func serverVersion(s *Session) string {
	v := s.vars["server_version"]
	if v == "" {
		v = pgSettings["server_version"]
	}
	return fmt.Sprintf("PostgreSQL %s (clinksql) on %s-%s, compiled by %s, 64-bit", v, runtime.GOARCH, runtime.GOOS, runtime.Version())
}

var settingArg = regexp.MustCompile(`^'((?:[^']|'')*)'(?:,(?:true|false))?$`)

// recogniseFunctions: SELECT of session functions only (version(), current_user, current_setting('x'), ...).
func recogniseFunctions(n string, _ *introQuery) func(*Session, []*string) (*Result, error) {
	items, rest, ok := selectList(n)
	if !ok || rest != "" || len(items) == 0 {
		return nil
	}
	type fn struct {
		col Column
		val func(s *Session) (*string, error)
	}
	var fns []fn
	for _, it := range items {
		e := strings.TrimPrefix(it.expr, "pg_catalog.")
		name := func(def string) string {
			if it.name != it.key && it.name != "?column?" {
				return it.name
			}
			return def
		}
		var f fn
		switch e {
		case "version()":
			f = fn{textColumn(name("version")), func(s *Session) (*string, error) { return str(serverVersion(s)), nil }}
		case "current_schema()", "current_schema":
			f = fn{textColumn(name("current_schema")), func(*Session) (*string, error) { return str("public"), nil }}
		case "current_database()", "current_catalog":
			def := strings.TrimSuffix(e, "()")
			f = fn{textColumn(name(def)), func(*Session) (*string, error) { return str("clinksql"), nil }}
		case "current_user", "session_user", "user", "current_role", "getpgusername()":
			def := strings.TrimSuffix(e, "()")
			f = fn{textColumn(name(def)), func(s *Session) (*string, error) { return str(s.user()), nil }}
		case "current_schemas(true)":
			f = fn{textColumn(name("current_schemas")), func(*Session) (*string, error) { return str("{pg_catalog,public}"), nil }}
		case "current_schemas(false)":
			f = fn{textColumn(name("current_schemas")), func(*Session) (*string, error) { return str("{public}"), nil }}
		default:
			if !strings.HasPrefix(e, "current_setting(") || !strings.HasSuffix(e, ")") {
				return nil
			}
			m := settingArg.FindStringSubmatch(e[len("current_setting(") : len(e)-1])
			if m == nil {
				return nil
			}
			setting := strings.ToLower(strings.ReplaceAll(m[1], "''", "'"))
			missingOK := strings.HasSuffix(e, ",true)")
			f = fn{textColumn(name("current_setting")), func(s *Session) (*string, error) {
				if v, ok := s.vars[setting]; ok {
					return str(v), nil
				}
				if missingOK {
					return nil, nil
				}
				return nil, sqlerr.New(sqlerr.UndefinedObject, sqlerr.NoPos, "unrecognized configuration parameter %q", setting)
			}}
		}
		fns = append(fns, f)
	}
	return func(s *Session, _ []*string) (*Result, error) {
		res := &Result{Tag: "SELECT 1"}
		vals := make([]*string, len(fns))
		for i, f := range fns {
			res.Columns = append(res.Columns, f.col)
			v, err := f.val(s)
			if err != nil {
				return nil, err
			}
			vals[i] = v
		}
		res.Rows = [][]*string{vals}
		return res, nil
	}
}

// recogniseSetCharacteristics: SET SESSION CHARACTERISTICS AS TRANSACTION ... (every statement commits alone).
func recogniseSetCharacteristics(n string, _ *introQuery) func(*Session, []*string) (*Result, error) {
	if !strings.HasPrefix(n, "set session characteristics as transaction ") {
		return nil
	}
	return func(*Session, []*string) (*Result, error) { return &Result{Tag: "SET"}, nil }
}
