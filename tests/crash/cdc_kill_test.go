package crash

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"

	"github.com/clinksql/clinksql/tests/pgtest"
)

var (
	cdcCoversRe    = regexp.MustCompile(`postgres-cdc: checkpoint covers".* checkpoint=(\d+) .*lsn_int=(\d+) snapshot=(\w+)`)
	cdcCompletedRe = regexp.MustCompile(`msg="checkpoint completed" .*job=job-1 checkpoint=(\d+) `)
)

// cdcWatch follows a server's debug lines: the LSN the CDC source's barrier of each checkpoint covered (the
// source's line) and the checkpoints that completed (the engine's line). At the chosen barrier it stops the
// process (SIGSTOP) at once, on the reader goroutine, so the checkpoint cannot complete before the test looks.
type cdcWatch struct {
	mu        sync.Mutex
	covers    map[uint64]uint64
	snap      map[uint64]bool // the barrier came inside the initial snapshot
	completed uint64          // the highest LSN of a completed checkpoint
	minID     uint64          // stop at the first barrier with an id at least this (0: never)
	// inSnapshot: stop only at a barrier inside the snapshot once a checkpoint inside it completed.
	inSnapshot, snapDone bool
	stopped              chan uint64
}

func newCDCWatch(prev *cdcWatch) *cdcWatch {
	w := &cdcWatch{covers: map[uint64]uint64{}, snap: map[uint64]bool{}, stopped: make(chan uint64, 1)}
	if prev != nil {
		w.covers, w.completed = prev.covers, prev.completed
	}
	return w
}

func (w *cdcWatch) see(p *proc, line string) {
	if m := cdcCoversRe.FindStringSubmatch(line); m != nil {
		id, _ := strconv.ParseUint(m[1], 10, 64)
		lsn, _ := strconv.ParseUint(m[2], 10, 64)
		w.mu.Lock()
		w.covers[id], w.snap[id] = lsn, m[3] == "true"
		stop := w.minID != 0 && id >= w.minID && (!w.inSnapshot || w.snapDone && w.snap[id])
		if stop {
			w.minID = 0
		}
		w.mu.Unlock()
		if stop {
			_ = p.cmd.Process.Signal(syscall.SIGSTOP)
			w.stopped <- id
		}
	}
	if m := cdcCompletedRe.FindStringSubmatch(line); m != nil {
		id, _ := strconv.ParseUint(m[1], 10, 64)
		w.mu.Lock()
		w.completed = max(w.completed, w.covers[id])
		w.snapDone = w.snapDone || w.snap[id]
		w.mu.Unlock()
	}
}

func (w *cdcWatch) arm(minID uint64) {
	w.mu.Lock()
	w.minID = minID
	w.mu.Unlock()
}

func cdcGroupBy(t *testing.T, c *pgx.Conn) string {
	t.Helper()
	return strings.Join(pgtest.Lines(t, c, `SELECT k::text || '|' || count(*) || '|' || sum(v) FROM src GROUP BY k ORDER BY k`), "\n")
}

func slotLSN(t *testing.T, c *pgx.Conn) pglogrepl.LSN {
	t.Helper()
	var s string
	if err := c.QueryRow(context.Background(), `SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = 'kill_slot'`).Scan(&s); err != nil {
		t.Fatal(err)
	}
	l, err := pglogrepl.ParseLSN(s)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// The Must-show kill test, Postgres half: `clinksql serve` runs postgres-cdc -> GROUP BY -> a materialized view
// while a writer changes the table. At a CDC checkpoint's barrier (the source's "checkpoint covers" debug line) the
// server is stopped, found not to have completed that checkpoint (no COMPLETED-<id> marker), and killed with
// SIGKILL: provably between the barrier and the completion. The slot's confirmed_flush_lsn is then at most the
// LSN of the last completed checkpoint (and below the killed one's). Restarted, the view equals Postgres' own
// GROUP BY: nothing lost, nothing twice. Two kills (-short), five otherwise.
func TestCDCKillBetweenBarrierAndCompletion(t *testing.T) {
	kills := 5
	if testing.Short() {
		kills = 2
	}
	cdcKill(t, 3000, kills, false)
}

// The same inside the initial snapshot: a checkpoint taken during the snapshot completes, the server is killed at
// a later barrier still inside it; restarted, the source retracts what the interrupted snapshot had emitted and
// snapshots again from a new slot, and the view equals Postgres' GROUP BY.
func TestCDCKillDuringSnapshot(t *testing.T) {
	log := cdcKill(t, 400_000, 1, true)
	if !strings.Contains(log, "retracting its rows and starting over") {
		t.Fatalf("the restarted server did not restore inside the snapshot:\n%s", log)
	}
}

// cdcKill runs the kill test over a table of preload rows, killing kills times (inSnapshot: once, inside the
// initial snapshot); it returns the log of the last run.
func cdcKill(t *testing.T, preload, kills int, inSnapshot bool) string {
	pg := pgtest.StartT(t, pgtest.Options{Logical: true})
	c := pg.ConnectT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for _, sql := range []string{
		`CREATE TABLE src (id INT PRIMARY KEY, k INT, v BIGINT)`,
		fmt.Sprintf(`INSERT INTO src SELECT g, g %% 10, g FROM generate_series(1, %d) g`, preload),
	} {
		if _, err := c.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	it := &iteration{dir: dir, data: filepath.Join(dir, "data"), logs: filepath.Join(dir, "logs")}
	for _, d := range []string{it.data, it.logs} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	defer func() {
		for _, p := range it.procs {
			_ = p.cmd.Process.Signal(syscall.SIGCONT)
			p.kill()
		}
		if t.Failed() {
			for i := 1; i <= it.runs; i++ {
				t.Logf("run %d:\n%s", i, tail(filepath.Join(it.logs, fmt.Sprintf("run-%d.log", i)), 40))
			}
		}
	}()
	start := func(w *cdcWatch) *proc {
		t.Helper()
		p, err := startProc(it.logPath(), func(p *proc, line string) {
			if m := listeningRe.FindStringSubmatch(line); m != nil {
				p.mu.Lock()
				p.addr = strings.TrimRight(m[1], ",;)")
				p.mu.Unlock()
				p.markReady()
			}
			w.see(p, line)
		}, "serve", "--data-dir", it.data, "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0", "--log-level", "debug")
		if err != nil {
			t.Fatal(err)
		}
		it.procs = append(it.procs, p)
		return p
	}
	w := newCDCWatch(nil)
	w.inSnapshot = inSnapshot
	p := start(w)
	conn, err := connect(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	for _, sql := range []string{
		fmt.Sprintf(`SET checkpoint.interval = '%s'`, map[bool]string{false: "300ms", true: "100ms"}[inSnapshot]),
		fmt.Sprintf(`CREATE STREAM s (id INT, k INT, v BIGINT) WITH (connector = 'postgres-cdc', hostname = '127.0.0.1',
			port = '%d', username = 'postgres', 'database-name' = 'postgres', 'table-name' = 'src',
			'slot.name' = 'kill_slot', sslmode = 'disable')`, pg.Port),
		`CREATE MATERIALIZED VIEW mv AS SELECT k, COUNT(*) AS n, SUM(v) AS sv FROM s GROUP BY k`,
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	conn.Close(ctx)

	// The writer: small random transactions until stopped.
	stopWriter := make(chan struct{})
	writerDone := make(chan error, 1)
	go func() {
		wc, err := pg.Connect(context.Background())
		if err != nil {
			writerDone <- err
			return
		}
		defer wc.Close(context.Background())
		rng := rand.New(rand.NewPCG(14, 6))
		next := preload
		for {
			select {
			case <-stopWriter:
				writerDone <- nil
				return
			case <-time.After(5 * time.Millisecond):
			}
			var sql string
			switch rng.IntN(4) {
			case 0, 1:
				next++
				sql = fmt.Sprintf(`INSERT INTO src VALUES (%d, %d, %d)`, next, rng.IntN(10), rng.IntN(1000))
			case 2:
				sql = fmt.Sprintf(`UPDATE src SET v = v + 1, k = %d WHERE id = %d`, rng.IntN(10), 1+rng.IntN(next))
			case 3:
				sql = fmt.Sprintf(`DELETE FROM src WHERE id = %d`, 1+rng.IntN(next))
			}
			if _, err := wc.Exec(context.Background(), sql); err != nil {
				writerDone <- fmt.Errorf("%s: %w", sql, err)
				return
			}
		}
	}()

	for kill := 0; kill < kills; kill++ {
		// Let a few checkpoints complete first, then stop at the next barrier (inside the snapshot: the first
		// after one inside it completed).
		w.mu.Lock()
		next := uint64(len(w.covers)) + 4
		for id := range w.covers {
			next = max(next, id+4)
		}
		if inSnapshot {
			next = 1
		}
		w.mu.Unlock()
		w.arm(next)
		var id uint64
		for {
			select {
			case id = <-w.stopped:
			case <-p.exited:
				t.Fatalf("the server exited: %v\n%s", p.err, tail(p.log, 30))
			case <-time.After(2 * time.Minute):
				t.Fatalf("no CDC checkpoint %d within 2 minutes (inside the snapshot: %v)", next, inSnapshot)
			}
			marker, _ := filepath.Glob(filepath.Join(it.data, "jobs", "*", "checkpoints", fmt.Sprintf("COMPLETED-%d", id)))
			if len(marker) == 0 {
				break
			}
			// Completed before the stop: try the next barrier.
			w.arm(id + 1)
			_ = p.cmd.Process.Signal(syscall.SIGCONT)
		}
		p.kill()
		w.mu.Lock()
		killedLSN, lastDone := pglogrepl.LSN(w.covers[id]), pglogrepl.LSN(w.completed)
		w.mu.Unlock()
		confirmed := slotLSN(t, c)
		t.Logf("kill %d at the barrier of checkpoint %d (LSN %s): last completed LSN %s, slot confirmed %s",
			kill, id, killedLSN, lastDone, confirmed)
		if lastDone == 0 {
			t.Fatalf("no checkpoint completed before the kill")
		}
		if confirmed > lastDone {
			t.Fatalf("the slot is confirmed up to %s, past the last completed checkpoint's %s", confirmed, lastDone)
		}
		if killedLSN > lastDone && confirmed >= killedLSN {
			t.Fatalf("the slot is confirmed up to %s, the killed checkpoint's LSN %s", confirmed, killedLSN)
		}
		// Restart; the next watch keeps what this one learnt (the restored checkpoint's LSN is the last completed).
		w = newCDCWatch(w)
		p = start(w)
		if err := p.waitReady(time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	close(stopWriter)
	if err := <-writerDone; err != nil {
		t.Fatal(err)
	}
	want := cdcGroupBy(t, c)
	conn, err = connect(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var got string
	for end := time.Now().Add(time.Minute); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		rows, err := conn.Query(ctx, `SELECT k, n, sv FROM mv ORDER BY k`)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for rows.Next() {
			raw := rows.RawValues()
			out = append(out, string(raw[0])+"|"+string(raw[1])+"|"+string(raw[2]))
		}
		rows.Close()
		if got = strings.Join(out, "\n"); got == want {
			data, _ := os.ReadFile(p.log)
			return string(data)
		}
	}
	t.Fatalf("after %d kills the view\n%s\nwant Postgres' GROUP BY\n%s", kills, got, want)
	return ""
}
