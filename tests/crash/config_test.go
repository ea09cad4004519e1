package crash

import (
	"fmt"
	"math/rand/v2"
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
}

// kill is one crash: SIGKILL After the run started. With Term, a SIGTERM comes first and the SIGKILL Grace later:
// a crash in the middle of a graceful stop (its final checkpoint and commit).
type kill struct {
	After time.Duration
	Term  bool
	Grace time.Duration
}

func (k kill) String() string {
	if k.Term {
		return fmt.Sprintf("%s(TERM+%s)", k.After, k.Grace)
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
	return fmt.Sprintf("seed=%d mode=%s parallelism=%d interval=%s rows=%d rate=%d/s/subtask %s keys=%d kills=[%s]",
		c.Seed, c.Mode, c.Parallelism, c.Interval, c.Rows, c.RowsPerSec, win, c.Keys, strings.Join(kills, " "))
}

// setup is the SQL of the iteration's pipeline: session settings, the datagen stream, and four jobs (a windowed
// aggregate into a Parquet sink, a filtered projection into a CSV sink, an interval self-join into a CSV sink,
// whose two inputs are two readers of the stream, and an updating GROUP BY into an upsert CSV sink). throttled=false drops the rate limit
// (the failure-free reference run).
func (c *iterConfig) setup(throttled bool) []string {
	wm := "ts"
	if c.WMDelayS > 0 {
		wm = fmt.Sprintf("ts - INTERVAL '%d' SECOND", c.WMDelayS)
	}
	rate := ""
	if throttled {
		rate = fmt.Sprintf("'rows-per-second' = '%d', ", c.RowsPerSec)
	}
	window := fmt.Sprintf("TUMBLE(TABLE ev, DESCRIPTOR(ts), INTERVAL '%d' SECOND)", c.SizeMs/1000)
	if c.SlideMs != c.SizeMs {
		window = fmt.Sprintf("HOP(TABLE ev, DESCRIPTOR(ts), INTERVAL '%d' SECOND, INTERVAL '%d' SECOND)", c.SlideMs/1000, c.SizeMs/1000)
	}
	return []string{
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
		`CREATE SINK agg_out (k INT, window_start TIMESTAMP(3), window_end TIMESTAMP(3), n BIGINT,
  sum_id BIGINT, min_id BIGINT, max_id BIGINT, sum_v BIGINT, min_v BIGINT, max_v BIGINT)
  WITH (connector = 'parquet', path = 'out/agg')`,
		fmt.Sprintf(`INSERT INTO agg_out SELECT k, window_start, window_end, COUNT(*), CAST(SUM(id) AS BIGINT), MIN(id), MAX(id),
  CAST(SUM(v) AS BIGINT), MIN(v), MAX(v)
FROM TABLE(%s) GROUP BY k, window_start, window_end`, window),
		`CREATE SINK raw_out (id BIGINT, ts TIMESTAMP(3), k INT, v BIGINT, name VARCHAR, kv BIGINT)
  WITH (connector = 'file', format = 'csv', path = 'out/raw')`,
		`INSERT INTO raw_out SELECT id, ts, k, v, name, k * 1000 + v FROM ev WHERE v % 3 <> 0`,
		`CREATE SINK join_out (a BIGINT, b BIGINT) WITH (connector = 'file', format = 'csv', path = 'out/join')`,
		fmt.Sprintf(`INSERT INTO join_out SELECT x.id, y.id FROM ev x JOIN ev y
  ON x.k = y.k AND y.ts BETWEEN x.ts AND x.ts + INTERVAL '%d' MILLISECOND`, c.joinMs()),
		`CREATE SINK upd_out (k INT, n BIGINT, sum_v BIGINT)
  WITH (connector = 'file', format = 'csv', path = 'out/upd', type = 'upsert', primary_key = 'k')`,
		`INSERT INTO upd_out SELECT k, COUNT(*), CAST(SUM(v) AS BIGINT) FROM ev GROUP BY k`,
	}
}

// joinMs is the interval of the self-join job: about two partners per row besides itself.
func (c *iterConfig) joinMs() int64 { return 2 * c.StepMs * int64(c.Keys) }

// aggColumns are the Parquet sink's columns in declaration order.
var aggColumns = []string{"k", "window_start", "window_end", "n", "sum_id", "min_id", "max_id", "sum_v", "min_v", "max_v"}

// jobIDs are the ids the four INSERTs get in a fresh data directory.
var jobIDs = []string{"job-1", "job-2", "job-3", "job-4"}
