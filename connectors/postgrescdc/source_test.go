package postgrescdc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"

	"github.com/clinksql/clinksql/catalog"
	"github.com/clinksql/clinksql/connectors"
	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/textform"
	"github.com/clinksql/clinksql/sqlerr"
	"github.com/clinksql/clinksql/state"
	"github.com/clinksql/clinksql/tests/pgtest"
)

func startPG(t testing.TB) (*pgtest.Postgres, *pgx.Conn) {
	t.Helper()
	pg := pgtest.StartT(t, pgtest.Options{Logical: true})
	return pg, pg.ConnectT(t)
}

func pgExec(t testing.TB, c *pgx.Conn, sql string, args ...any) {
	t.Helper()
	if _, err := c.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func testConfig(t testing.TB, pg *pgtest.Postgres, table, slot, startup string) Config {
	t.Helper()
	cfg, err := ParseConfig(map[string]string{OptHostname: "127.0.0.1", OptPort: strconv.Itoa(pg.Port),
		OptUsername: "postgres", OptDatabase: "postgres", OptTable: table, OptSlot: slot, OptStartup: startup,
		OptSSLMode: "disable"})
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// specOf builds a stream spec from "name TYPE" pairs (a catalog.Type name: BIGINT, INT, VARCHAR, TIMESTAMP, ...;
// DECIMAL(p,s)).
func specOf(cols ...string) connectors.Spec {
	var fields []arrow.Field
	var cs []connectors.Column
	for _, c := range cols {
		name, typ, _ := strings.Cut(c, " ")
		ct := catalog.Type{Name: typ, Precision: -1, Scale: -1}
		if strings.HasPrefix(typ, "DECIMAL(") {
			ct.Name = "DECIMAL"
			fmt.Sscanf(typ, "DECIMAL(%d,%d)", &ct.Precision, &ct.Scale)
		}
		dt, err := ct.Arrow()
		if err != nil {
			panic(err)
		}
		fields = append(fields, arrow.Field{Name: name, Type: dt, Nullable: true})
		cs = append(cs, connectors.Column{Name: name, Type: dt})
	}
	return connectors.Spec{Object: "s", Schema: arrow.NewSchema(fields, nil), Columns: cs}
}

// harness drives one source subtask as the runtime does.
type harness struct {
	t    testing.TB
	src  *Source
	tc   *exec.TaskContext
	mem  *memory.CheckedAllocator
	rows []string // "+I|a|b" per row produced, in order
}

func newMemState(t testing.TB) state.Backend {
	st, err := state.OpenMemory(state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func start(t testing.TB, cfg Config, spec connectors.Spec, off []byte, st state.Backend) *harness {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	h := &harness{t: t, mem: mem, tc: &exec.TaskContext{Subtask: 0, Parallelism: 1, Alloc: mem,
		Errors: &exec.Counter{}, State: st}}
	h.src = NewSource(cfg, spec)(0).(*Source)
	if off != nil {
		if err := h.src.RestoreOffset(off); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.src.Open(h.tc); err != nil {
		h.src.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		h.close()
		mem.AssertSize(t, 0)
	})
	return h
}

func (h *harness) close() {
	if h.src != nil {
		if err := h.src.Close(); err != nil {
			h.t.Error(err)
		}
		h.src = nil
	}
}

// produce calls Produce once and records its rows.
func (h *harness) produce() int {
	h.t.Helper()
	res, err := h.src.Produce(context.Background())
	if err != nil {
		h.t.Fatal(err)
	}
	if res.Status != exec.Produced {
		return 0
	}
	defer res.Batch.Release()
	rows, err := textform.Rows(res.Batch.Rec)
	if err != nil {
		h.t.Fatal(err)
	}
	for i, r := range rows {
		parts := []string{res.Batch.Kind(i).String()}
		for _, v := range r {
			if v == nil {
				parts = append(parts, "NULL")
			} else {
				parts = append(parts, *v)
			}
		}
		h.rows = append(h.rows, strings.Join(parts, "|"))
	}
	return len(rows)
}

// until produces until the rows number at least n (a minute at most), then produces a few more times to show
// nothing more comes.
func (h *harness) until(n int) {
	h.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for len(h.rows) < n {
		if time.Now().After(deadline) {
			h.t.Fatalf("%d rows after a minute, want %d", len(h.rows), n)
		}
		h.produce()
	}
	for range 4 {
		h.produce()
	}
	if len(h.rows) != n {
		h.t.Fatalf("%d rows, want %d", len(h.rows), n)
	}
}

func slotConfirmed(t testing.TB, c *pgx.Conn, slot string) pglogrepl.LSN {
	t.Helper()
	var s string
	if err := c.QueryRow(context.Background(), `SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = $1`, slot).Scan(&s); err != nil {
		t.Fatal(err)
	}
	l, err := pglogrepl.ParseLSN(s)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func offsetLSN(t testing.TB, b []byte) offset {
	t.Helper()
	var o offset
	if err := json.Unmarshal(b, &o); err != nil {
		t.Fatal(err)
	}
	return o
}

// The slot's confirmed_flush_lsn does not move at the barrier, on receipt of later WAL, or while the checkpoint
// is in flight (keepalives answered with a wal_sender_timeout of 2 s keep the slot active); once the checkpoint
// completes it equals the checkpoint's LSN, not the later position the source has read to.
func TestConfirmOnlyAfterCompletion(t *testing.T) {
	pg, c := startPG(t)
	pgExec(t, c, `ALTER SYSTEM SET wal_sender_timeout = '2s'`)
	pgExec(t, c, `SELECT pg_reload_conf()`)
	pgExec(t, c, `CREATE TABLE t (id INT PRIMARY KEY, v BIGINT)`)
	pgExec(t, c, `ALTER TABLE t REPLICA IDENTITY FULL`)
	pgExec(t, c, `INSERT INTO t SELECT g, g FROM generate_series(1, 3) g`)
	h := start(t, testConfig(t, pg, "t", "s_confirm", StartupInitial), specOf("id INT", "v BIGINT"), nil, newMemState(t))
	h.until(3)
	l0 := slotConfirmed(t, c, "s_confirm")
	pgExec(t, c, `INSERT INTO t SELECT g, g FROM generate_series(4, 8) g`)
	h.until(8)
	o1 := offsetLSN(t, mustOffset(t, h.src, 1))
	if pglogrepl.LSN(o1.LSN) <= l0 {
		t.Fatalf("checkpoint 1 covers %s, want past the slot's start %s", pglogrepl.LSN(o1.LSN), l0)
	}
	pgExec(t, c, `UPDATE t SET v = v + 1 WHERE id = 1`)
	h.until(10)
	// The checkpoint stays in flight for over twice wal_sender_timeout: the server asks for replies, the source
	// answers with the last completed LSN (the slot's start), and the slot stays active where it was.
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); {
		h.produce()
	}
	var active bool
	if err := c.QueryRow(context.Background(), `SELECT active FROM pg_replication_slots WHERE slot_name = 's_confirm'`).Scan(&active); err != nil || !active {
		t.Fatalf("slot active %v (%v): the walsender timed out while the checkpoint was in flight", active, err)
	}
	if got := slotConfirmed(t, c, "s_confirm"); got != l0 {
		t.Fatalf("confirmed_flush_lsn %s before checkpoint 1 completed, want it unmoved at %s", got, l0)
	}
	h.src.NotifyCheckpointComplete(1)
	var got pglogrepl.LSN
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); {
		h.produce()
		if got = slotConfirmed(t, c, "s_confirm"); got != l0 {
			break
		}
	}
	if got != pglogrepl.LSN(o1.LSN) {
		t.Fatalf("confirmed_flush_lsn %s after checkpoint 1 completed, want its LSN %s", got, pglogrepl.LSN(o1.LSN))
	}
	if h.src.pos <= got {
		t.Fatalf("the source read to %s, the test wants a position past the checkpoint's %s", h.src.pos, got)
	}
	if recs, lag, total := h.src.Progress(); recs != -1 || lag < 0 || total != -1 {
		t.Fatalf("Progress() = %d, %d, %d: want the bytes behind the server's WAL end, the rest unknown", recs, lag, total)
	}
}

// A captured table that stays idle while another table is written still lets its slot free that WAL: keepalives
// move the position between transactions, a completed checkpoint confirms it, and a source restored there emits
// the captured table's next change once.
func TestIdleTableConfirmsOthersWAL(t *testing.T) {
	pg, c := startPG(t)
	pgExec(t, c, `CREATE TABLE t (id INT PRIMARY KEY, v BIGINT)`)
	pgExec(t, c, `ALTER TABLE t REPLICA IDENTITY FULL`)
	pgExec(t, c, `CREATE TABLE other (id INT PRIMARY KEY, pad TEXT)`)
	cfg := testConfig(t, pg, "t", "s_idle", StartupInitial)
	spec := specOf("id INT", "v BIGINT")
	a := start(t, cfg, spec, nil, newMemState(t))
	a.until(0)
	l0 := slotConfirmed(t, c, "s_idle")
	for i := range 20 {
		pgExec(t, c, `INSERT INTO other SELECT g, repeat('x', 200) FROM generate_series($1::int, $1::int + 999) g`, i*1000)
	}
	var written string
	if err := c.QueryRow(context.Background(), `SELECT pg_current_wal_flush_lsn()::text`).Scan(&written); err != nil {
		t.Fatal(err)
	}
	want, err := pglogrepl.ParseLSN(written)
	if err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(30 * time.Second); a.src.pos < want && time.Now().Before(end); {
		a.produce()
	}
	if a.src.pos < want {
		t.Fatalf("the source's position is %s after the other table's writes up to %s: an idle table pins the WAL", a.src.pos, want)
	}
	off := mustOffset(t, a.src, 1)
	a.src.NotifyCheckpointComplete(1)
	var got pglogrepl.LSN
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); {
		a.produce()
		if got = slotConfirmed(t, c, "s_idle"); got != l0 {
			break
		}
	}
	if got != pglogrepl.LSN(offsetLSN(t, off).LSN) || got < want {
		t.Fatalf("confirmed_flush_lsn %s (from %s), want the checkpoint's %s, at or past %s", got, l0, pglogrepl.LSN(offsetLSN(t, off).LSN), want)
	}
	if len(a.rows) != 0 {
		t.Fatalf("rows %v from the other table", a.rows)
	}
	a.close()
	pgExec(t, c, `INSERT INTO t VALUES (1, 10)`)
	b := start(t, cfg, spec, off, newMemState(t))
	b.until(1)
	idsOnce(t, b.rows, 1, 1)
}

func mustOffset(t testing.TB, s *Source, id uint64) []byte {
	t.Helper()
	b, err := s.SnapshotOffsetAt(id)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// idsOnce checks that the +I rows' first column are lo..hi, each once, and there is nothing else.
func idsOnce(t testing.TB, rows []string, lo, hi int) {
	t.Helper()
	var ids []int
	for _, r := range rows {
		f := strings.Split(r, "|")
		if f[0] != "+I" {
			t.Fatalf("row %q, want only inserts", r)
		}
		id, _ := strconv.Atoi(f[1])
		ids = append(ids, id)
	}
	slices.Sort(ids)
	if len(ids) != hi-lo+1 || len(slices.Compact(slices.Clone(ids))) != len(ids) || ids[0] != lo || ids[len(ids)-1] != hi {
		t.Fatalf("%d rows (%d distinct), want %d..%d once each", len(ids), len(slices.Compact(slices.Clone(ids))), lo, hi)
	}
}

// A barrier inside a big transaction: the restored source skips the transaction's rows emitted before it and
// emits the rest, then what followed, each row once.
func TestRestoreInsideTransaction(t *testing.T) {
	pg, c := startPG(t)
	pgExec(t, c, `CREATE TABLE t (id INT PRIMARY KEY, v BIGINT)`)
	pgExec(t, c, `ALTER TABLE t REPLICA IDENTITY FULL`)
	cfg := testConfig(t, pg, "t", "s_txn", StartupInitial)
	spec := specOf("id INT", "v BIGINT")
	a := start(t, cfg, spec, nil, newMemState(t))
	a.until(0)
	pgExec(t, c, `INSERT INTO t SELECT g, g FROM generate_series(1, 20000) g`)
	for end := time.Now().Add(time.Minute); len(a.rows) == 0 && time.Now().Before(end); {
		a.produce()
	}
	if len(a.rows) == 0 || len(a.rows) >= 20000 {
		t.Fatalf("first batch %d rows, want part of the transaction", len(a.rows))
	}
	off := mustOffset(t, a.src, 1)
	if o := offsetLSN(t, off); o.Txn == 0 || o.Skip != len(a.rows) {
		t.Fatalf("offset %+v, want the cut transaction with %d rows emitted", o, len(a.rows))
	}
	first := a.rows
	a.close()
	pgExec(t, c, `INSERT INTO t SELECT g, g FROM generate_series(20001, 20100) g`)
	b := start(t, cfg, spec, off, newMemState(t))
	b.until(20100 - len(first))
	idsOnce(t, append(slices.Clone(first), b.rows...), 1, 20100)
}

// fold applies a changelog to a multiset of rows ("a|b" without the kind).
func fold(t testing.TB, rows []string) map[string]int {
	t.Helper()
	m := map[string]int{}
	for _, r := range rows {
		kind, row, _ := strings.Cut(r, "|")
		switch kind {
		case "+I", "+U":
			m[row]++
		case "-U", "-D":
			if m[row] == 0 {
				t.Fatalf("%s retracts a row that is not there", r)
			}
			m[row]--
			if m[row] == 0 {
				delete(m, row)
			}
		}
	}
	return m
}

func pgRows(t testing.TB, c *pgx.Conn, sql string) map[string]int {
	t.Helper()
	rows, err := c.Query(context.Background(), sql)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	m := map[string]int{}
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			t.Fatal(err)
		}
		parts := make([]string, len(vals))
		for i, v := range vals {
			if v == nil {
				parts[i] = "NULL"
			} else {
				parts[i] = fmt.Sprint(v)
			}
		}
		m[strings.Join(parts, "|")]++
	}
	return m
}

func equalMultisets(t testing.TB, what string, got, want map[string]int) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d distinct rows, want %d", what, len(got), len(want))
	}
	for k, n := range want {
		if got[k] != n {
			t.Fatalf("%s: row %q %d times, want %d", what, k, got[k], n)
		}
	}
}

// A restore inside the initial snapshot (DEFAULT identity: rows in keyed state; FULL: the snapshot's rows kept in
// state) retracts what the snapshot had emitted and snapshots again from a new slot: the changelog folds to the
// table as it is, changes made meanwhile included, each row once; a change after that streams.
func TestRestoreInsideSnapshotRetracts(t *testing.T) {
	for _, ident := range []string{"DEFAULT", "FULL"} {
		t.Run(ident, func(t *testing.T) {
			pg, c := startPG(t)
			pgExec(t, c, `CREATE TABLE t (id INT PRIMARY KEY, k INT, v BIGINT)`)
			pgExec(t, c, `ALTER TABLE t REPLICA IDENTITY `+ident)
			pgExec(t, c, `INSERT INTO t SELECT g, g % 7, g FROM generate_series(1, 20000) g`)
			cfg := testConfig(t, pg, "t", "s_snap", StartupInitial)
			spec := specOf("id INT", "k INT", "v BIGINT")
			st := newMemState(t)
			a := start(t, cfg, spec, nil, st)
			a.produce()
			if len(a.rows) == 0 || len(a.rows) >= 20000 {
				t.Fatalf("first batch %d rows, want part of the snapshot", len(a.rows))
			}
			off := mustOffset(t, a.src, 1)
			if !offsetLSN(t, off).Snapshot {
				t.Fatalf("offset %s, want one inside the snapshot", off)
			}
			first := a.rows
			a.close()
			pgExec(t, c, `UPDATE t SET v = -v WHERE id % 10 = 0`)
			pgExec(t, c, `DELETE FROM t WHERE id % 13 = 0`)
			// The restored state is what the checkpoint captured: the same backend, nothing written to it since.
			b := start(t, cfg, spec, off, st)
			n := 20000 - 20000/13
			b.until(len(first) + n)
			all := append(slices.Clone(first), b.rows...)
			equalMultisets(t, "after the restore", fold(t, all), pgRows(t, c, `SELECT id, k, v FROM t`))
			pgExec(t, c, `UPDATE t SET v = 0 WHERE id = 1`)
			pgExec(t, c, `DELETE FROM t WHERE id = 2`)
			b.until(len(first) + n + 3)
			all = append(slices.Clone(first), b.rows...)
			equalMultisets(t, "streaming after", fold(t, all), pgRows(t, c, `SELECT id, k, v FROM t`))
		})
	}
}

// Values of every mapped type read exactly, from the snapshot and from the WAL: NUMERIC at its scale, timestamptz
// as the UTC instant, dates, text with quotes and Unicode, bytea, JSON and UUID as text, NULLs.
func TestTypesRoundTrip(t *testing.T) {
	pg, c := startPG(t)
	pgExec(t, c, `SET TimeZone = 'Europe/Berlin'`)
	pgExec(t, c, `CREATE TABLE t (id INT PRIMARY KEY, a SMALLINT, b BIGINT, r REAL, d DOUBLE PRECISION,
		n NUMERIC(12,4), big NUMERIC(30,10), s TEXT, vc VARCHAR(10), ch CHAR(3), ok BOOLEAN, dt DATE,
		ts TIMESTAMP, tz TIMESTAMPTZ, by BYTEA, j JSONB, u UUID, n2 NUMERIC(5,0), iv INTERVAL)`)
	row := `(%d, -32768, 9223372036854775807, 1.5, 0.1, -12345678.1234, 12345678901234567890.0123456789,
		'it''s "quoted" – ünïcødé 🎉', 'abc', 'x', true, '2026-02-28', '2026-03-01 12:34:56.123456',
		'2026-03-01 12:00:00.5+01', '\xdeadbeef', '{"a": [1, "b"]}', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', 99999, '1 day -02:03:04.5')`
	pgExec(t, c, fmt.Sprintf(`INSERT INTO t VALUES `+row, 1))
	pgExec(t, c, `INSERT INTO t (id) VALUES (2)`)
	spec := specOf("id INT", "a SMALLINT", "b BIGINT", "r REAL", "d DOUBLE", "n DECIMAL(12,4)", "big DECIMAL(38,10)",
		"s VARCHAR", "vc VARCHAR", "ch VARCHAR", "ok BOOLEAN", "dt DATE", "ts TIMESTAMP", "tz TIMESTAMP", "by BYTEA",
		"j VARCHAR", "u VARCHAR", "n2 BIGINT")
	// n2 NUMERIC(5,0) does not read into BIGINT: only DECIMAL or VARCHAR.
	if err := (sourceConnector{}).Validate(spec, map[string]string{OptHostname: "127.0.0.1", OptPort: strconv.Itoa(pg.Port),
		OptUsername: "postgres", OptDatabase: "postgres", OptTable: "t", OptSlot: "s_types", OptSSLMode: "disable"},
		connectors.Env{}); code(err) != sqlerr.DatatypeMismatch || err.(*connectors.ConfigError).Column != "n2" {
		t.Fatalf("NUMERIC into BIGINT: %v, want 42804 at n2", err)
	}
	spec = specOf("id INT", "a SMALLINT", "b BIGINT", "r REAL", "d DOUBLE", "n DECIMAL(12,4)", "big DECIMAL(38,10)",
		"s VARCHAR", "vc VARCHAR", "ch VARCHAR", "ok BOOLEAN", "dt DATE", "ts TIMESTAMP", "tz TIMESTAMP", "by BYTEA",
		"j VARCHAR", "u VARCHAR", "n2 DECIMAL(5,0)", "iv INTERVAL")
	h := start(t, testConfig(t, pg, "t", "s_types", StartupInitial), spec, nil, newMemState(t))
	h.until(2)
	pgExec(t, c, fmt.Sprintf(`INSERT INTO t VALUES `+row, 3))
	pgExec(t, c, `INSERT INTO t (id) VALUES (4)`)
	h.until(4)
	want := func(id int) string {
		return fmt.Sprintf(`+I|%d|-32768|9223372036854775807|1.5|0.1|-12345678.1234|12345678901234567890.0123456789|`+
			`it's "quoted" – ünïcødé 🎉|abc|x  |t|2026-02-28|2026-03-01 12:34:56.123456|2026-03-01 11:00:00.5|\xdeadbeef|`+
			`{"a": [1, "b"]}|a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11|99999|21:56:55.5`, id)
	}
	nulls := func(id int) string { return fmt.Sprintf("+I|%d", id) + strings.Repeat("|NULL", 18) }
	for i, w := range []string{want(1), nulls(2), want(3), nulls(4)} {
		if h.rows[i] != w {
			t.Errorf("row %d:\n got %s\nwant %s", i, h.rows[i], w)
		}
	}
}

// An UPDATE that leaves a TOASTed column unchanged sends no value for it ('u'): the source takes it from the old
// row (FULL: the WAL's old tuple; DEFAULT: its state), in the -U and the +U.
func TestUnchangedToast(t *testing.T) {
	for _, ident := range []string{"DEFAULT", "FULL"} {
		t.Run(ident, func(t *testing.T) {
			pg, c := startPG(t)
			pgExec(t, c, `CREATE TABLE t (id INT PRIMARY KEY, v INT, big TEXT)`)
			pgExec(t, c, `ALTER TABLE t ALTER COLUMN big SET STORAGE EXTERNAL`)
			pgExec(t, c, `ALTER TABLE t REPLICA IDENTITY `+ident)
			rng := rand.New(rand.NewPCG(14, 3))
			var sb strings.Builder
			for range 20000 {
				sb.WriteByte(byte('a' + rng.IntN(26)))
			}
			big := sb.String()
			h := start(t, testConfig(t, pg, "t", "s_toast", StartupInitial), specOf("id INT", "v INT", "big VARCHAR"), nil, newMemState(t))
			h.until(0)
			pgExec(t, c, `INSERT INTO t VALUES (1, 1, $1)`, big)
			pgExec(t, c, `UPDATE t SET v = 2 WHERE id = 1`)
			pgExec(t, c, `DELETE FROM t WHERE id = 1`)
			h.until(4)
			want := []string{"+I|1|1|" + big, "-U|1|1|" + big, "+U|1|2|" + big, "-D|1|2|" + big}
			for i, w := range want {
				if h.rows[i] != w {
					t.Errorf("row %d: got %.40s... (%d bytes), want %.40s... (%d bytes)", i, h.rows[i], len(h.rows[i]), w, len(w))
				}
			}
		})
	}
}

// CREATE refuses what cannot give correct retractions or values, with the code and the fix.
func TestValidateRefusals(t *testing.T) {
	pg, c := startPG(t)
	pgExec(t, c, `CREATE TABLE nothing (id INT PRIMARY KEY, v INT)`)
	pgExec(t, c, `ALTER TABLE nothing REPLICA IDENTITY NOTHING`)
	pgExec(t, c, `CREATE TABLE nokey (id INT, v INT)`)
	pgExec(t, c, `CREATE TABLE ok (id INT PRIMARY KEY, v INT, s TEXT, n NUMERIC)`)
	opts := func(table string, extra ...string) map[string]string {
		m := map[string]string{OptHostname: "127.0.0.1", OptPort: strconv.Itoa(pg.Port), OptUsername: "postgres",
			OptDatabase: "postgres", OptTable: table, OptSlot: "s_refuse", OptSSLMode: "disable"}
		for i := 0; i < len(extra); i += 2 {
			m[extra[i]] = extra[i+1]
		}
		return m
	}
	for _, tc := range []struct {
		spec       connectors.Spec
		opts       map[string]string
		code, want string
	}{
		{specOf("id INT", "v INT"), opts("nothing"), sqlerr.InvalidJobState, "REPLICA IDENTITY FULL"},
		{specOf("id INT", "v INT"), opts("nokey"), sqlerr.InvalidJobState, "REPLICA IDENTITY FULL"},
		{specOf("id INT", "v INT"), opts("missing"), sqlerr.UndefinedTable, "does not exist"},
		{specOf("id INT", "w INT"), opts("ok"), sqlerr.UndefinedColumn, `no column "w"`},
		{specOf("id INT", "s BIGINT"), opts("ok"), sqlerr.DatatypeMismatch, "reads into VARCHAR"},
		{specOf("id INT", "v SMALLINT"), opts("ok"), sqlerr.DatatypeMismatch, "does not read into"},
		{specOf("id INT", "n DECIMAL(38,10)"), opts("ok"), sqlerr.DatatypeMismatch, "without a scale"},
		{specOf("id INT"), opts("ok", OptPlugin, "wal2json"), sqlerr.InvalidParameter, "only 'pgoutput'"},
		{specOf("id INT"), opts("ok", OptStartup, "earliest-offset"), sqlerr.InvalidParameter, "'initial' or 'latest-offset'"},
		{specOf("id INT"), opts("ok", OptSlot, "Bad-Slot"), sqlerr.InvalidParameter, "lower-case"},
	} {
		err := (sourceConnector{}).Validate(tc.spec, tc.opts, connectors.Env{})
		if code(err) != tc.code || err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %v: got %v (%s), want %s containing %q", tc.opts[OptTable], tc.spec.Schema, err, code(err), tc.code, tc.want)
		}
	}
	wrongKey := specOf("id INT", "v INT")
	wrongKey.PrimaryKey = []string{"v"}
	if err := (sourceConnector{}).Validate(wrongKey, opts("ok"), connectors.Env{}); code(err) != sqlerr.InvalidParameter {
		t.Errorf("PRIMARY KEY (v) over a table keyed by id: %v, want 22023", err)
	}
	if err := (sourceConnector{}).Validate(specOf("id INT", "v BIGINT", "s VARCHAR", "n VARCHAR"), opts("ok"), connectors.Env{}); err != nil {
		t.Errorf("a readable table: %v", err)
	}
}

func code(err error) string {
	var ce *connectors.ConfigError
	if errors.As(err, &ce) {
		return ce.Code
	}
	return sqlerr.Code(err)
}

// A fresh start does not take over a slot another reader holds (it would drop it): it waits a moment for a
// crashed reader's walsender to let go, then refuses, naming the fix.
func TestSlotInUseRefused(t *testing.T) {
	pg, c := startPG(t)
	pgExec(t, c, `CREATE TABLE t (id INT PRIMARY KEY, v BIGINT)`)
	cfg := testConfig(t, pg, "t", "s_busy", StartupLatest)
	spec := specOf("id INT", "v BIGINT")
	a := start(t, cfg, spec, nil, newMemState(t))
	a.until(0)
	if err := openErr(t, cfg, spec, nil); err == nil || !strings.Contains(err.Error(), "is in use") {
		t.Fatalf("a second reader of slot s_busy: %v, want a refusal", err)
	}
	pgExec(t, c, `INSERT INTO t VALUES (1, 1)`)
	a.until(1) // the first reader's slot still works
}

// A restore waits for the slot's previous reader to let go (a crashed process's walsender holds the slot for a
// moment), then streams from the checkpoint; a reader that does not let go is refused, naming the slot.
func TestRestoreWaitsForTheSlot(t *testing.T) {
	pg, c := startPG(t)
	pgExec(t, c, `CREATE TABLE t (id INT PRIMARY KEY, v BIGINT)`)
	cfg := testConfig(t, pg, "t", "s_held", StartupLatest)
	spec := specOf("id INT", "v BIGINT")
	a := start(t, cfg, spec, nil, newMemState(t))
	a.until(0)
	off := mustOffset(t, a.src, 1)

	if err := openErr(t, cfg, spec, off); err == nil || !strings.Contains(err.Error(), `slot "s_held"`) || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("restoring while another reader holds the slot: %v, want a refusal naming it", err)
	}

	pgExec(t, c, `INSERT INTO t VALUES (1, 1)`)
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		time.Sleep(time.Second)
		a.close()
	}()
	b := start(t, cfg, spec, off, newMemState(t)) // opens while a still reads, streams once a let go
	<-closed
	b.until(1)
	idsOnce(t, b.rows, 1, 1)
}

// openErr opens (and closes) one more source of cfg, restored from off when it is not nil, and returns Open's error.
func openErr(t *testing.T, cfg Config, spec connectors.Spec, off []byte) error {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	src := NewSource(cfg, spec)(0).(*Source)
	defer src.Close()
	if off != nil {
		if err := src.RestoreOffset(off); err != nil {
			t.Fatal(err)
		}
	}
	return src.Open(&exec.TaskContext{Subtask: 0, Parallelism: 1, Alloc: mem, Errors: &exec.Counter{}, State: newMemState(t)})
}

// A TRUNCATE of the table, a change of its columns, and a FULL table turned DEFAULT under the source (its old rows
// would come as keys only) fail the job with an error that says so: none can be followed row by row.
func TestTruncateAndAlterFail(t *testing.T) {
	for _, tc := range []struct{ name, ident, sql, want string }{
		{"truncate", "DEFAULT", `TRUNCATE t`, "TRUNCATE of public.t"},
		{"alter", "DEFAULT", `ALTER TABLE t ADD COLUMN w INT; INSERT INTO t VALUES (2, 2, 2)`, "columns of public.t changed"},
		{"identity", "FULL", `ALTER TABLE t REPLICA IDENTITY DEFAULT; UPDATE t SET v = 5 WHERE id = 1`, "still REPLICA IDENTITY FULL"},
		{"identity-delete", "FULL", `ALTER TABLE t REPLICA IDENTITY DEFAULT; DELETE FROM t WHERE id = 1`, "still REPLICA IDENTITY FULL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pg, c := startPG(t)
			pgExec(t, c, `CREATE TABLE t (id INT PRIMARY KEY, v BIGINT)`)
			pgExec(t, c, `ALTER TABLE t REPLICA IDENTITY `+tc.ident)
			h := start(t, testConfig(t, pg, "t", "s_fail", StartupInitial), specOf("id INT", "v BIGINT"), nil, newMemState(t))
			h.until(0)
			pgExec(t, c, `INSERT INTO t VALUES (1, 1)`)
			h.until(1)
			pgExec(t, c, tc.sql)
			var err error
			for end := time.Now().Add(30 * time.Second); err == nil && time.Now().Before(end); {
				_, err = h.src.Produce(context.Background())
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("after %s: %v, want an error containing %q", tc.sql, err, tc.want)
			}
		})
	}
}

// CREATE refuses a server whose wal_level is not logical (55000), naming the setting.
func TestValidateWalLevel(t *testing.T) {
	pg := pgtest.StartT(t, pgtest.Options{})
	c := pg.ConnectT(t)
	pgExec(t, c, `CREATE TABLE t (id INT PRIMARY KEY)`)
	err := (sourceConnector{}).Validate(specOf("id INT"), map[string]string{OptHostname: "127.0.0.1", OptPort: strconv.Itoa(pg.Port),
		OptUsername: "postgres", OptDatabase: "postgres", OptTable: "t", OptSlot: "s", OptSSLMode: "disable"}, connectors.Env{})
	if code(err) != sqlerr.InvalidJobState || !strings.Contains(err.Error(), "wal_level") {
		t.Fatalf("wal_level replica: %v, want 55000 naming wal_level", err)
	}
}
