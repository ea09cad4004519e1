package pgwire

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/big"
	"net"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/clinksql/clinksql/catalog"
)

func TestSimpleAndExtendedQuery(t *testing.T) {
	ts := startServer(t, Config{})
	c := ts.connect(t)
	ctx := context.Background()
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeSimpleProtocol,
		pgx.QueryExecModeDescribeExec, pgx.QueryExecModeExec} {
		var a int32
		var b string
		if err := c.QueryRow(ctx, "SELECT 1 AS a, 'x' || 'y' AS b", mode).Scan(&a, &b); err != nil {
			t.Fatalf("%v: %v", mode, err)
		}
		if a != 1 || b != "xy" {
			t.Errorf("%v: got %d %q", mode, a, b)
		}
	}
	// Several statements in one simple query: every result is read, the last one is scanned.
	rr := c.PgConn().Exec(ctx, "SELECT 1; SELECT 2, 3")
	results, err := rr.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 2 || string(results[1].Rows[0][1]) != "3" || results[1].CommandTag.String() != "SELECT 1" {
		t.Errorf("multi-statement results: %+v", results)
	}
	// An empty query is EmptyQueryResponse, not an error.
	if _, err := c.PgConn().Exec(ctx, "").ReadAll(); err != nil {
		t.Errorf("empty query: %v", err)
	}
}

func TestParametersInferredAndTyped(t *testing.T) {
	ts := startServer(t, Config{})
	c := ts.connect(t)
	ctx := context.Background()
	exec(t, c, `CREATE STREAM s (k BIGINT, name VARCHAR, ts TIMESTAMP(3))`)
	// Inferred from the target columns: pgx encodes the int and the time in binary.
	for i := range 5 {
		exec(t, c, `INSERT INTO s VALUES ($1, $2, $3)`, int64(i), "n"+string(rune('a'+i)), time.Date(2026, 1, 1, 0, 0, i, 0, time.UTC))
	}
	// Reused prepared statement (pgx caches it), parameters compared with columns and as LIMIT.
	for _, k := range []int64{1, 3} {
		var name string
		if err := c.QueryRow(ctx, `SELECT name FROM s WHERE k = $1`, k).Scan(&name); err != nil {
			t.Fatal(err)
		}
		if want := "n" + string(rune('a'+k)); name != want {
			t.Errorf("k=%d: %q, want %q", k, name, want)
		}
	}
	rows, err := c.Query(ctx, `SELECT k FROM s WHERE k >= $1 ORDER BY k LIMIT $2`, int64(1), int64(2))
	if err != nil {
		t.Fatal(err)
	}
	ks, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil || !reflect.DeepEqual(ks, []int64{1, 2}) {
		t.Errorf("LIMIT $2: %v %v", ks, err)
	}
	// Typed by the client: Parse with parameter OIDs.
	sd, err := c.PgConn().Prepare(ctx, "typed", `SELECT $1 AS x`, []uint32{catalog.OIDInt8})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(sd.ParamOIDs, []uint32{catalog.OIDInt8}) || sd.Fields[0].DataTypeOID != catalog.OIDInt8 {
		t.Errorf("typed parameter described as %v, column %v", sd.ParamOIDs, sd.Fields)
	}
	res := c.PgConn().ExecPrepared(ctx, "typed", [][]byte{{0, 0, 0, 0, 0, 0, 0, 42}}, []int16{1}, []int16{0}).Read()
	if res.Err != nil || string(res.Rows[0][0]) != "42" {
		t.Errorf("typed binary parameter: %v %q", res.Err, res.Rows)
	}
	// A parameter whose use says nothing is TEXT.
	sd, err = c.PgConn().Prepare(ctx, "", `SELECT $1 AS x`, nil)
	if err != nil {
		t.Fatal(err)
	}
	if sd.ParamOIDs[0] != catalog.OIDText && sd.ParamOIDs[0] != catalog.OIDVarchar {
		t.Errorf("untyped parameter: OID %d", sd.ParamOIDs[0])
	}
}

// typeRow is one row of every type, as pgx's Go values.
type typeRow struct {
	B   *bool
	I2  *int16
	I4  *int32
	I8  *int64
	F4  *float32
	F8  *float64
	N   pgtype.Numeric
	T   *string
	V   *string
	By  []byte
	D   pgtype.Date
	Ts  pgtype.Timestamp
	Iv  pgtype.Interval
	Key int32
}

func ptr[T any](v T) *T { return &v }

func num(s string) pgtype.Numeric {
	var n pgtype.Numeric
	if err := n.Scan(s); err != nil {
		panic(err)
	}
	return n
}

// sameNumeric compares numerics by value (binary and text forms may scale the integer differently).
func sameNumeric(a, b pgtype.Numeric) bool {
	if a.Valid != b.Valid || a.NaN != b.NaN || a.InfinityModifier != b.InfinityModifier {
		return false
	}
	if !a.Valid || a.NaN || a.InfinityModifier != pgtype.Finite {
		return true
	}
	rat := func(n pgtype.Numeric) *big.Rat {
		r := new(big.Rat).SetInt(n.Int)
		e := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(math.Abs(float64(n.Exp)))), nil)
		if n.Exp < 0 {
			return r.Quo(r, new(big.Rat).SetInt(e))
		}
		return r.Mul(r, new(big.Rat).SetInt(e))
	}
	return rat(a).Cmp(rat(b)) == 0
}

func TestEveryTypeTextAndBinary(t *testing.T) {
	ts := startServer(t, Config{})
	c := ts.connect(t)
	ctx := context.Background()
	exec(t, c, `CREATE STREAM allt (key INT, b BOOLEAN, i2 SMALLINT, i4 INT, i8 BIGINT, f4 REAL, f8 DOUBLE,
		n DECIMAL(20,3), t TEXT, v VARCHAR, bya BYTEA, d DATE, ts TIMESTAMP(6), iv INTERVAL)`)
	day := int64(86_400_000_000)
	want := []typeRow{
		{Key: 1, B: ptr(true), I2: ptr[int16](-7), I4: ptr[int32](123456), I8: ptr[int64](-9_000_000_000_000_000),
			F4: ptr[float32](1.25), F8: ptr(-2.5e-5), N: num("-12345.678"), T: ptr("héllo, wörld"), V: ptr("w"),
			By: []byte{0, 1, 0xff}, D: pgtype.Date{Time: time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC), Valid: true},
			Ts: pgtype.Timestamp{Time: time.Date(2026, 1, 2, 3, 4, 5, 123456000, time.UTC), Valid: true},
			Iv: pgtype.Interval{Days: 1, Microseconds: 2 * 3600_000_000, Valid: true}},
		{Key: 2, B: ptr(false), I2: ptr[int16](math.MaxInt16), I4: ptr[int32](math.MinInt32), I8: ptr[int64](math.MaxInt64),
			F4: ptr(float32(math.Inf(-1))), F8: ptr(math.MaxFloat64), N: num("0.001"), T: ptr(""), V: ptr("quote ' \" \\"),
			By: []byte{}, D: pgtype.Date{Time: time.Date(1999, 12, 31, 0, 0, 0, 0, time.UTC), Valid: true},
			Ts: pgtype.Timestamp{Time: time.Date(1970, 1, 1, 0, 0, 0, 1000, time.UTC), Valid: true},
			Iv: pgtype.Interval{Microseconds: -1_500_000, Valid: true}},
		{Key: 3, B: ptr(true), I2: ptr[int16](0), I4: ptr[int32](0), I8: ptr[int64](0),
			F4: ptr[float32](3.4e38), F8: ptr(0.1), N: num("10000000000000000.000"), T: ptr("x"), V: ptr("y"),
			By: []byte("\\x"), D: pgtype.Date{Time: time.Date(1900, 2, 28, 0, 0, 0, 0, time.UTC), Valid: true},
			Ts: pgtype.Timestamp{Time: time.Date(1969, 12, 31, 23, 59, 59, 999999000, time.UTC), Valid: true},
			Iv: pgtype.Interval{Days: 400, Microseconds: day - 1, Valid: true}},
		{Key: 4}, // NULLs everywhere
	}
	insert := `INSERT INTO allt VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`
	for i, r := range want {
		// Alternate the parameter formats: pgx's default (binary for most types) and text (simple protocol).
		mode := pgx.QueryExecModeCacheStatement
		if i%2 == 1 {
			mode = pgx.QueryExecModeSimpleProtocol
		}
		exec(t, c, insert, mode, r.Key, r.B, r.I2, r.I4, r.I8, r.F4, r.F8, r.N, r.T, r.V, r.By, r.D, r.Ts, r.Iv)
	}
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeSimpleProtocol} {
		rows, err := c.Query(ctx, `SELECT key, b, i2, i4, i8, f4, f8, n, t, v, bya, d, ts, iv FROM allt ORDER BY key`, mode)
		if err != nil {
			t.Fatal(err)
		}
		var got []typeRow
		for rows.Next() {
			var r typeRow
			if err := rows.Scan(&r.Key, &r.B, &r.I2, &r.I4, &r.I8, &r.F4, &r.F8, &r.N, &r.T, &r.V, &r.By, &r.D, &r.Ts, &r.Iv); err != nil {
				t.Fatalf("%v: scan: %v", mode, err)
			}
			got = append(got, r)
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("%v: %v", mode, err)
		}
		if mode == pgx.QueryExecModeCacheStatement {
			// pgx asked for binary results for every type but the text ones (whose forms are the same).
			for i, f := range rows.FieldDescriptions() {
				if f.Format != pgtype.BinaryFormatCode && f.DataTypeOID != catalog.OIDVarchar {
					t.Errorf("column %d (%s) came as format %d", i, f.Name, f.Format)
				}
			}
		}
		if len(got) != len(want) {
			t.Fatalf("%v: %d rows, want %d", mode, len(got), len(want))
		}
		for i := range want {
			g, w := got[i], want[i]
			if !sameNumeric(g.N, w.N) {
				t.Errorf("%v row %d: numeric %+v, want %+v", mode, w.Key, g.N, w.N)
			}
			g.N, w.N = pgtype.Numeric{}, pgtype.Numeric{}
			if w.By == nil && g.By != nil || w.By != nil && len(w.By) == 0 && g.By != nil && len(g.By) == 0 {
				g.By = w.By
			}
			if !reflect.DeepEqual(g, w) {
				t.Errorf("%v row %d:\n got %s\nwant %s", mode, w.Key, show(g), show(w))
			}
		}
	}
	// Both formats agree on the column types.
	rows, _ := c.Query(ctx, `SELECT b, i2, i4, i8, f4, f8, n, t, v, bya, d, ts, iv FROM allt LIMIT 0`)
	rows.Close()
	var oids []uint32
	for _, f := range rows.FieldDescriptions() {
		oids = append(oids, f.DataTypeOID)
	}
	wantOIDs := []uint32{16, 21, 23, 20, 700, 701, 1700, 1043, 1043, 17, 1082, 1114, 1186}
	if !reflect.DeepEqual(oids, wantOIDs) {
		t.Errorf("OIDs %v, want %v", oids, wantOIDs)
	}
}

func show(r typeRow) string {
	var sb strings.Builder
	v := reflect.ValueOf(r)
	for i := range v.NumField() {
		f := v.Field(i)
		if f.Kind() == reflect.Pointer {
			if f.IsNil() {
				fmt.Fprintf(&sb, "%s=nil ", v.Type().Field(i).Name)
				continue
			}
			f = f.Elem()
		}
		fmt.Fprintf(&sb, "%s=%v ", v.Type().Field(i).Name, f.Interface())
	}
	return sb.String()
}

func TestPortalRowLimit(t *testing.T) {
	ts := startServer(t, Config{})
	c := ts.connect(t)
	exec(t, c, `CREATE STREAM s (k BIGINT)`)
	exec(t, c, `INSERT INTO s VALUES (1), (2), (3), (4), (5)`)
	rc := dialRaw(t, ts.addr)
	rc.startup()
	rc.send(&pgproto3.Parse{Name: "q", Query: "SELECT k FROM s ORDER BY k"},
		&pgproto3.Bind{DestinationPortal: "p", PreparedStatement: "q", ResultFormatCodes: []int16{1}},
		&pgproto3.Describe{ObjectType: 'P', Name: "p"},
		&pgproto3.Execute{Portal: "p", MaxRows: 2},
		&pgproto3.Execute{Portal: "p", MaxRows: 2},
		&pgproto3.Execute{Portal: "p", MaxRows: 2},
		&pgproto3.Sync{})
	got := rc.untilReady()
	if want := "ParseComplete BindComplete RowDescription DataRow DataRow PortalSuspended DataRow DataRow PortalSuspended DataRow CommandComplete ReadyForQuery"; types(got) != want {
		t.Fatalf("got %s\nwant %s\n%v", types(got), want, got)
	}
	if !strings.Contains(got[2], `"Format":1`) || !strings.Contains(got[10], "SELECT 1") {
		t.Errorf("row description %s, final tag %s", got[2], got[10])
	}
	if !strings.Contains(got[3], `"binary":"0000000000000001"`) {
		t.Errorf("first row not binary int8 1: %s", got[3])
	}
	// Outside a transaction, Sync ended the portal; the statement lives on.
	rc.send(&pgproto3.Execute{Portal: "p"}, &pgproto3.Sync{})
	if got := rc.untilReady(); !strings.Contains(strings.Join(got, " "), "34000") {
		t.Errorf("portal after Sync: %v", got)
	}
	// Inside BEGIN, portals survive Sync.
	rc.send(&pgproto3.Query{String: "BEGIN"})
	rc.untilReady()
	rc.send(&pgproto3.Bind{DestinationPortal: "p2", PreparedStatement: "q"}, &pgproto3.Execute{Portal: "p2", MaxRows: 4}, &pgproto3.Sync{})
	if got := rc.untilReady(); types(got) != "BindComplete DataRow DataRow DataRow DataRow PortalSuspended ReadyForQuery" || !strings.Contains(got[len(got)-1], `"T"`) {
		t.Errorf("in transaction: %v", got)
	}
	rc.send(&pgproto3.Execute{Portal: "p2"}, &pgproto3.Sync{})
	if got := rc.untilReady(); types(got) != "DataRow CommandComplete ReadyForQuery" {
		t.Errorf("resumed portal: %v", got)
	}
	rc.send(&pgproto3.Query{String: "COMMIT"})
	if got := rc.untilReady(); !strings.Contains(got[len(got)-1], `"I"`) {
		t.Errorf("after COMMIT: %v", got)
	}
	// Describe of a statement; Close; an unnamed statement with an empty query.
	rc.send(&pgproto3.Describe{ObjectType: 'S', Name: "q"}, &pgproto3.Close{ObjectType: 'S', Name: "q"},
		&pgproto3.Describe{ObjectType: 'S', Name: "q"}, &pgproto3.Sync{})
	if got := rc.untilReady(); types(got) != "ParameterDescription RowDescription CloseComplete ErrorResponse ReadyForQuery" {
		t.Errorf("describe/close: %v", got)
	}
	rc.send(&pgproto3.Parse{Query: ""}, &pgproto3.Bind{}, &pgproto3.Describe{ObjectType: 'P'}, &pgproto3.Execute{}, &pgproto3.Sync{})
	if got := rc.untilReady(); types(got) != "ParseComplete BindComplete NoData EmptyQueryResponse ReadyForQuery" {
		t.Errorf("empty statement: %v", got)
	}
}

func TestErrorsSkipToSync(t *testing.T) {
	ts := startServer(t, Config{})
	rc := dialRaw(t, ts.addr)
	rc.startup()
	// The failing Parse makes the server skip the Bind and Execute, up to Sync.
	rc.send(&pgproto3.Parse{Query: "SELEC 1"}, &pgproto3.Bind{}, &pgproto3.Execute{}, &pgproto3.Sync{})
	got := rc.untilReady()
	if types(got) != "ErrorResponse ReadyForQuery" || !strings.Contains(got[0], `"Code":"42601"`) || !strings.Contains(got[0], `"Position":1`) {
		t.Errorf("parse error: %v", got)
	}
	// After Sync, the connection works again.
	rc.send(&pgproto3.Parse{Query: "SELECT 7"}, &pgproto3.Bind{}, &pgproto3.Execute{}, &pgproto3.Sync{})
	if got := rc.untilReady(); types(got) != "ParseComplete BindComplete DataRow CommandComplete ReadyForQuery" {
		t.Errorf("after error: %v", got)
	}
	// Protocol-level mistakes are errors too, never a crash.
	rc.send(&pgproto3.Bind{PreparedStatement: "nope"}, &pgproto3.Sync{})
	if got := rc.untilReady(); !strings.Contains(got[0], "26000") {
		t.Errorf("unknown statement: %v", got)
	}
	rc.send(&pgproto3.Parse{Name: "two", Query: "SELECT $1 AS a"},
		&pgproto3.Bind{PreparedStatement: "two", Parameters: [][]byte{[]byte("a"), []byte("b")}}, &pgproto3.Sync{})
	if got := rc.untilReady(); !strings.Contains(got[1], "08P01") {
		t.Errorf("wrong parameter count: %v", got)
	}
	rc.send(&pgproto3.Bind{PreparedStatement: "two", Parameters: [][]byte{{0xff, 0xfe}}}, &pgproto3.Sync{})
	if got := rc.untilReady(); !strings.Contains(got[0], "22021") {
		t.Errorf("invalid UTF-8: %v", got)
	}
	rc.send(&pgproto3.Bind{PreparedStatement: "two", Parameters: [][]byte{[]byte("a")}, ResultFormatCodes: []int16{7}}, &pgproto3.Sync{})
	if got := rc.untilReady(); !strings.Contains(got[0], "unsupported format code") {
		t.Errorf("bad format code: %v", got)
	}
	rc.send(&pgproto3.Parse{Name: "two", Query: "SELECT 1"}, &pgproto3.Sync{})
	if got := rc.untilReady(); !strings.Contains(got[0], "42P05") {
		t.Errorf("duplicate statement: %v", got)
	}
	rc.send(&pgproto3.Query{String: "SELECT 1; SELECT 1/0"})
	if got := rc.untilReady(); types(got) != "RowDescription DataRow CommandComplete ErrorResponse ReadyForQuery" {
		t.Errorf("error after a result: %v", got)
	}
	rc.send(&pgproto3.Query{String: "SELECT \xff"})
	if got := rc.untilReady(); !strings.Contains(got[0], "22021") {
		t.Errorf("invalid UTF-8 query: %v", got)
	}
}

func TestErrorPositionAndNotices(t *testing.T) {
	ts := startServer(t, Config{})
	cfg := ts.pgxConfig(t, "")
	var notices []string
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) { notices = append(notices, n.Severity+": "+n.Message) }
	c := connectWith(t, cfg)
	ctx := context.Background()
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeSimpleProtocol} {
		_, err := c.Exec(ctx, "SELECT 'é', nope FROM missing", mode)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) {
			t.Fatalf("%v: %v", mode, err)
		}
		// Position counts characters from 1: "missing" starts at character 23 ('é' is two bytes, one character).
		if pe.Code != "42P01" || pe.Position != 23 || pe.Severity != "ERROR" {
			t.Errorf("%v: %+v", mode, pe)
		}
	}
	exec(t, c, `CREATE STREAM s (k BIGINT)`)
	exec(t, c, `CREATE STREAM IF NOT EXISTS s (k BIGINT)`, pgx.QueryExecModeSimpleProtocol)
	exec(t, c, `CREATE STREAM IF NOT EXISTS s (k BIGINT)`)
	if len(notices) != 2 || !strings.Contains(notices[0], "already exists") || !strings.HasPrefix(notices[0], "NOTICE") {
		t.Errorf("notices: %q", notices)
	}
}

func TestTransactionStatus(t *testing.T) {
	ts := startServer(t, Config{})
	c := ts.connect(t)
	ctx := context.Background()
	if s := c.PgConn().TxStatus(); s != 'I' {
		t.Errorf("idle status %c", s)
	}
	tx, err := c.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s := c.PgConn().TxStatus(); s != 'T' {
		t.Errorf("after BEGIN: %c", s)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if s := c.PgConn().TxStatus(); s != 'I' {
		t.Errorf("after COMMIT: %c", s)
	}
	exec(t, c, "BEGIN")
	exec(t, c, "ROLLBACK")
	if s := c.PgConn().TxStatus(); s != 'I' {
		t.Errorf("after ROLLBACK: %c", s)
	}
}

func TestParameterStatus(t *testing.T) {
	ts := startServer(t, Config{})
	cfg := ts.pgxConfig(t, "")
	cfg.RuntimeParams["application_name"] = "pgwire-test"
	cfg.RuntimeParams["TimeZone"] = "Europe/Berlin" // JDBC sends the JVM's zone: the session's zone
	c := connectWith(t, cfg)
	pc := c.PgConn()
	for name, want := range map[string]string{"server_version": "16.0", "server_encoding": "UTF8",
		"client_encoding": "UTF8", "DateStyle": "ISO, MDY", "TimeZone": "Europe/Berlin", "integer_datetimes": "on",
		"standard_conforming_strings": "on", "application_name": "pgwire-test", "IntervalStyle": "postgres",
		"is_superuser": "on"} {
		if got := pc.ParameterStatus(name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	exec(t, c, "SET application_name = 'renamed'")
	if got := pc.ParameterStatus("application_name"); got != "renamed" {
		t.Errorf("after SET: application_name = %q", got)
	}
	exec(t, c, "SET TIME ZONE 'Asia/Tokyo'")
	if got := pc.ParameterStatus("TimeZone"); got != "Asia/Tokyo" {
		t.Errorf("after SET TIME ZONE: TimeZone = %q", got)
	}
	// A zone the engine does not know is ignored at connect time (logged): the session keeps UTC and says so.
	bad := ts.pgxConfig(t, "")
	bad.RuntimeParams["TimeZone"] = "Mars/Olympus"
	if got := connectWith(t, bad).PgConn().ParameterStatus("TimeZone"); got != "UTC" {
		t.Errorf("an unknown zone at connect time: TimeZone = %q, want UTC", got)
	}
	if pc.PID() == 0 || len(pc.SecretKey()) != 4 {
		t.Errorf("BackendKeyData: pid %d, key %x", pc.PID(), pc.SecretKey())
	}
}

// unboundedStream creates a stream that produces a row a second forever: a SELECT with a large LIMIT over it
// runs until cancelled.
func unboundedStream(t *testing.T, c *pgx.Conn) {
	exec(t, c, `CREATE STREAM slow (x BIGINT) WITH (connector = 'datagen', 'rows-per-second' = '1')`)
}

const longQuery = `SELECT x FROM slow LIMIT 100000`

func TestCancel(t *testing.T) {
	ts := startServer(t, Config{})
	c := ts.connect(t)
	unboundedStream(t, c)
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeSimpleProtocol} {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		start := time.Now()
		_, err := c.Exec(ctx, longQuery, mode)
		cancel()
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "57014" {
			t.Fatalf("%v: cancelled query returned %v", mode, err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%v: cancel took %v", mode, d)
		}
		// The connection survives its cancelled statement.
		var one int32
		if err := c.QueryRow(context.Background(), "SELECT 1").Scan(&one); err != nil || one != 1 {
			t.Fatalf("%v: after cancel: %v", mode, err)
		}
	}
}

func TestCancelWrongKeyIgnored(t *testing.T) {
	ts := startServer(t, Config{})
	c := ts.connect(t)
	unboundedStream(t, c)
	pid, key := c.PgConn().PID(), c.PgConn().SecretKey()
	done := make(chan error, 1)
	go func() {
		_, err := c.Exec(context.Background(), longQuery)
		done <- err
	}()
	time.Sleep(200 * time.Millisecond)
	sendCancel := func(pid uint32, key []byte) {
		nc, err := net.Dial("tcp", ts.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		fe := pgproto3.NewFrontend(nc, nc)
		fe.Send(&pgproto3.CancelRequest{ProcessID: pid, SecretKey: key})
		if err := fe.Flush(); err != nil {
			t.Fatal(err)
		}
		nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := nc.Read(make([]byte, 1)); err == nil {
			t.Error("the server answered a cancel request")
		}
	}
	wrong := append([]byte{}, key...)
	wrong[0] ^= 1
	sendCancel(pid, wrong)
	sendCancel(pid+1, key)
	select {
	case err := <-done:
		t.Fatalf("a wrong cancel key ended the query: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	sendCancel(pid, key)
	select {
	case err := <-done:
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "57014" {
			t.Errorf("cancelled: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the right key did not cancel the query")
	}
}

func TestVanishedClientFreesItsSession(t *testing.T) {
	ts := startServer(t, Config{})
	c := ts.connect(t)
	unboundedStream(t, c)
	rc := dialRaw(t, ts.addr)
	rc.startup()
	rc.send(&pgproto3.Query{String: longQuery})
	time.Sleep(200 * time.Millisecond)
	rc.nc.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		ts.mu.Lock()
		n := len(ts.netConns)
		ts.mu.Unlock()
		if n == 1 { // only c's
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d connections still open after the client went away", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestShutdownCancelsAndTerminates(t *testing.T) {
	ts := startServer(t, Config{})
	c := ts.connect(t)
	unboundedStream(t, c)
	idle := ts.connect(t)
	done := make(chan error, 1)
	go func() {
		_, err := c.Exec(context.Background(), longQuery)
		done <- err
	}()
	time.Sleep(200 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := ts.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err == nil {
		t.Error("the running query survived shutdown")
	}
	if err := idle.Ping(context.Background()); err == nil {
		t.Error("an idle connection survived shutdown")
	}
	if _, err := net.DialTimeout("tcp", ts.addr, time.Second); err == nil {
		t.Error("still accepting after shutdown")
	}
}

func TestOversizedAndMalformedMessages(t *testing.T) {
	ts := startServer(t, Config{MaxMessageSize: 1 << 20})
	// A length over the limit: an error, then the connection closes, without the body ever being sent.
	rc := dialRaw(t, ts.addr)
	rc.startup()
	rc.nc.Write([]byte{'Q', 0x10, 0, 0, 0})
	got := rc.untilEOF()
	if len(got) != 1 || !strings.Contains(got[0], "08P01") || !strings.Contains(got[0], "exceeds the limit") {
		t.Errorf("oversized message: %v", got)
	}
	// Unknown message type.
	rc = dialRaw(t, ts.addr)
	rc.startup()
	rc.nc.Write([]byte{'z', 0, 0, 0, 4})
	if got := rc.untilEOF(); len(got) != 1 || !strings.Contains(got[0], "FATAL") {
		t.Errorf("unknown message type: %v", got)
	}
	// A length below 4.
	rc = dialRaw(t, ts.addr)
	rc.startup()
	rc.nc.Write([]byte{'Q', 0, 0, 0, 3})
	if got := rc.untilEOF(); len(got) != 1 || !strings.Contains(got[0], "08P01") {
		t.Errorf("short length: %v", got)
	}
	// A startup packet over 10000 bytes.
	rc = dialRaw(t, ts.addr)
	rc.nc.Write([]byte{0, 0, 0x30, 0, 0, 3, 0, 0})
	if got := rc.untilEOF(); len(got) != 1 || !strings.Contains(got[0], "invalid length of startup packet") {
		t.Errorf("long startup packet: %v", got)
	}
	// Protocol 2.0.
	rc = dialRaw(t, ts.addr)
	rc.nc.Write([]byte{0, 0, 0, 8, 0, 2, 0, 0})
	if got := rc.untilEOF(); len(got) != 1 || !strings.Contains(got[0], "FATAL") {
		t.Errorf("protocol 2.0: %v", got)
	}
	// No user name.
	rc = dialRaw(t, ts.addr)
	rc.send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion30, Parameters: map[string]string{"database": "x"}})
	if got := rc.untilEOF(); len(got) != 1 || !strings.Contains(got[0], "28000") {
		t.Errorf("no user: %v", got)
	}
	// Protocol 3.2 is negotiated down to 3.0.
	rc = dialRaw(t, ts.addr)
	rc.send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion32, Parameters: map[string]string{"user": "x", "_pq_.thing": "1"}})
	if got := rc.untilReady(); !strings.HasPrefix(got[0], "NegotiateProtocolVersion") || !strings.Contains(got[0], "_pq_.thing") {
		t.Errorf("3.2: %v", got)
	}
	// The server still works.
	c := ts.connect(t)
	if err := c.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// nonLoopbackListener claims a network address.
type nonLoopbackListener struct{ net.Listener }

func (nonLoopbackListener) Addr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(10, 1, 2, 3), Port: 5432}
}

func TestTrustOnlyOnLoopback(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	srv := NewServer(Config{}, nil)
	if err := srv.Serve(nonLoopbackListener{l}); err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Errorf("trust on a network address: %v", err)
	}
}

// pins: statement_timeout (set by SET, in Postgres' units, or as a startup parameter) ends a statement that runs
// longer with 57014 "canceling statement due to statement timeout", in both protocols; 0 turns it off; the
// connection goes on.
func TestStatementTimeout(t *testing.T) {
	ts := startServer(t, Config{})
	cfg := ts.pgxConfig(t, "")
	cfg.RuntimeParams["statement_timeout"] = "100ms"
	c := connectWith(t, cfg)
	unboundedStream(t, c)
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeSimpleProtocol} {
		for _, set := range []string{"", "SET statement_timeout = 150", "SET statement_timeout = '0.2s'"} {
			if set != "" {
				exec(t, c, set)
			}
			_, err := c.Exec(context.Background(), longQuery, mode)
			var pe *pgconn.PgError
			if !errors.As(err, &pe) || pe.Code != "57014" || pe.Message != "canceling statement due to statement timeout" {
				t.Fatalf("%v %q: got %v", mode, set, err)
			}
			var one int32
			if err := c.QueryRow(context.Background(), "SELECT 1").Scan(&one); err != nil || one != 1 {
				t.Fatalf("%v: after the timeout: %v", mode, err)
			}
		}
	}
	var shown string
	if err := c.QueryRow(context.Background(), "SHOW statement_timeout").Scan(&shown); err != nil || shown != "200ms" {
		t.Fatalf("SHOW statement_timeout = %q, %v; want 200ms", shown, err)
	}
	// 0 is off: a query that takes a second (two rows at one a second) is not interrupted.
	exec(t, c, "SET statement_timeout = 0")
	rows, err := c.Query(context.Background(), "SELECT x FROM slow LIMIT 2")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for rows.Next() {
		n++
	}
	if err := rows.Err(); err != nil || n != 2 {
		t.Fatalf("with statement_timeout = 0: %d rows, %v", n, err)
	}
}

// pins: a SELECT's rows reach the client as they are produced (DataRows flushed per batch), in both protocols: a
// SELECT that never ends shows its first rows, and the client's cancel then ends it. It used to send nothing
// before the whole result was built.
func TestSelectStreamsRows(t *testing.T) {
	ts := startServer(t, Config{})
	c := ts.connect(t)
	exec(t, c, `CREATE STREAM fast (x BIGINT) WITH (connector = 'datagen', 'fields.x.kind' = 'sequence')`)
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeSimpleProtocol} {
		ctx, cancel := context.WithCancel(context.Background())
		rows, err := c.Query(ctx, "SELECT x FROM fast LIMIT 1000000000000", mode)
		if err != nil {
			t.Fatal(err)
		}
		var got []int64
		for len(got) < 3 && rows.Next() {
			var x int64
			if err := rows.Scan(&x); err != nil {
				t.Fatal(err)
			}
			got = append(got, x)
		}
		cancel()
		rows.Close()
		var pe *pgconn.PgError
		if fmt.Sprint(got) != "[0 1 2]" || !errors.As(rows.Err(), &pe) || pe.Code != "57014" {
			t.Fatalf("%v: rows %v, then %v", mode, got, rows.Err())
		}
		var one int32
		if err := c.QueryRow(context.Background(), "SELECT 1").Scan(&one); err != nil || one != 1 {
			t.Fatalf("%v: after the cancel: %v", mode, err)
		}
	}
}

// pins: a statement over max_statement_size is refused with 54000 in both protocols, and the connection goes on.
func TestMaxStatementSize(t *testing.T) {
	ts := startServer(t, Config{})
	c := ts.connect(t)
	exec(t, c, "SET max_statement_size = '4kB'")
	long := "SELECT '" + strings.Repeat("x", 5000) + "'"
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeSimpleProtocol} {
		_, err := c.Exec(context.Background(), long, mode)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "54000" {
			t.Fatalf("%v: %v", mode, err)
		}
		var one int32
		if err := c.QueryRow(context.Background(), "SELECT 1", mode).Scan(&one); err != nil || one != 1 {
			t.Fatalf("%v: after the refusal: %v", mode, err)
		}
	}
}
