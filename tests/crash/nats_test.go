package crash

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/clinksql/clinksql/tests/natstest"
)

// The NATS pipeline: the generator's rows (generate) are published, during the run and in event-time order, as
// JSON messages into the stream EV of a nats-server of the iteration's own (a process that outlives clinksql's
// kills), then one message far in the future so that every window of the rows fires. Two streams read EV, each with
// its own durable consumer (a durable consumer is one job's), and feed the windowed aggregate into a NATS sink
// (the stream AGG, with a duplicate window) and into a Parquet sink. The NATS source cannot replay: it
// acknowledges a message only when the checkpoint covering it completes, and a restore has the server redeliver
// the rest. Both outputs must equal the Go model (modelAgg) as multisets: every message counted exactly once, no
// output message twice.

const (
	natsIn  = "EV"
	natsAgg = "AGG"
)

// natsRun is an iteration's nats-server and the producer of its input.
type natsRun struct {
	srv  *natstest.Server
	js   jetstream.JetStream
	rows []genRow
	done chan error
	ctx  context.Context
	stop context.CancelFunc
}

func startNATS(t *testing.T, c *iterConfig) *natsRun {
	srv := natstest.StartT(t, natstest.Options{})
	srv.CreateStream(t, jetstream.StreamConfig{Name: natsIn, Subjects: []string{"ev.>"}})
	// Every other seed's sink stream allows atomic batches (a checkpoint's messages stored all or none).
	srv.CreateStream(t, jetstream.StreamConfig{Name: natsAgg, Subjects: []string{"agg.>"}, Duplicates: 5 * time.Minute,
		AllowAtomicPublish: c.Seed%2 == 0})
	n := &natsRun{srv: srv, js: srv.JetStream(t), rows: c.generate(), done: make(chan error, 1)}
	n.ctx, n.stop = context.WithCancel(context.Background())
	t.Cleanup(n.stop)
	return n
}

// natsSQL is the pipeline: settings, the two NATS streams over EV and the two jobs.
func natsSQL(c *iterConfig, url string) []string {
	wm := "ts"
	if c.WMDelayS > 0 {
		wm = fmt.Sprintf("ts - INTERVAL '%d' SECOND", c.WMDelayS)
	}
	stream := func(name, consumer string) string {
		return fmt.Sprintf(`CREATE STREAM %s (id BIGINT, ts TIMESTAMP(3), k INT, v BIGINT, name VARCHAR,
  WATERMARK FOR ts AS %s) WITH (connector = 'nats', 'nats.url' = '%s', 'nats.stream' = '%s',
  'nats.consumer' = '%s', format = 'json')`, name, wm, url, natsIn, consumer)
	}
	return []string{
		fmt.Sprintf("SET checkpoint.interval = '%dms'", c.Interval.Milliseconds()),
		fmt.Sprintf("SET checkpoint.mode = '%s'", c.Mode),
		fmt.Sprintf("SET parallelism = %d", c.Parallelism),
		stream("nev1", "agg_nats"),
		stream("nev2", "agg_parquet"),
		fmt.Sprintf(`CREATE SINK nagg_nats (%s) WITH (connector = 'nats', 'nats.url' = '%s', 'nats.subject' = 'agg.out', format = 'json')`,
			aggColumnsSQL, url),
		`INSERT INTO nagg_nats ` + c.aggSelect("nev1"),
		`CREATE SINK nagg_out (` + aggColumnsSQL + `) WITH (connector = 'parquet', path = 'out/nagg')`,
		`INSERT INTO nagg_out ` + c.aggSelect("nev2"),
	}
}

// produce publishes the rows in order, spread over c.Duration, then the far-future message; the result comes on
// n.done.
func (n *natsRun) produce(c *iterConfig) {
	go func() { n.done <- n.produceRows(c) }()
}

func (n *natsRun) produceRows(c *iterConfig) error {
	tick := time.Duration(c.TickMs) * time.Millisecond
	per := max(1, int(int64(len(n.rows))*int64(tick)/int64(max(c.Duration, tick))))
	ticker := time.NewTicker(tick)
	defer ticker.Stop()
	for from := 0; from < len(n.rows); from += per {
		batch := n.rows[from:min(from+per, len(n.rows))]
		ps := make([][]byte, len(batch))
		for i, r := range batch {
			ps[i] = rowJSON(r)
		}
		ctx, cancel := context.WithTimeout(n.ctx, time.Minute)
		err := natstest.Publish(ctx, n.js, "ev.rows", ps)
		cancel()
		if err != nil {
			return fmt.Errorf("publishing rows %d..%d: %w", from, from+len(batch)-1, err)
		}
		select {
		case <-ticker.C:
		case <-n.ctx.Done():
			return n.ctx.Err()
		}
	}
	ctx, cancel := context.WithTimeout(n.ctx, time.Minute)
	defer cancel()
	end := fmt.Appendf(nil, `{"id":-1,"ts":"2030-01-01 00:00:00","k":0,"v":0,"name":"end"}`)
	return natstest.Publish(ctx, n.js, "ev.rows", [][]byte{end})
}

// readAgg reads the sink stream's messages (a row's "file" is its stream sequence and message id).
func (n *natsRun) readAgg(t *testing.T) *committed {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	msgs, err := natstest.ReadAll(ctx, n.js, natsAgg)
	if err != nil {
		t.Fatal(err)
	}
	out := &committed{n: len(msgs)}
	for _, m := range msgs {
		row, err := aggFromJSON(m.Data())
		if err != nil {
			t.Fatalf("stream %s: %v: %s", natsAgg, err, m.Data())
		}
		md, _ := m.Metadata()
		out.rows = append(out.rows, row)
		out.files = append(out.files, fmt.Sprintf("seq%d(%s)", md.Sequence.Stream, m.Headers().Get(jetstream.MsgIDHeader)))
	}
	return out
}

func (n *natsRun) aggMsgs() int {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := n.js.Stream(ctx, natsAgg)
	if err != nil {
		return -1
	}
	return int(st.CachedInfo().State.Msgs)
}

// waitOutputs waits until both sinks hold the model's row count, then three checkpoint intervals more (a
// duplicate would come late), and compares them with the model.
func waitOutputs(t *testing.T, it *iteration, n *natsRun, model []string) {
	deadline := time.Now().Add(2 * time.Minute)
	dir := filepath.Join(it.data, "out", "nagg")
	for {
		pq, err := readCommittedParquet(dir, aggColumns)
		if err != nil {
			t.Fatal(err)
		}
		if len(pq.rows) >= len(model) && n.aggMsgs() >= len(model) {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("outputs incomplete after 2 minutes: parquet %d rows, %s %d messages, want %d", len(pq.rows), natsAgg, n.aggMsgs(), len(model))
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(3 * it.cfg.Interval)
	pq, err := readCommittedParquet(dir, aggColumns)
	if err != nil {
		t.Fatal(err)
	}
	if d := diff(pq, model); d != "" {
		t.Errorf("parquet sink: %s", d)
	}
	if d := diff(n.readAgg(t), model); d != "" {
		t.Errorf("nats sink (stream %s): %s", natsAgg, d)
	}
}

func setupServe(ctx context.Context, it *iteration, stmts []string) (*proc, error) {
	p, err := startServe(it)
	if err != nil {
		return nil, err
	}
	conn, err := connect(ctx, p)
	if err != nil {
		return p, err
	}
	defer conn.Close(context.Background())
	for _, stmt := range stmts {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			return p, fmt.Errorf("%s: %w", firstLine(stmt), err)
		}
	}
	return p, nil
}

// TestCrashKill9NATS: per seeded iteration (the datagen harness's draws: rows, keys, window, interval, mode,
// parallelism and kill moments), the NATS pipeline is killed -9 one to three times at seeded moments (a quarter
// of them in the middle of a graceful stop) and restarted on its data directory; then both outputs must equal the
// model. -short: 2 iterations; CRASH_N, CRASH_SEED as for TestCrashKill9.
func TestCrashKill9NATS(t *testing.T) {
	ss := seeds(t)
	if testing.Short() && os.Getenv("CRASH_N") == "" && os.Getenv("CRASH_SEED") == "" {
		ss = ss[:2]
	}
	kills, aimed := 0, 0
	for _, seed := range ss {
		cfg := newIterConfig(seed)
		cfg.TickMs = 10
		t.Run(fmt.Sprintf("seed-%d-%s-p%d", seed, cfg.Mode, cfg.Parallelism), func(t *testing.T) {
			k, a := runNATSIteration(t, cfg)
			kills += k
			aimed += a
		})
	}
	t.Logf("%d iterations, %d kill -9s (%d of them aimed between a checkpoint's COMPLETED marker and its commit)", len(ss), kills, aimed)
}

// natsCompletedRe is the coordinator's "checkpoint completed" line of the NATS sink's job: a kill aimed at it lands
// after COMPLETED-N is durable and before (or while) the NATS sink publishes checkpoint N and the sources
// acknowledge what it covered.
var natsCompletedRe = regexp.MustCompile(`msg="checkpoint completed" .*job=job-1 `)

// runNATSIteration returns the kills and how many of them were aimed at a line.
func runNATSIteration(t *testing.T, cfg *iterConfig) (int, int) {
	t.Logf("nats: %s", cfg)
	it := newIteration(t, cfg, "crash-nats", "TestCrashKill9NATS", "")
	n := startNATS(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// A kill the seed aims at the "checkpoint completed" line arms a trigger before the process starts; the
	// in-doubt kills of the Kafka pipeline have no NATS counterpart and come at their moment.
	arm := func(i int) <-chan struct{} {
		if i >= len(cfg.Kills) || cfg.Kills[i].On != onCompleted {
			return nil
		}
		k := cfg.Kills[i]
		lt := &lineTrigger{re: natsCompletedRe, nth: k.Nth, delay: k.Delay, hit: make(chan struct{})}
		it.arm = lt
		return lt.hit
	}
	hit := arm(0)
	p, err := setupServe(ctx, it, natsSQL(cfg, n.srv.URL()))
	if err != nil {
		t.Fatalf("setup: %v", err)
	}
	n.produce(cfg)
	kills, aimed := 0, 0
	for i, k := range cfg.Kills {
		wait := k.After
		if hit != nil {
			wait = k.Fallback
		}
		select {
		case <-hit:
			aimed++
		case <-time.After(wait):
		case <-p.exited:
		}
		if k.Term {
			p.terminate(k.Grace)
		}
		p.kill()
		kills++
		hit = arm(i + 1)
		if p, err = startServe(it); err != nil {
			t.Fatalf("restart: %v", err)
		}
	}
	if err := <-n.done; err != nil {
		t.Fatalf("the producer: %v", err)
	}
	waitOutputs(t, it, n, modelAgg(cfg, n.rows))
	if err := stopServe(p); err != nil {
		t.Error(err)
	}
	return kills, aimed
}

var reCovers = regexp.MustCompile(`msg="nats source: checkpoint covers".* checkpoint=(\d+) sequence=(\d+)`)

// The Must-show test: clinksql is killed after a checkpoint's barrier reached the NATS source and before the
// checkpoint completed, provably: at the source's "checkpoint covers" line the server is stopped (SIGSTOP), and
// killed only if that checkpoint's COMPLETED marker does not exist (else it continues to the next line). Then the
// consumer shows that nothing past the last completed checkpoint's sequence was acknowledged while messages past
// it had been delivered; the restarted server restores that checkpoint, the server delivers those messages again,
// and the output counts every message exactly once.
func TestNATSKillBetweenBarrierAndCompletion(t *testing.T) {
	cfg := &iterConfig{Seed: 1, Mode: "aligned", Parallelism: 1, Interval: 300 * time.Millisecond, Rows: 6000,
		GenSeed: 7, StepMs: 10, Keys: 5, SlideMs: 1000, SizeMs: 1000, TickMs: 10, Duration: 3 * time.Second}
	it := newIteration(t, cfg, "crash-nats", "TestCrashKill9NATS", "")
	n := startNATS(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	type covers struct{ id, seq uint64 }
	lines := make(chan covers, 1000)
	var mu sync.Mutex
	seqOf := map[uint64]uint64{} // checkpoint id -> the sequence it covers (nev1's job, the NATS sink's)
	// Only the first job's source (job-1: nev1 into the NATS sink) is watched.
	it.arm = nil
	p, err := startProcWatch(it, func(line string) {
		m := reCovers.FindStringSubmatch(line)
		if m == nil || !regexp.MustCompile(`job=job-1\b`).MatchString(line) {
			return
		}
		id, _ := strconv.ParseUint(m[1], 10, 64)
		seq, _ := strconv.ParseUint(m[2], 10, 64)
		mu.Lock()
		seqOf[id] = seq
		mu.Unlock()
		lines <- covers{id, seq}
	})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := connect(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range natsSQL(cfg, n.srv.URL()) {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", firstLine(stmt), err)
		}
	}
	conn.Close(context.Background())
	n.produce(cfg)
	cpDir := filepath.Join(it.data, "jobs", "job-1", "checkpoints")
	completed := func(id uint64) bool {
		_, err := os.Stat(filepath.Join(cpDir, fmt.Sprintf("COMPLETED-%d", id)))
		return err == nil
	}
	var killedAt covers
	tries := 0
	for killedAt.id == 0 {
		var c covers
		select {
		case c = <-lines:
		case <-ctx.Done():
			t.Fatal("no checkpoint caught between its barrier and its completion")
		}
		_ = p.cmd.Process.Signal(syscall.SIGSTOP)
		tries++
		// Only a checkpoint that covers messages its predecessor did not: they were delivered and must not be
		// acknowledged.
		mu.Lock()
		prev, hasPrev := seqOf[c.id-1]
		mu.Unlock()
		if c.id >= 3 && hasPrev && c.seq > prev && !completed(c.id) && len(lines) == 0 {
			p.kill() // SIGKILL works on a stopped process
			killedAt = c
			break
		}
		_ = p.cmd.Process.Signal(syscall.SIGCONT)
	}
	// The last completed checkpoint below the one killed, and what it covered.
	var lastDone, lastSeq uint64
	mu.Lock()
	for id, seq := range seqOf {
		if id < killedAt.id && completed(id) && id > lastDone {
			lastDone, lastSeq = id, seq
		}
	}
	mu.Unlock()
	c, err := n.js.Consumer(ctx, natsIn, "agg_nats")
	if err != nil {
		t.Fatal(err)
	}
	before, err := c.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("killed at checkpoint %d's barrier (covers sequence %d; %d lines seen), last completed checkpoint %d covers "+
		"sequence %d; consumer: delivered up to %d, ack floor %d, %d pending", killedAt.id, killedAt.seq, tries, lastDone, lastSeq,
		before.Delivered.Stream, before.AckFloor.Stream, before.NumAckPending)
	if before.AckFloor.Stream > lastSeq {
		t.Fatalf("ack floor %d is past the last completed checkpoint's sequence %d", before.AckFloor.Stream, lastSeq)
	}
	if got, want := uint64(before.NumAckPending), before.Delivered.Stream-before.AckFloor.Stream; got != want {
		t.Fatalf("%d messages pending, want every one delivered past the ack floor (%d): some past it were acknowledged", got, want)
	}
	if before.Delivered.Stream <= lastSeq {
		t.Fatalf("nothing delivered past the last completed checkpoint (%d): the kill shows no redelivery", lastSeq)
	}

	// Restart: the checkpoint restored is the last completed one, and the consumer is reset to what follows it.
	restored := make(chan uint64, 4)
	reRestored := regexp.MustCompile(`msg="nats source: consuming".* consumer=agg_nats restored_sequence=(\d+)`)
	p, err = startProcWatch(it, func(line string) {
		if m := reRestored.FindStringSubmatch(line); m != nil {
			s, _ := strconv.ParseUint(m[1], 10, 64)
			restored <- s
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case s := <-restored:
		if s != lastSeq {
			t.Fatalf("restored sequence %d, want the last completed checkpoint's %d", s, lastSeq)
		}
	case <-ctx.Done():
		t.Fatal("no restore line")
	}
	if err := <-n.done; err != nil {
		t.Fatalf("the producer: %v", err)
	}
	waitOutputs(t, it, n, modelAgg(cfg, n.rows))
	after, err := c.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("after the restart: messages %d..%d delivered again; consumer: delivered up to %d, ack floor %d",
		lastSeq+1, before.Delivered.Stream, after.Delivered.Stream, after.AckFloor.Stream)
	if err := stopServe(p); err != nil {
		t.Error(err)
	}
}

// startProcWatch starts `clinksql serve` on the iteration's data directory with a watch of its output lines.
func startProcWatch(it *iteration, watch func(line string)) (*proc, error) {
	p, err := startProc(it.logPath(), func(p *proc, line string) {
		if m := listeningRe.FindStringSubmatch(line); m != nil {
			p.mu.Lock()
			p.addr = trimAddr(m[1])
			p.mu.Unlock()
			p.markReady()
		}
		watch(line)
	}, "serve", "--data-dir", it.data, "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0", "--log-level", "debug")
	if err == nil {
		it.procs = append(it.procs, p)
	}
	return p, err
}

func trimAddr(s string) string { return strings.TrimRight(s, ",;)") }
