package postgres

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/jackc/pgx/v5"

	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/tests/pgtest"
)

var kvSchema = arrow.NewSchema([]arrow.Field{
	{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "v", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

// rig is one test's server, table and allocator.
type rig struct {
	t    *testing.T
	pg   *pgtest.Postgres
	db   *pgx.Conn
	mem  *memory.CheckedAllocator
	done map[uint64]bool // the checkpoints IsCompleted reports
}

func newRig(t *testing.T) *rig {
	pg := pgtest.StartT(t, pgtest.Options{MaxPreparedTransactions: 20})
	r := &rig{t: t, pg: pg, db: pg.ConnectT(t), mem: memory.NewCheckedAllocator(memory.DefaultAllocator), done: map[uint64]bool{}}
	t.Cleanup(func() { r.mem.AssertSize(t, 0) })
	return r
}

func (r *rig) exec(sql string, args ...any) {
	r.t.Helper()
	if _, err := r.db.Exec(context.Background(), sql, args...); err != nil {
		r.t.Fatalf("%s: %v", sql, err)
	}
}

// rows returns the result of sql, each row's values as text joined by '|', sorted.
func (r *rig) rows(sql string) []string {
	r.t.Helper()
	rows, err := r.db.Query(context.Background(), sql, pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		r.t.Fatalf("%s: %v", sql, err)
	}
	var out []string
	for rows.Next() {
		vals := rows.RawValues()
		parts := make([]string, len(vals))
		for i, v := range vals {
			if v == nil {
				parts[i] = "NULL"
			} else {
				parts[i] = string(v)
			}
		}
		out = append(out, strings.Join(parts, "|"))
	}
	if err := rows.Err(); err != nil {
		r.t.Fatalf("%s: %v", sql, err)
	}
	slices.Sort(out)
	return out
}

func (r *rig) prepared() []string {
	return r.rows(`SELECT gid FROM pg_prepared_xacts`)
}

func (r *rig) config(schema *arrow.Schema, key []string, extra ...string) Config {
	r.t.Helper()
	opts := map[string]string{"url": r.pg.DSN(), "table-name": "public.t"}
	for i := 0; i+1 < len(extra); i += 2 {
		opts[extra[i]] = extra[i+1]
	}
	cfg, err := ConfigFromOptions(schema, key, opts)
	if err != nil {
		r.t.Fatal(err)
	}
	return cfg
}

// open opens subtask sub of a sink of cfg, as job-1's operator "sink".
func (r *rig) open(cfg Config, sub, par int) *sink {
	r.t.Helper()
	s := NewSink(cfg).(*sink)
	ctx := &exec.TaskContext{Job: "job-1", Operator: "sink", Subtask: sub, Parallelism: par, Alloc: r.mem,
		IsCompleted: func(id uint64) bool { return r.done[id] }}
	if err := s.Open(ctx); err != nil {
		r.t.Fatal(err)
	}
	return s
}

// batch builds (k, v) rows; kinds nil for all inserts.
func (r *rig) batch(ks []int64, vs []string, kinds []exec.RowKind) exec.Batch {
	kb := array.NewInt64Builder(r.mem)
	defer kb.Release()
	vb := array.NewStringBuilder(r.mem)
	defer vb.Release()
	for i, k := range ks {
		kb.Append(k)
		if vs[i] == "NULL" {
			vb.AppendNull()
		} else {
			vb.Append(vs[i])
		}
	}
	ka, va := kb.NewArray(), vb.NewArray()
	defer ka.Release()
	defer va.Release()
	return exec.Batch{Rec: array.NewRecordBatch(kvSchema, []arrow.Array{ka, va}, int64(len(ks))), Kinds: kinds}
}

func (r *rig) rowsOf(ks []int64, vs []string) exec.Batch { return r.batch(ks, vs, nil) }

func seq(from, to int64) ([]int64, []string) {
	var ks []int64
	var vs []string
	for k := from; k <= to; k++ {
		ks = append(ks, k)
		vs = append(vs, fmt.Sprintf("v%d", k))
	}
	return ks, vs
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// A crash between PREPARE TRANSACTION and COMMIT PREPARED: the rows stay invisible, and the next Open commits
// them because their checkpoint completed, once: another Open after it changes nothing.
func TestRecoveryCommitsPreparedOfCompletedCheckpoint(t *testing.T) {
	r := newRig(t)
	r.exec(`CREATE TABLE t (k bigint, v text)`)
	cfg := r.config(kvSchema, nil)
	s := r.open(cfg, 0, 1)
	must(t, s.Write(r.rowsOf(seq(1, 100))))
	must(t, s.PreCommit(1))
	if got := r.rows(`SELECT count(*) FROM t`); got[0] != "0" {
		t.Fatalf("prepared rows visible: %v", got)
	}
	if got := r.prepared(); !slices.Equal(got, []string{"clink-job-1-sink-0-1"}) {
		t.Fatalf("prepared transactions %v", got)
	}
	must(t, s.Close()) // the crash: checkpoint 1 completed, its commit never ran
	r.done[1] = true
	s = r.open(cfg, 0, 1)
	if got := r.rows(`SELECT count(*), count(DISTINCT k), min(k), max(k) FROM t`); got[0] != "100|100|1|100" {
		t.Fatalf("after recovery: %v, want rows 1..100 once", got)
	}
	if got := r.prepared(); len(got) != 0 {
		t.Fatalf("prepared transactions left: %v", got)
	}
	must(t, s.Commit(1)) // the runtime's commit of the restored checkpoint: nothing of this incarnation
	must(t, s.Close())
	s = r.open(cfg, 0, 1)
	must(t, s.Close())
	if got := r.rows(`SELECT count(*) FROM t`); got[0] != "100" {
		t.Fatalf("after a second recovery: %v rows, want 100", got)
	}
}

// The prepared transaction of a checkpoint that never completed is rolled back at Open: its rows never appear.
// Subtask 0 also settles the transactions of subtasks beyond a smaller parallelism.
func TestRecoveryRollsBackPreparedOfIncompleteCheckpoint(t *testing.T) {
	r := newRig(t)
	r.exec(`CREATE TABLE t (k bigint, v text)`)
	cfg := r.config(kvSchema, nil)
	s0, s1 := r.open(cfg, 0, 2), r.open(cfg, 1, 2)
	must(t, s0.Write(r.rowsOf(seq(1, 10))))
	must(t, s1.Write(r.rowsOf(seq(11, 20))))
	must(t, s0.PreCommit(1))
	must(t, s1.PreCommit(1))
	must(t, s0.Commit(1))
	must(t, s1.Commit(1))
	must(t, s0.Write(r.rowsOf(seq(21, 30))))
	must(t, s1.Write(r.rowsOf(seq(31, 40))))
	must(t, s0.PreCommit(2))
	must(t, s1.PreCommit(2))
	must(t, s0.PreCommit(3)) // an interval without rows prepares nothing
	must(t, s0.Close())
	must(t, s1.Close())
	if got := r.prepared(); !slices.Equal(got, []string{"clink-job-1-sink-0-2", "clink-job-1-sink-1-2"}) {
		t.Fatalf("prepared transactions %v", got)
	}
	r.done[1] = true // checkpoint 2 never completed
	s := r.open(cfg, 0, 1)
	defer s.Close()
	if got := r.prepared(); len(got) != 0 {
		t.Fatalf("prepared transactions left after recovery: %v", got)
	}
	if got := r.rows(`SELECT count(*), min(k), max(k) FROM t`); got[0] != "20|1|20" {
		t.Fatalf("rows %v, want 1..20 (checkpoint 2 rolled back)", got)
	}
}

// Commit tells a prepared transaction that committed from one rolled back behind its back: its identifier is
// gone in both cases.
func TestCommitOfVanishedPreparedTransaction(t *testing.T) {
	r := newRig(t)
	r.exec(`CREATE TABLE t (k bigint, v text)`)
	s := r.open(r.config(kvSchema, nil), 0, 1)
	defer s.Close()
	must(t, s.Write(r.rowsOf(seq(1, 5))))
	must(t, s.PreCommit(1))
	r.exec(`COMMIT PREPARED 'clink-job-1-sink-0-1'`) // as if our COMMIT PREPARED's answer was lost
	if err := s.Commit(1); err != nil {
		t.Fatalf("commit of a transaction that committed: %v", err)
	}
	must(t, s.Commit(1)) // idempotent
	must(t, s.Write(r.rowsOf(seq(6, 10))))
	must(t, s.PreCommit(2))
	r.exec(`ROLLBACK PREPARED 'clink-job-1-sink-0-2'`)
	if err := s.Commit(2); err == nil || !strings.Contains(err.Error(), "did not commit") {
		t.Fatalf("commit of a transaction rolled back outside: %v, want an error", err)
	}
	if got := r.rows(`SELECT count(*) FROM t`); got[0] != "5" {
		t.Fatalf("rows %v, want 5", got)
	}
	if s.CommittedBytes() == 0 {
		t.Errorf("no committed bytes counted")
	}
}

// Commit may run on another goroutine while the next interval writes: one COMMIT PREPARED per checkpoint up to
// the id, in order, over its own connection.
func TestCommitConcurrentWithWrite(t *testing.T) {
	r := newRig(t)
	r.exec(`CREATE TABLE t (k bigint, v text)`)
	s := r.open(r.config(kvSchema, nil, "sink.buffer-flush.max-rows", "7"), 0, 1)
	defer s.Close()
	commits := make(chan uint64, 100)
	errs := make(chan error, 1)
	go func() {
		var err error
		for id := range commits {
			if e := s.Commit(id); e != nil && err == nil {
				err = e
			}
		}
		errs <- err
	}()
	for id := uint64(1); id <= 20; id++ {
		must(t, s.Write(r.rowsOf(seq(int64(id-1)*50+1, int64(id)*50))))
		must(t, s.PreCommit(id))
		if id%3 != 1 { // some checkpoints complete only with a later one
			commits <- id
		}
	}
	close(commits)
	must(t, <-errs)
	must(t, s.Commit(20))
	if got := r.rows(`SELECT count(*), count(DISTINCT k) FROM t`); got[0] != "1000|1000" {
		t.Fatalf("rows %v, want 1000 distinct", got)
	}
}

// The upsert sink applies a changelog by key: a key's changes within one batch and across batches in order, -U
// skipped, -D deleting, NULL values kept.
func TestUpsertAppliesChangelogInOrder(t *testing.T) {
	r := newRig(t)
	r.exec(`CREATE TABLE t (k bigint PRIMARY KEY, v text)`)
	r.exec(`INSERT INTO t VALUES (100, 'old'), (101, 'old')`)
	s := r.open(r.config(kvSchema, []string{"k"}, "sink.buffer-flush.max-rows", "3"), 0, 1)
	defer s.Close()
	I, UB, UA, D := exec.Insert, exec.UpdateBefore, exec.UpdateAfter, exec.Delete
	must(t, s.Write(r.batch(
		[]int64{1, 1, 1, 2, 1, 1, 2, 100, 3},
		[]string{"a", "a", "b", "x", "b", "c", "x", "old", "NULL"},
		[]exec.RowKind{I, UB, UA, I, D, I, D, D, I})))
	must(t, s.Write(r.batch([]int64{101, 101, 3, 4}, []string{"old", "new", "NULL", "y"}, []exec.RowKind{UB, UA, UB, UA})))
	must(t, s.PreCommit(1))
	must(t, s.Commit(1))
	want := []string{"1|c", "101|new", "3|NULL", "4|y"}
	if got := r.rows(`SELECT k, v FROM t`); !slices.Equal(got, slices.Sorted(slices.Values(want))) {
		t.Fatalf("table %v, want %v", got, want)
	}
	must(t, s.Write(r.batch([]int64{4, 4, 1}, []string{"y", "z", "c"}, []exec.RowKind{UB, UA, D})))
	must(t, s.PreCommit(2))
	must(t, s.Commit(2))
	want = []string{"101|new", "3|NULL", "4|z"}
	if got := r.rows(`SELECT k, v FROM t`); !slices.Equal(got, slices.Sorted(slices.Values(want))) {
		t.Fatalf("table %v, want %v", got, want)
	}
}

// Keys Postgres equates though their texts differ (a uuid's case, char(n) padding) are one key: of their changes in one flush the last one counts, as it would applied one by one. A deleted key
// that its column's modifier would cut (no INSERT could have stored it) deletes nothing, not the row its cut
// text names.
func TestUpsertKeysAsPostgresComparesThem(t *testing.T) {
	I, D := exec.Insert, exec.Delete
	lower, upper := "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11"
	for _, tc := range []struct {
		name, typ string
		before    []string // rows (v|k) in the table before
		ks        []int64
		vs        []string
		kinds     []exec.RowKind
		want      []string // rows (v|k) after
	}{
		{"uuid delete then insert", "uuid", []string{lower + "|1"}, []int64{1, 2}, []string{upper, lower}, []exec.RowKind{D, I}, []string{lower + "|2"}},
		{"uuid insert then delete", "uuid", []string{lower + "|1"}, []int64{2, 1}, []string{lower, upper}, []exec.RowKind{I, D}, nil},
		{"uuid two inserts", "uuid", nil, []int64{1, 2}, []string{upper, lower}, []exec.RowKind{I, I}, []string{lower + "|2"}},
		{"char padding", "char(3)", []string{"ab |1"}, []int64{1, 2}, []string{"ab", "ab "}, []exec.RowKind{D, I}, []string{"ab |2"}},
		{"char insert", "char(3)", nil, []int64{1}, []string{"abc"}, []exec.RowKind{I}, []string{"abc|1"}},
		{"varchar too long", "varchar(3)", []string{"abc|1"}, []int64{9}, []string{"abcd"}, []exec.RowKind{D}, []string{"abc|1"}},
		{"varchar trailing spaces", "varchar(3)", []string{"abc|1"}, []int64{9}, []string{"abc  "}, []exec.RowKind{D}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			r.exec(`CREATE TABLE t (k bigint, v ` + tc.typ + ` PRIMARY KEY)`)
			for _, row := range tc.before {
				f := strings.Split(row, "|")
				r.exec(`INSERT INTO t (v, k) VALUES ($1, $2::bigint)`, f[0], f[1])
			}
			s := r.open(r.config(kvSchema, []string{"v"}), 0, 1)
			defer s.Close()
			must(t, s.Write(r.batch(tc.ks, tc.vs, tc.kinds)))
			must(t, s.PreCommit(1))
			must(t, s.Commit(1))
			if got := r.rows(`SELECT v, k FROM t`); !slices.Equal(got, tc.want) {
				t.Fatalf("table %v, want %v", got, tc.want)
			}
		})
	}
}

// A server that cannot be reached is a clear error at the 'url' option (08001).
func TestUnreachableServer(t *testing.T) {
	cfg, err := ConfigFromOptions(kvSchema, nil, map[string]string{"url": "postgres://postgres@127.0.0.1:1/postgres?connect_timeout=2", "table-name": "t"})
	must(t, err)
	err = Check(cfg)
	if err == nil || !strings.Contains(err.Error(), "cannot connect to 127.0.0.1:1/postgres") {
		t.Fatalf("got %v", err)
	}
}

func TestParseTableAndURL(t *testing.T) {
	for in, want := range map[string]Table{
		"t": {Name: "t"}, "Public.T": {Schema: "public", Name: "t"}, `"My"."Tab.le"`: {Schema: "My", Name: "Tab.le"},
		`s."a""b"`: {Schema: "s", Name: `a"b`},
	} {
		got, err := ParseTable(in)
		if err != nil || got != want {
			t.Errorf("ParseTable(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "a.", "a.b.c", `"a`} {
		if _, err := ParseTable(bad); err == nil {
			t.Errorf("ParseTable(%q): want an error", bad)
		}
	}
	c, err := ParseURL("jdbc:postgresql://db.example:5433/shop?user=u&password=p")
	if err != nil || c.Host != "db.example" || c.Port != 5433 || c.Database != "shop" || c.User != "u" || c.Password != "p" {
		t.Fatalf("jdbc URL: %+v %v", c, err)
	}
	cfg, err := ConfigFromOptions(kvSchema, nil, map[string]string{"url": "postgres://a:b@h/d", "table-name": "t", "username": "x", "password": "y"})
	if err != nil || cfg.Conn.User != "x" || cfg.Conn.Password != "y" {
		t.Fatalf("overrides: %+v %v", cfg.Conn, err)
	}
}

// A value out of the range of its column's type in the table fails the write with the column named, as
// Postgres' own cast would.
func TestWriteOutOfRange(t *testing.T) {
	r := newRig(t)
	r.exec(`CREATE TABLE t (k int, v text)`)
	s := r.open(r.config(kvSchema, nil), 0, 1)
	defer s.Close()
	err := s.Write(r.rowsOf([]int64{1, 1 << 40}, []string{"a", "b"}))
	if err == nil || !strings.Contains(err.Error(), "column k: 1099511627776 is out of range for type integer") {
		t.Fatalf("got %v", err)
	}
}

// A Postgres server that crashes and restarts between PREPARE and COMMIT PREPARED keeps the prepared transaction;
// Commit connects again and commits it.
func TestCommitAfterServerRestart(t *testing.T) {
	r := newRig(t)
	r.exec(`CREATE TABLE t (k bigint, v text)`)
	s := r.open(r.config(kvSchema, nil), 0, 1)
	defer s.Close()
	must(t, s.Write(r.rowsOf(seq(1, 10))))
	must(t, s.PreCommit(1))
	r.db.Close(context.Background())
	r.pg.Kill()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	must(t, r.pg.Restart(ctx))
	r.db = r.pg.ConnectT(t)
	if got := r.prepared(); !slices.Equal(got, []string{"clink-job-1-sink-0-1"}) {
		t.Fatalf("prepared transactions after the restart: %v", got)
	}
	must(t, s.Commit(1))
	if got := r.rows(`SELECT count(*) FROM t`); got[0] != "10" {
		t.Fatalf("rows %v, want 10", got)
	}
}

// A string too long for its varchar(n) column fails the write in both sinks, as an INSERT would: the upsert's
// cast of its text does not truncate it to n characters (as an explicit ::varchar(n) cast would) without an error.
func TestWriteTooLongForVarchar(t *testing.T) {
	r := newRig(t)
	r.exec(`CREATE TABLE t (k bigint PRIMARY KEY, v varchar(3))`)
	for _, key := range [][]string{nil, {"k"}} {
		s := r.open(r.config(kvSchema, key), 0, 1)
		err := s.Write(r.rowsOf([]int64{1}, []string{"abcdef"}))
		if err == nil {
			err = s.PreCommit(1)
		}
		s.Close()
		if err == nil || !strings.Contains(err.Error(), "value too long for type character varying(3)") {
			t.Errorf("key %v: got %v; table %v", key, err, r.rows(`SELECT k, v FROM t`))
		}
	}
}
