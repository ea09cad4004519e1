package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/clinksql/clinksql/catalog"
	"github.com/clinksql/clinksql/sqlerr"
)

// The catalog queries under testdata/introspect were captured from real clients talking to PostgreSQL 15:
// psql 15.18's -E output for each backslash command, and pgjdbc 42.5.5's statements from the server's
// log_statement=all log (plus the TypeInfoCache texts of the same jar). Files hold one or more queries separated
// by "-- QUERY --" lines. The OIDs that PostgreSQL gave the captured relations are replaced by ours.
var capturedOIDs = map[string]string{"16384": "clicks", "16389": "v", "16393": "per_minute", "16397": "clicks"}

func captured(t *testing.T, file string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "introspect", file))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, q := range strings.Split(strings.TrimRight(string(data), "\n"), "\n-- QUERY --\n") {
		for pg, name := range capturedOIDs {
			q = strings.ReplaceAll(q, pg, fmt.Sprint(relOID(name)))
		}
		out = append(out, q)
	}
	return out
}

// introEngine is an engine with one object of each kind.
func introEngine(t *testing.T) *Session {
	t.Helper()
	_, s := testEngine(t, t.TempDir())
	mustExec(t, s, `CREATE STREAM clicks (user_id BIGINT, url VARCHAR, ts TIMESTAMP(3),
		WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)`)
	mustExec(t, s, `CREATE SINK archive (user_id BIGINT, url VARCHAR(100), ts TIMESTAMP(3))
		WITH (connector = 'parquet', path = 'out/archive')`)
	mustExec(t, s, `CREATE VIEW v AS SELECT user_id, url FROM clicks`)
	mustExec(t, s, `CREATE MATERIALIZED VIEW per_minute AS
		SELECT user_id, COUNT(*) AS n, window_start, window_end
		FROM TABLE(TUMBLE(TABLE clicks, DESCRIPTOR(ts), INTERVAL '1' MINUTE))
		GROUP BY user_id, window_start, window_end`)
	return s
}

func resultLines(r *Result) []string {
	var out []string
	for _, row := range r.Rows {
		vals := make([]string, len(row))
		for i, v := range row {
			if v == nil {
				vals[i] = "NULL"
			} else {
				vals[i] = *v
			}
		}
		out = append(out, strings.Join(vals, "|"))
	}
	return out
}

func columnNames(r *Result) []string {
	var out []string
	for _, c := range r.Columns {
		out = append(out, fmt.Sprintf("%s:%d", c.Name, c.OID))
	}
	return out
}

// ask runs a catalog query through the simple protocol path (Execute) and, as a driver using the extended
// protocol would, through Prepare and ExecutePrepared; both must give the same answer, with Prepare announcing
// the columns the execution returns.
func ask(t *testing.T, s *Session, sql string) *Result {
	t.Helper()
	ctx := context.Background()
	res, err := s.Execute(ctx, sql)
	if err != nil {
		t.Fatalf("%s\n: %v", sql, err)
	}
	if len(res) != 1 {
		t.Fatalf("%s\n: %d results", sql, len(res))
	}
	p, err := s.Prepare(ctx, sql, nil)
	if err != nil {
		t.Fatalf("prepare %s\n: %v", sql, err)
	}
	pres, err := s.ExecutePrepared(ctx, p, nil)
	if err != nil {
		t.Fatalf("execute prepared %s\n: %v", sql, err)
	}
	equalLines(t, "prepared rows", resultLines(pres), resultLines(res[0]))
	equalLines(t, "prepared columns", columnNames(pres), columnNames(res[0]))
	equalLines(t, "described columns", columnNames(&Result{Columns: p.Columns}), columnNames(res[0]))
	if want := fmt.Sprintf("SELECT %d", len(res[0].Rows)); res[0].Tag != want {
		t.Fatalf("%s\n: tag %q, want %q", sql, res[0].Tag, want)
	}
	return res[0]
}

// pins: psql's relation lists (\d, \dt, \dv, \dm and the kinds clinksql has none of) show streams and sinks as
// tables with Type stream/sink, views and materialized views as such, the owner, and with + the description.
func TestIntrospectPsqlLists(t *testing.T) {
	s := introEngine(t)
	s.SetUser("alice")
	for _, tc := range []struct {
		file string
		want []string
	}{
		{"d.sql", []string{"public|archive|sink|alice", "public|clicks|stream|alice", "public|per_minute|materialized view|alice",
			"public|v|view|alice"}},
		{"dt.sql", []string{"public|archive|sink|alice", "public|clicks|stream|alice"}},
		{"dv.sql", []string{"public|v|view|alice"}},
		{"dm.sql", []string{"public|per_minute|materialized view|alice"}},
		{"dS.sql", []string{"public|archive|sink|alice", "public|clicks|stream|alice", "public|per_minute|materialized view|alice",
			"public|v|view|alice"}},
		{"ds.sql", nil},
		{"di.sql", nil},
		{"dE.sql", nil},
		{"dtplus.sql", []string{
			"public|archive|sink|alice|permanent|NULL|NULL|connector parquet (path=out/archive)",
			"public|clicks|stream|alice|permanent|NULL|NULL|fed by INSERT; watermark for ts AS ts - INTERVAL '1' SECOND"}},
		{"dp.sql", []string{"public|archive|sink|NULL|NULL|NULL", "public|clicks|stream|NULL|NULL|NULL",
			"public|per_minute|materialized view|NULL|NULL|NULL", "public|v|view|NULL|NULL|NULL"}},
	} {
		q := captured(t, "psql15/"+tc.file)
		res := ask(t, s, q[0])
		equalLines(t, tc.file, resultLines(res), tc.want)
		if res.Columns[0].Name != "Schema" || res.Columns[1].Name != "Name" || res.Columns[0].OID != catalog.OIDText {
			t.Fatalf("%s: columns %v", tc.file, columnNames(res))
		}
	}
	res := ask(t, s, captured(t, "psql15/dplus.sql")[0])
	equalLines(t, `\d+ columns`, columnNames(res), []string{"Schema:25", "Name:25", "Type:25", "Owner:25", "Persistence:25",
		"Access method:25", "Size:25", "Description:25"})
	// \dt with a pattern, as psql writes it.
	res = ask(t, s, strings.Replace(captured(t, "psql15/dt.sql")[0], "AND n.nspname <> 'pg_catalog'",
		"AND c.relname OPERATOR(pg_catalog.~) '^(c.*)$' COLLATE pg_catalog.default\n      AND n.nspname <> 'pg_catalog'", 1))
	equalLines(t, `\dt c*`, resultLines(res), []string{"public|clicks|stream|alice"})
}

// describe plays psql's \d NAME: the lookup by name, then each detail query with the OID it returned. It returns
// the results after the lookup.
func describe(t *testing.T, s *Session, file string) (lookup *Result, details []*Result) {
	t.Helper()
	qs := captured(t, "psql15/"+file)
	lookup = ask(t, s, qs[0])
	for _, q := range qs[1:] {
		details = append(details, ask(t, s, q))
	}
	return lookup, details
}

// pins: psql's \d NAME finds a stream by its name pattern and shows its columns with Postgres type names,
// nullable, no default; every footer query (policies, statistics, publications, parents, partitions) answers
// with no rows; \d+ adds the storage and the watermark as the event-time column's description.
func TestIntrospectPsqlDescribeStream(t *testing.T) {
	s := introEngine(t)
	oid := fmt.Sprint(relOID("clicks"))
	lookup, details := describe(t, s, "d-clicks.sql")
	equalLines(t, "lookup", resultLines(lookup), []string{oid + "|public|clicks"})
	equalLines(t, "lookup columns", columnNames(lookup), []string{"oid:20", "nspname:25", "relname:25"})
	equalLines(t, "pg_class row", resultLines(details[0]), []string{"0|r|f|f|f|f|f|f|f||0||p|d|NULL"})
	equalLines(t, "columns", resultLines(details[1]), []string{
		"user_id|bigint|NULL|f|NULL||",
		"url|character varying|NULL|f|NULL||",
		"ts|timestamp(3) without time zone|NULL|f|NULL||"})
	for i, d := range details[2:] {
		if len(d.Rows) != 0 || len(d.Columns) == 0 {
			t.Fatalf("footer query %d: %v %v", i, columnNames(d), resultLines(d))
		}
	}

	_, details = describe(t, s, "dplus-clicks.sql")
	equalLines(t, `\d+ columns`, resultLines(details[1]), []string{
		"user_id|bigint|NULL|f|NULL|||p||NULL|NULL",
		"url|character varying|NULL|f|NULL|||x||NULL|NULL",
		"ts|timestamp(3) without time zone|NULL|f|NULL|||p||NULL|watermark: ts - INTERVAL '1' SECOND"})

	// \d public.clicks, \d c* (a pattern), and a name that matches nothing.
	lookup, _ = describe(t, s, "d-qualified.sql")
	equalLines(t, `\d public.clicks`, resultLines(lookup), []string{oid + "|public|clicks"})
	lookup, _ = describe(t, s, "d-pattern.sql")
	equalLines(t, `\d c*`, resultLines(lookup), []string{oid + "|public|clicks"})
	lookup, _ = describe(t, s, "d-nosuch.sql")
	equalLines(t, `\d nosuch`, resultLines(lookup), nil)
	other := strings.Replace(captured(t, "psql15/d-qualified.sql")[0], "'^(public)$'", "'^(other)$'", 1)
	equalLines(t, `\d other.clicks`, resultLines(ask(t, s, other)), nil)
	// A relation OID that is not ours: psql says it found nothing.
	stale := strings.ReplaceAll(captured(t, "psql15/d-clicks.sql")[1], oid, "12345")
	equalLines(t, "unknown OID", resultLines(ask(t, s, stale)), nil)
}

// pins: \d of a view and of a materialized view: their relkind (psql titles them View / Materialized view),
// their columns, and with + their query as the view definition.
func TestIntrospectPsqlDescribeViews(t *testing.T) {
	s := introEngine(t)
	lookup, details := describe(t, s, "d-v.sql")
	equalLines(t, "lookup", resultLines(lookup), []string{fmt.Sprint(relOID("v")) + "|public|v"})
	if got := *details[0].Rows[0][1]; got != "v" {
		t.Fatalf("relkind %q", got)
	}
	equalLines(t, "view columns", resultLines(details[1]), []string{"user_id|bigint|NULL|f|NULL||",
		"url|character varying|NULL|f|NULL||"})
	_, details = describe(t, s, "dplus-v.sql")
	equalLines(t, "view definition", resultLines(details[2]), []string{" SELECT user_id, url FROM clicks;"})
	equalLines(t, "view rules", resultLines(details[3]), nil)

	lookup, details = describe(t, s, "dplus-mv.sql")
	// The captured \d mv names "mv"; ours is per_minute.
	equalLines(t, "lookup", resultLines(lookup), nil)
	if got := *details[0].Rows[0][1]; got != "m" {
		t.Fatalf("relkind %q", got)
	}
	equalLines(t, "materialized view columns", resultLines(details[1]), []string{
		"user_id|bigint|NULL|f|NULL|||p||NULL|NULL",
		"n|bigint|NULL|f|NULL|||p||NULL|NULL",
		"window_start|timestamp without time zone|NULL|f|NULL|||p||NULL|NULL",
		"window_end|timestamp without time zone|NULL|f|NULL|||p||NULL|NULL"})
	var def []string
	for _, d := range details {
		if len(d.Columns) == 1 && d.Columns[0].Name == "pg_get_viewdef" {
			def = resultLines(d)
		}
	}
	if len(def) != 1 || !strings.Contains(def[0], "TUMBLE(TABLE clicks") {
		t.Fatalf("materialized view definition %q", def)
	}
}

// pins: \l shows one database, \dn the public schema, \du the session's user; \df, \dT and \dx list nothing.
func TestIntrospectPsqlOthers(t *testing.T) {
	s := introEngine(t)
	s.SetUser("alice")
	equalLines(t, `\l`, resultLines(ask(t, s, captured(t, "psql15/l.sql")[0])),
		[]string{"clinksql|alice|UTF8|C|C|NULL|libc|NULL"})
	equalLines(t, `\l+`, resultLines(ask(t, s, captured(t, "psql15/lplus.sql")[0])),
		[]string{"clinksql|alice|UTF8|C|C|NULL|libc|NULL|NULL|pg_default|NULL"})
	equalLines(t, `\dn`, resultLines(ask(t, s, captured(t, "psql15/dn.sql")[0])), []string{"public|alice"})
	equalLines(t, `\dn+`, resultLines(ask(t, s, captured(t, "psql15/dnplus.sql")[0])),
		[]string{"public|alice|NULL|standard public schema"})
	equalLines(t, `\du`, resultLines(ask(t, s, captured(t, "psql15/du.sql")[0])),
		[]string{"alice|t|t|t|t|t|-1|NULL|{}|f|f"})
	for _, f := range []string{"df.sql", "dT.sql", "dx.sql"} {
		res := ask(t, s, captured(t, "psql15/"+f)[0])
		if len(res.Rows) != 0 || len(res.Columns) < 3 {
			t.Fatalf("%s: %v %v", f, columnNames(res), resultLines(res))
		}
	}
}

// pins: the session functions drivers and tools call answer from the session (version() says PostgreSQL 16,
// which psql and drivers parse), with Postgres' column names.
func TestIntrospectFunctions(t *testing.T) {
	s := introEngine(t)
	res := ask(t, s, "SELECT version()")
	if v := *res.Rows[0][0]; !strings.HasPrefix(v, "PostgreSQL 16.0 (clinksql) on ") || res.Columns[0].Name != "version" {
		t.Fatalf("version() = %q (%v)", v, columnNames(res))
	}
	ask(t, s, "select pg_catalog.version();")
	res = ask(t, s, "SELECT current_schema(), current_database(), current_user, session_user, current_catalog, current_schemas(true)")
	equalLines(t, "names", columnNames(res), []string{"current_schema:25", "current_database:25", "current_user:25",
		"session_user:25", "current_catalog:25", "current_schemas:25"})
	equalLines(t, "values", resultLines(res), []string{"public|clinksql|clinksql|clinksql|clinksql|{pg_catalog,public}"})
	s.SetUser("bob")
	equalLines(t, "user", resultLines(ask(t, s, "select current_user AS who, user")), []string{"bob|bob"})
	equalLines(t, "setting", resultLines(ask(t, s, "SELECT current_setting('server_version_num'), pg_catalog.current_setting('nope', true)")),
		[]string{"160000|NULL"})
	if _, err := s.Execute(context.Background(), "select current_setting('nope')"); sqlState(err) != sqlerr.UndefinedObject {
		t.Fatalf("unknown setting: %v", err)
	}
	// Already answered by SHOW, which drivers also send.
	equalLines(t, "isolation", rows(t, s, "SHOW TRANSACTION ISOLATION LEVEL"), []string{"read committed"})
	res2, err := s.Execute(context.Background(), "SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL READ COMMITTED")
	if err != nil || res2[0].Tag != "SET" {
		t.Fatalf("SET SESSION CHARACTERISTICS: %v", err)
	}
	// Ordinary queries still take the normal path.
	equalLines(t, "select 1", rows(t, s, "SELECT 1"), []string{"1"})
}

func sqlState(err error) string {
	var e *sqlerr.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// prepared runs a driver's query through Prepare (with the parameter types the driver declares) and
// ExecutePrepared.
func prepared(t *testing.T, s *Session, sql string, oids []uint32, args ...string) (*Prepared, *Result) {
	t.Helper()
	ctx := context.Background()
	p, err := s.Prepare(ctx, sql, oids)
	if err != nil {
		t.Fatalf("prepare %s\n: %v", sql, err)
	}
	vals := make([]*string, len(args))
	for i := range args {
		vals[i] = &args[i]
	}
	res, err := s.ExecutePrepared(ctx, p, vals)
	if err != nil {
		t.Fatalf("execute %s\n: %v", sql, err)
	}
	equalLines(t, "described columns", columnNames(&Result{Columns: p.Columns}), columnNames(res))
	return p, res
}

// pins: pgjdbc's TypeInfoCache lookups answer for every type clinksql sends (by OID, with the parameter typed
// by the driver or inferred, or inlined as in preferQueryMode=simple), type OIDs by name, and nothing for the
// array lookups; its ResultSetMetaData lookup names the relation and column behind (table OID, attnum) pairs.
func TestIntrospectJDBC(t *testing.T) {
	s := introEngine(t)
	byOID := captured(t, "pgjdbc42.5/getPGType-oid.sql")[0]
	sqlType := captured(t, "pgjdbc42.5/getSQLType-oid.sql")[0]
	for _, tc := range []struct {
		oid           uint32
		name, typtype string
	}{
		{16, "bool", "b"}, {17, "bytea", "b"}, {20, "int8", "b"}, {21, "int2", "b"}, {23, "int4", "b"}, {25, "text", "b"},
		{700, "float4", "b"}, {701, "float8", "b"}, {1043, "varchar", "b"}, {1082, "date", "b"}, {1114, "timestamp", "b"},
		{1186, "interval", "b"}, {1700, "numeric", "b"}, {705, "unknown", "p"},
	} {
		oid := fmt.Sprint(tc.oid)
		p, res := prepared(t, s, byOID, []uint32{catalog.OIDInt4}, oid)
		equalLines(t, "getPGType "+oid, resultLines(res), []string{"t|pg_catalog|" + tc.name})
		if !slices.Equal(p.ParamOIDs, []uint32{catalog.OIDInt4}) {
			t.Fatalf("declared parameter type lost: %v", p.ParamOIDs)
		}
		p, res = prepared(t, s, sqlType, nil, oid)
		equalLines(t, "getSQLType "+oid, resultLines(res), []string{"f|" + tc.typtype + "|" + tc.name + "|" + oid})
		equalLines(t, "getSQLType columns", columnNames(res), []string{"is_array:16", "typtype:25", "typname:25", "oid:20"})
		if !slices.Equal(p.ParamOIDs, []uint32{catalog.OIDInt8}) {
			t.Fatalf("inferred parameter type: %v", p.ParamOIDs)
		}
	}
	_, res := prepared(t, s, byOID, nil, "424242")
	equalLines(t, "unknown OID", resultLines(res), nil)
	// preferQueryMode=simple inlines the parameter.
	equalLines(t, "inlined", resultLines(ask(t, s, strings.Replace(byOID, "$1", "('1186'::int4)", 1))),
		[]string{"t|pg_catalog|interval"})

	_, res = prepared(t, s, captured(t, "pgjdbc42.5/getPGType-name.sql")[0], nil, "interval")
	equalLines(t, "type by name", resultLines(res), []string{"1186|interval"})
	p, res := prepared(t, s, captured(t, "pgjdbc42.5/getTypeOid-qualified.sql")[0], nil, "numeric", "pg_catalog", "t")
	equalLines(t, "type by qualified name", resultLines(res), []string{"1700|numeric"})
	if !slices.Equal(p.ParamOIDs, []uint32{catalog.OIDText, catalog.OIDText, catalog.OIDBool}) {
		t.Fatalf("inferred parameter types: %v", p.ParamOIDs)
	}
	for _, f := range []string{"getPGArrayElement.sql", "getArrayDelimiter.sql"} {
		_, res = prepared(t, s, captured(t, "pgjdbc42.5/"+f)[0], nil, "1186")
		equalLines(t, f, resultLines(res), nil)
	}
	_, res = prepared(t, s, captured(t, "pgjdbc42.5/getPGArrayType.sql")[0], nil, "int8", "pg_catalog", "t")
	equalLines(t, "array type", resultLines(res), nil)

	oid := fmt.Sprint(relOID("clicks"))
	res = ask(t, s, captured(t, "pgjdbc42.5/fieldMetadata.sql")[0])
	// The captured query asks for attnums 1..13 of one table; clicks has three columns.
	equalLines(t, "field metadata", resultLines(res), []string{oid + "|1|user_id|clicks|public|f|f",
		oid + "|2|url|clicks|public|f|f", oid + "|3|ts|clicks|public|f|f"})

	for _, q := range captured(t, "pgjdbc42.5/connect.sql") {
		mustExec(t, s, q)
	}
	equalLines(t, "getSchema", rows(t, s, captured(t, "pgjdbc42.5/getSchema.sql")[0]), []string{"public"})
}

// pins: a catalog query clinksql does not recognise and cannot parse fails cleanly with 0A000 naming its first
// words; one the parser reads takes the normal path; $n outside the extended protocol and a wrong number of
// bound values are errors; user objects whose names look like catalogs are untouched.
func TestIntrospectUnrecognised(t *testing.T) {
	s := introEngine(t)
	ctx := context.Background()
	q := "SELECT a.attname FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_class c ON a.attrelid = c.oid WHERE c.relname = ANY(ARRAY['x'])"
	for _, run := range []func() error{
		func() error { _, err := s.Execute(ctx, q); return err },
		func() error { _, err := s.Prepare(ctx, q, nil); return err },
	} {
		err := run()
		if sqlState(err) != sqlerr.FeatureNotSupported || !strings.Contains(err.Error(), "SELECT a.attname FROM pg_catalog.pg_attribute") {
			t.Fatalf("unrecognised catalog query: %v", err)
		}
	}
	if _, err := s.Execute(ctx, "SELECT * FROM pg_catalog.pg_class"); sqlState(err) != sqlerr.UndefinedTable {
		t.Fatalf("parseable catalog query: %v", err)
	}
	if _, err := s.Execute(ctx, captured(t, "pgjdbc42.5/getPGType-oid.sql")[0]); sqlState(err) != sqlerr.UndefinedParameter {
		t.Fatalf("$1 in a simple query: %v", err)
	}
	p, err := s.Prepare(ctx, captured(t, "pgjdbc42.5/getPGType-oid.sql")[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.ExecutePrepared(ctx, p, nil); sqlState(err) != sqlerr.ProtocolViolation {
		t.Fatalf("missing value: %v", err)
	}
	mustExec(t, s, "CREATE STREAM pg_types_seen (typname VARCHAR, n BIGINT)")
	mustExec(t, s, "INSERT INTO pg_types_seen VALUES ('pg_class', 1)")
	equalLines(t, "user stream", rows(t, s, "SELECT typname, n FROM pg_types_seen WHERE typname = 'pg_class'"),
		[]string{"pg_class|1"})
	// Two statements in one query string: each is answered on its own, the catalog query included.
	res, err := s.Execute(ctx, "SELECT version(); SELECT 1")
	if err != nil || len(res) != 2 || !strings.HasPrefix(*res[0].Rows[0][0], "PostgreSQL 16.0 (clinksql)") || *res[1].Rows[0][0] != "1" {
		t.Fatalf("version(); SELECT 1: %v %v", res, err)
	}
}

// pins: normalisation folds case and whitespace outside quotes only, drops comments, keeps E” escapes, and
// reads psql's name patterns with their quoting.
func TestIntrospectNormalize(t *testing.T) {
	got := normalize("SELECT  c.oid ,\n  n.nspname -- comment\n FROM /* x */ t WHERE c.relname OPERATOR(pg_catalog.~) '^(My Table)$' AND x = E'it\\'s' AND \"Q\" = 1 ;; ")
	want := `select c.oid,n.nspname from t where c.relname operator(pg_catalog.~)'^(My Table)$' and x=e'it\'s' and "Q"=1`
	if got != want {
		t.Fatalf("normalize:\n got %s\nwant %s", got, want)
	}
	re, ok, err := namePattern(got, "c.relname")
	if err != nil || !ok || !re.MatchString("My Table") || re.MatchString("my table") {
		t.Fatalf("pattern %v %v %v", re, ok, err)
	}
	it := parseItem(normalize(`pg_catalog.pg_get_userbyid(c.relowner) as "Owner"`))
	if it.name != "Owner" || it.key != "pg_get_userbyid" {
		t.Fatalf("item %+v", it)
	}
	it = parseItem(normalize(`typinput='pg_catalog.array_in'::regproc as is_array`))
	if it.name != "is_array" || it.key != "typinput" {
		t.Fatalf("item %+v", it)
	}
	if a, b := relOID("clicks"), relOID("clicks"); a != b || a < 16384 || a >= 1<<31 {
		t.Fatalf("relation OID %d %d", a, b)
	}
}
