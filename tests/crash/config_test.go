package crash

import (
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"strings"
	"time"
)

// Column ranges of the generated stream ev.
const (
	vMin, vMax = -1000, 1000
	nameLen    = 6
)

var modes = []string{"aligned", "unaligned", "adaptive"}

// iterConfig is everything an iteration does, drawn from its seed: replaying a seed replays the same pipeline,
// settings and kill points (not the same timing of the process, which the kills hit at different instants).
type iterConfig struct {
	Seed        int64
	Mode        string
	Parallelism int
	Interval    time.Duration // checkpoint.interval

	Rows       int64 // 'number-of-rows'
	RowsPerSec int   // 'rows-per-second', per subtask
	GenSeed    int64 // datagen 'seed'
	StepMs     int64 // event time between consecutive rows
	Keys       int   // k is random in [0, Keys)
	WMDelayS   int   // WATERMARK FOR ts AS ts - WMDelayS seconds
	SlideMs    int64 // window slide; = SizeMs for TUMBLE
	SizeMs     int64

	// Kills are the crashes, one per run; the run after the last kill goes to the end.
	Kills []kill

	// Kafka: the same rows, produced into a topic during the run, feed three more jobs (see kafkaSetup).
	Kafka    bool
	TickMs   int // the producer sends a batch every TickMs
	Duration time.Duration
}

// kill is one crash: SIGKILL After the run started. With Term, a SIGTERM comes first and the SIGKILL Grace later:
// a crash in the middle of a graceful stop (its final checkpoint and commit). With On, the SIGKILL comes Delay
// after the Nth server log line of that kind instead, or at Fallback when no such line comes: a crash at a
// dangerous instant the clock would rarely hit (the exec driver prints no log lines: it kills After).
type kill struct {
	After time.Duration
	Term  bool
	Grace time.Duration

	On       lineKind
	Nth      int
	Delay    time.Duration
	Fallback time.Duration
	// Pause (in-doubt kills only): the broker is stopped (SIGSTOP) at the line, the SIGKILL comes Pause later and
	// the broker resumes after it: a walk that hears no answer, killed while it retries.
	Pause time.Duration
}

// lineKind names the server log lines a kill can be aimed at.
type lineKind string

const (
	// onCompleted: the coordinator's "checkpoint completed" (debug) of the job with the exactly-once Kafka sink,
	// printed after COMPLETED-N is durable and before the sinks commit: a kill lands between the marker and the
	// commit, during it, or between the commit and CONFIRMED-N.
	onCompleted lineKind = "completed"
	// onInDoubt: a line of the in-doubt walk (its start, a handle probed, a receipt taken as proof): a kill during
	// in-doubt resolution.
	onInDoubt lineKind = "in-doubt"
)

// lineRe are the lines each kind matches.
var lineRe = map[lineKind]*regexp.Regexp{
	onCompleted: regexp.MustCompile(`msg="checkpoint completed" .*job=` + kafkaSinkJob + ` `),
	onInDoubt:   regexp.MustCompile(`msg="in-doubt resolution: (checkpoints completed but not confirmed|handle probed|commit receipt taken as proof)"`),
}

func (k kill) String() string {
	switch {
	case k.Term:
		return fmt.Sprintf("%s(TERM+%s)", k.After, k.Grace)
	case k.On != "" && k.Pause > 0:
		return fmt.Sprintf("%s#%d+%s(broker paused)|%s", k.On, k.Nth, k.Pause, k.Fallback)
	case k.On != "":
		return fmt.Sprintf("%s#%d+%s|%s", k.On, k.Nth, k.Delay, k.Fallback)
	}
	return k.After.String()
}

// newIterConfig draws an iteration from its seed. Mode and parallelism rotate with the seed, so any 6 consecutive
// seeds cover every mode at parallelism 1 and 2.
func newIterConfig(seed int64) *iterConfig {
	rng := rand.New(rand.NewPCG(uint64(seed), 0xC1A5))
	c := &iterConfig{
		Seed:        seed,
		Mode:        modes[((seed%3)+3)%3],
		Parallelism: 1 + int(((seed/3)%2+2)%2),
		Interval:    time.Duration(100+rng.IntN(201)) * time.Millisecond,
		Rows:        int64(3000 + rng.IntN(17001)),
		GenSeed:     rng.Int64N(1 << 40),
		StepMs:      []int64{5, 10, 20}[rng.IntN(3)],
		Keys:        3 + rng.IntN(10),
		WMDelayS:    rng.IntN(3),
	}
	// A run of 1.5 to 3.5 seconds when nothing is killed.
	dur := 1.5 + 2*rng.Float64()
	c.RowsPerSec = max(100, int(float64(c.Rows)/(float64(c.Parallelism)*dur)))
	switch rng.IntN(4) {
	case 0:
		c.SlideMs, c.SizeMs = 1000, 1000 // TUMBLE 1 s
	case 1:
		c.SlideMs, c.SizeMs = 2000, 2000 // TUMBLE 2 s
	case 2:
		c.SlideMs, c.SizeMs = 1000, 2000 // HOP 1 s / 2 s
	default:
		c.SlideMs, c.SizeMs = 1000, 3000 // HOP 1 s / 3 s
	}
	runMs := int(dur * 1000)
	for range 1 + rng.IntN(3) {
		var d int
		switch rng.IntN(5) {
		case 0:
			d = rng.IntN(300) // early: while the engine opens and restores
		default:
			d = rng.IntN(runMs) // anywhere in a run
		}
		k := kill{After: time.Duration(d) * time.Millisecond}
		if rng.IntN(4) == 0 {
			k.Term, k.Grace = true, time.Duration(rng.IntN(300))*time.Millisecond
		}
		c.Kills = append(c.Kills, k)
	}
	c.Duration = time.Duration(dur * float64(time.Second))
	// The Kafka side draws from its own stream, so the draws above stay what they were before it existed.
	kr := rand.New(rand.NewPCG(uint64(seed), 0x6AF6A))
	c.Kafka = os.Getenv("CRASH_KAFKA") != "0"
	c.TickMs = 5 + kr.IntN(21)
	for i := range c.Kills {
		k := &c.Kills[i]
		if !c.Kafka || k.Term {
			continue
		}
		prevAimed := i > 0 && c.Kills[i-1].On == onCompleted
		switch r := kr.IntN(10); {
		case i > 0 && (r < 3 || prevAimed && r < 7):
			// After a kill between COMPLETED and CONFIRMED the restart walks the unconfirmed checkpoints.
			k.On, k.Nth, k.Fallback = onInDoubt, 1+kr.IntN(3), k.After // no walk: the moment drawn
			if kr.IntN(2) == 0 {
				k.Pause = time.Duration(1+kr.IntN(400)) * time.Millisecond
			}
		case r < 7:
			// The fallback comes after the run: the line normally comes first.
			k.On, k.Nth, k.Fallback = onCompleted, 1+kr.IntN(6), time.Duration(runMs+2000)*time.Millisecond
		}
		if k.On != "" {
			k.Delay = time.Duration(kr.IntN(2000)) * time.Microsecond
		}
	}
	return c
}

func (c *iterConfig) String() string {
	win := fmt.Sprintf("TUMBLE %ds", c.SizeMs/1000)
	if c.SlideMs != c.SizeMs {
		win = fmt.Sprintf("HOP %ds/%ds", c.SlideMs/1000, c.SizeMs/1000)
	}
	kills := make([]string, len(c.Kills))
	for i, k := range c.Kills {
		kills[i] = k.String()
	}
	kafka := "no kafka"
	if c.Kafka {
		kafka = fmt.Sprintf("kafka tick=%dms", c.TickMs)
	}
	return fmt.Sprintf("seed=%d mode=%s parallelism=%d interval=%s rows=%d rate=%d/s/subtask %s keys=%d %s kills=[%s]",
		c.Seed, c.Mode, c.Parallelism, c.Interval, c.Rows, c.RowsPerSec, win, c.Keys, kafka, strings.Join(kills, " "))
}

// setup is the SQL of the iteration's pipeline: session settings, the datagen stream, and four jobs (a windowed
// aggregate into a Parquet sink, a filtered projection into a CSV sink, an interval self-join into a CSV sink,
// whose two inputs are two readers of the stream, and an updating GROUP BY into an upsert CSV sink), then with ks
// the Kafka stream and its three jobs (kafkaSetup.sql). throttled=false drops the rate limit (the failure-free
// reference run).
func (c *iterConfig) setup(throttled bool, ks *kafkaSetup) []string {
	wm := "ts"
	if c.WMDelayS > 0 {
		wm = fmt.Sprintf("ts - INTERVAL '%d' SECOND", c.WMDelayS)
	}
	rate := ""
	if throttled {
		rate = fmt.Sprintf("'rows-per-second' = '%d', ", c.RowsPerSec)
	}
	stmts := []string{
		fmt.Sprintf("SET checkpoint.interval = '%dms'", c.Interval.Milliseconds()),
		fmt.Sprintf("SET checkpoint.mode = '%s'", c.Mode),
		fmt.Sprintf("SET parallelism = %d", c.Parallelism),
		fmt.Sprintf(`CREATE STREAM ev (id BIGINT, ts TIMESTAMP(3), k INT, v BIGINT, name VARCHAR,
  WATERMARK FOR ts AS %s) WITH (
  connector = 'datagen', 'number-of-rows' = '%d', %s'seed' = '%d',
  'fields.id.kind' = 'sequence', 'fields.id.start' = '0',
  'fields.ts.kind' = 'sequence', 'fields.ts.start' = '2026-01-01 00:00:00', 'fields.ts.step' = '%d ms',
  'fields.k.kind' = 'random', 'fields.k.min' = '0', 'fields.k.max' = '%d',
  'fields.v.kind' = 'random', 'fields.v.min' = '%d', 'fields.v.max' = '%d',
  'fields.name.kind' = 'random', 'fields.name.length' = '%d')`,
			wm, c.Rows, rate, c.GenSeed, c.StepMs, c.Keys-1, vMin, vMax, nameLen),
		`CREATE SINK agg_out (` + aggColumnsSQL + `) WITH (connector = 'parquet', path = 'out/agg')`,
		`INSERT INTO agg_out ` + c.aggSelect("ev"),
		`CREATE SINK raw_out (` + rawColumnsSQL + `) WITH (connector = 'file', format = 'csv', path = 'out/raw')`,
		`INSERT INTO raw_out ` + rawSelect("ev"),
		`CREATE SINK join_out (a BIGINT, b BIGINT) WITH (connector = 'file', format = 'csv', path = 'out/join')`,
		fmt.Sprintf(`INSERT INTO join_out SELECT x.id, y.id FROM ev x JOIN ev y
  ON x.k = y.k AND y.ts BETWEEN x.ts AND x.ts + INTERVAL '%d' MILLISECOND`, c.joinMs()),
		`CREATE SINK upd_out (k INT, n BIGINT, sum_v BIGINT)
  WITH (connector = 'file', format = 'csv', path = 'out/upd', type = 'upsert', primary_key = 'k')`,
		`INSERT INTO upd_out SELECT k, COUNT(*), CAST(SUM(v) AS BIGINT) FROM ev GROUP BY k`,
	}
	if ks != nil {
		stmts = append(stmts, ks.sql(c, wm)...)
	}
	// The filtered projection once more into a partitioned CSV sink (by k, a few open files at a time, so that
	// files are finished early and partitions reopened between barriers), each partition marked _SUCCESS when its
	// files are committed.
	stmts = append(stmts, `CREATE SINK part_out (`+rawColumnsSQL+`) PARTITIONED BY (k)
  WITH (connector = 'file', format = 'csv', path = 'out/part', 'sink.partition.max-open-writers' = '3',
        'sink.partition-commit.policy.kind' = 'success-file')`,
		`INSERT INTO part_out `+rawSelect("ev"))
	return stmts
}

// window is the windowing TVF call over stream from.
func (c *iterConfig) window(from string) string {
	if c.SlideMs != c.SizeMs {
		return fmt.Sprintf("HOP(TABLE %s, DESCRIPTOR(ts), INTERVAL '%d' SECOND, INTERVAL '%d' SECOND)", from, c.SlideMs/1000, c.SizeMs/1000)
	}
	return fmt.Sprintf("TUMBLE(TABLE %s, DESCRIPTOR(ts), INTERVAL '%d' SECOND)", from, c.SizeMs/1000)
}

// aggSelect is the windowed aggregate both the datagen and the Kafka pipelines compute (modelAgg).
func (c *iterConfig) aggSelect(from string) string {
	return fmt.Sprintf(`SELECT k, window_start, window_end, COUNT(*), CAST(SUM(id) AS BIGINT), MIN(id), MAX(id),
  CAST(SUM(v) AS BIGINT), MIN(v), MAX(v)
FROM TABLE(%s) GROUP BY k, window_start, window_end`, c.window(from))
}

// aggColumnsSQL are the columns of a sink of aggSelect's rows.
const aggColumnsSQL = `k INT, window_start TIMESTAMP(3), window_end TIMESTAMP(3), n BIGINT,
  sum_id BIGINT, min_id BIGINT, max_id BIGINT, sum_v BIGINT, min_v BIGINT, max_v BIGINT`

// rawSelect is the filtered projection both pipelines compute (modelCSV).
func rawSelect(from string) string {
	return "SELECT id, ts, k, v, name, k * 1000 + v FROM " + from + " WHERE v % 3 <> 0"
}

// joinMs is the interval of the self-join job: about two partners per row besides itself.
func (c *iterConfig) joinMs() int64 { return 2 * c.StepMs * int64(c.Keys) }

// aggColumns are the Parquet sink's columns in declaration order.
var aggColumns = []string{"k", "window_start", "window_end", "n", "sum_id", "min_id", "max_id", "sum_v", "min_v", "max_v"}

// rawColumnsSQL are the columns of a sink of rawSelect's rows.
const rawColumnsSQL = `id BIGINT, ts TIMESTAMP(3), k INT, v BIGINT, name VARCHAR, kv BIGINT`

// jobIDs are the ids the INSERTs get in a fresh data directory: four, three more with the Kafka pipeline, then the
// partitioned sink's.
func (c *iterConfig) jobIDs() []string {
	ids := []string{"job-1", "job-2", "job-3", "job-4"}
	if c.Kafka {
		ids = append(ids, kafkaJobs...)
	}
	return append(ids, fmt.Sprintf("job-%d", len(ids)+1))
}
