package crash

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/clinksql/clinksql/tests/kafkatest"
)

// The Kafka pipeline of an iteration: the generator's rows (generate) are produced, during the run, into a JSON
// topic of kafkaPartitions partitions, each row into the partition of its key, so every partition is in event-time
// order. A Kafka stream reads it bounded at the per-partition counts (known in advance: the job finishes there) and
// feeds three jobs: the windowed aggregate into an exactly-once Kafka sink (a second topic, read back with a
// read_committed consumer) and into a Parquet sink, and the filtered projection into a CSV sink. They compute what
// the datagen jobs compute, so the same Go model checks them.

const kafkaPartitions = 8

// The topics: the input, the exactly-once sink's topic of the crashed runs and that of the reference run.
const (
	topicIn     = "ev"
	topicAgg    = "agg"
	topicAggRef = "agg_ref"
)

// kafkaSinkJob is the job of the exactly-once Kafka sink (the INSERTs' ids follow the datagen jobs' four).
const kafkaSinkJob = "job-5"

var kafkaJobs = []string{kafkaSinkJob, "job-6", "job-7"}

// kafkaSetup is what the Kafka pipeline's SQL needs to know of the iteration's cluster.
type kafkaSetup struct {
	bootstrap string
	ends      []int64 // per partition of topicIn: its row count, the bounded end offset
	sinkTopic string
	txnPrefix string // sink.transactional-id-prefix
}

// sql is the Kafka stream and its three jobs; wm is the stream's WATERMARK expression.
func (ks *kafkaSetup) sql(c *iterConfig, wm string) []string {
	offs := make([]string, len(ks.ends))
	for p, n := range ks.ends {
		offs[p] = fmt.Sprintf("partition:%d,offset:%d", p, n)
	}
	return []string{
		fmt.Sprintf(`CREATE STREAM kev (id BIGINT, ts TIMESTAMP(3), k INT, v BIGINT, name VARCHAR,
  WATERMARK FOR ts AS %s) WITH (
  connector = 'kafka', topic = '%s', 'properties.bootstrap.servers' = '%s', format = 'json',
  'scan.startup.mode' = 'earliest-offset',
  'scan.bounded.mode' = 'specific-offsets', 'scan.bounded.specific-offsets' = '%s')`,
			wm, topicIn, ks.bootstrap, strings.Join(offs, ";")),
		fmt.Sprintf(`CREATE SINK kagg_kafka (%s) WITH (
  connector = 'kafka', topic = '%s', 'properties.bootstrap.servers' = '%s', format = 'json',
  'sink.delivery-guarantee' = 'exactly-once', 'sink.transactional-id-prefix' = '%s')`,
			aggColumnsSQL, ks.sinkTopic, ks.bootstrap, ks.txnPrefix),
		`INSERT INTO kagg_kafka ` + c.aggSelect("kev"),
		`CREATE SINK kagg_out (` + aggColumnsSQL + `) WITH (connector = 'parquet', path = 'out/kagg')`,
		`INSERT INTO kagg_out ` + c.aggSelect("kev"),
		`CREATE SINK kraw_out (` + rawColumnsSQL + `) WITH (connector = 'file', format = 'csv', path = 'out/kraw')`,
		`INSERT INTO kraw_out ` + rawSelect("kev"),
	}
}

// kafkaRun is an iteration's kfake process and the producer of its input.
type kafkaRun struct {
	cluster *kafkatest.Cluster
	rows    []genRow
	ends    []int64
	done    chan error // the producer's result
	ctx     context.Context
	cancel  context.CancelFunc
}

// kafkaUsed: some iteration started a cluster (TestMain then removes kafkatest's binary).
var kafkaUsed bool

// startKafka starts the iteration's kfake process (a process of its own: clinksql's kills leave it running) with
// the input and the sink topics, and works out the input's per-partition counts. Its output goes to
// logs/kfake.log when the iteration ends.
func startKafka(t *testing.T, it *iteration) *kafkaRun {
	kafkaUsed = true
	c := kafkatest.Start(t, kafkatest.Options{Topics: map[string]int32{topicIn: kafkaPartitions, topicAgg: 4, topicAggRef: 4}})
	k := &kafkaRun{cluster: c, rows: it.cfg.generate(), ends: make([]int64, kafkaPartitions), done: make(chan error, 1)}
	k.ctx, k.cancel = context.WithCancel(context.Background())
	t.Cleanup(func() {
		k.cancel()
		_ = os.WriteFile(filepath.Join(it.logs, "kfake.log"), []byte(c.Output()), 0o644)
	})
	for _, r := range k.rows {
		k.ends[partitionOf(r)]++
	}
	it.kafka = &kafkaSetup{bootstrap: c.Bootstrap(), ends: k.ends, sinkTopic: topicAgg, txnPrefix: "crash"}
	it.kafkaRef = &kafkaSetup{bootstrap: c.Bootstrap(), ends: k.ends, sinkTopic: topicAggRef, txnPrefix: "reference"}
	return k
}

func partitionOf(r genRow) int32 { return int32(r.k % kafkaPartitions) }

// rowJSON is a row as the input topic holds it: a JSON object, the timestamp in its text form.
func rowJSON(r genRow) []byte {
	return fmt.Appendf(nil, `{"id":%d,"ts":"%s","k":%d,"v":%d,"name":"%s"}`, r.id, pgTimestamp(r.tsMs), r.k, r.v, r.name)
}

// produce starts the producer: every TickMs a batch of the rows, in row order, so that they are spread over the
// run's duration. Its result comes on k.done.
func (k *kafkaRun) produce(c *iterConfig) {
	go func() { k.done <- k.produceRows(c) }()
}

func (k *kafkaRun) produceRows(c *iterConfig) error {
	opts, err := k.cluster.ClientOpts()
	if err != nil {
		return err
	}
	cl, err := kgo.NewClient(append(opts, kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	tick := time.Duration(c.TickMs) * time.Millisecond
	per := max(1, int(int64(len(k.rows))*int64(tick)/int64(max(c.Duration, tick))))
	ticker := time.NewTicker(tick)
	defer ticker.Stop()
	for from := 0; from < len(k.rows); from += per {
		batch := k.rows[from:min(from+per, len(k.rows))]
		recs := make([]*kgo.Record, len(batch))
		for i, r := range batch {
			recs[i] = &kgo.Record{Topic: topicIn, Partition: partitionOf(r), Key: strconv.AppendInt(nil, r.k, 10), Value: rowJSON(r)}
		}
		ctx, cancel := context.WithTimeout(k.ctx, kafkatest.Timeout)
		err := cl.ProduceSync(ctx, recs...).FirstErr()
		cancel()
		if err != nil {
			return fmt.Errorf("producing rows %d..%d: %w", from, from+len(batch)-1, err)
		}
		select {
		case <-ticker.C:
		case <-k.ctx.Done():
			return k.ctx.Err()
		}
	}
	return nil
}

// readKafkaAgg reads the aggregate's topic with a read_committed consumer to its last stable offset: every row of a
// committed transaction, none of an aborted or open one. A row's "file" is where it is: partition@offset and the
// producer id and epoch of its transaction.
func readKafkaAgg(t *testing.T, c *kafkatest.Cluster, topic string) *committed {
	out := &committed{}
	txns := map[string]bool{}
	for _, r := range c.ConsumeAll(t, topic) {
		row, err := aggFromJSON(r.Value)
		if err != nil {
			t.Fatalf("topic %s partition %d offset %d: %v: %s", topic, r.Partition, r.Offset, err, r.Value)
		}
		txn := fmt.Sprintf("pid%d.%d", r.ProducerID, r.ProducerEpoch)
		txns[txn] = true
		out.rows = append(out.rows, row)
		out.files = append(out.files, fmt.Sprintf("%d@%d(%s)", r.Partition, r.Offset, txn))
	}
	out.n = len(txns)
	return out
}

// aggFromJSON is a JSON row of the aggregate (the Kafka sink's json format: numbers as numbers, timestamps as
// strings in their text form) in aggRow's form.
func aggFromJSON(value []byte) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(value))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil {
		return "", err
	}
	parts := make([]string, len(aggColumns))
	for i, col := range aggColumns {
		switch v := obj[col].(type) {
		case nil:
			parts[i] = "NULL"
		case json.Number:
			parts[i] = v.String()
		case string:
			ts, err := time.ParseInLocation("2006-01-02 15:04:05.999999999", v, time.UTC)
			if err != nil {
				return "", fmt.Errorf("column %s: %w", col, err)
			}
			parts[i] = strconv.FormatInt(ts.UnixMilli(), 10)
		default:
			return "", fmt.Errorf("column %s: unexpected %T", col, v)
		}
	}
	return strings.Join(parts, "|"), nil
}

// inDoubtCounts are the server's in-doubt protocol at work, counted from its log lines.
type inDoubtCounts struct {
	walks      int // in-doubt resolutions begun (completed checkpoints found unconfirmed at a start)
	confirmed  int // checkpoints committed and confirmed by a walk
	fallbacks  int // walks that stopped and fell back to the newest confirmed checkpoint
	probes     int // handles a walk probed over the wire
	retries    int // probes that had no answer and were retried
	receipts   int // commit receipts a walk took as proof (no wire call)
	unresolved int // unresolved markers written by stopped walks
	settled    int // unresolved markers settled before a sink opened
	suppressed int64
	armed      int // replay suppressions armed
}

var (
	reWalk       = regexp.MustCompile(`msg="in-doubt resolution: checkpoints completed but not confirmed"`)
	reConfirmed  = regexp.MustCompile(`msg="in-doubt resolution: checkpoint committed and confirmed"`)
	reFallback   = regexp.MustCompile(`msg="in-doubt resolution stopped: restoring from the newest confirmed checkpoint`)
	reProbe      = regexp.MustCompile(`msg="in-doubt resolution: handle probed"`)
	reRetry      = regexp.MustCompile(`msg="in-doubt resolution: no answer, retrying"`)
	reReceipt    = regexp.MustCompile(`msg="in-doubt resolution: commit receipt taken as proof"`)
	reStopped    = regexp.MustCompile(`msg="in-doubt resolution stopped" .*unresolved_markers="?\[([^\]]*)\]`)
	reSettled    = regexp.MustCompile(`msg="unresolved transaction settled before open"`)
	reArmed      = regexp.MustCompile(`msg="replay suppression armed`)
	reSuppressed = regexp.MustCompile(`msg="replay suppression ended.* suppressed_rows=(\d+)`)
)

// countInDoubt reads the runs' logs (not the reference's).
func countInDoubt(logs string) (inDoubtCounts, error) {
	var n inDoubtCounts
	paths, err := filepath.Glob(filepath.Join(logs, "run-*.log"))
	if err != nil {
		return n, err
	}
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			return n, err
		}
		for _, line := range strings.Split(string(data), "\n") {
			if !strings.Contains(line, "in-doubt") && !strings.Contains(line, "unresolved") && !strings.Contains(line, "suppression") {
				continue
			}
			for _, c := range []struct {
				re *regexp.Regexp
				n  *int
			}{{reWalk, &n.walks}, {reConfirmed, &n.confirmed}, {reFallback, &n.fallbacks}, {reProbe, &n.probes},
				{reRetry, &n.retries}, {reReceipt, &n.receipts}, {reSettled, &n.settled}, {reArmed, &n.armed}} {
				if c.re.MatchString(line) {
					*c.n++
					break
				}
			}
			if m := reStopped.FindStringSubmatch(line); m != nil {
				n.unresolved += len(strings.Fields(m[1]))
			}
			if m := reSuppressed.FindStringSubmatch(line); m != nil {
				s, _ := strconv.ParseInt(m[1], 10, 64)
				n.suppressed += s
			}
		}
	}
	return n, nil
}

func (n *inDoubtCounts) add(o inDoubtCounts) {
	n.walks += o.walks
	n.confirmed += o.confirmed
	n.fallbacks += o.fallbacks
	n.probes += o.probes
	n.retries += o.retries
	n.receipts += o.receipts
	n.unresolved += o.unresolved
	n.settled += o.settled
	n.suppressed += o.suppressed
	n.armed += o.armed
}

func (n inDoubtCounts) String() string {
	return fmt.Sprintf("in-doubt resolutions %d (checkpoints confirmed by them %d, fallbacks %d; handles probed %d, "+
		"probes retried for want of an answer %d, receipts taken as proof %d), unresolved markers %d (settled before "+
		"open %d), replay suppressions %d (%d rows suppressed)", n.walks, n.confirmed, n.fallbacks, n.probes,
		n.retries, n.receipts, n.unresolved, n.settled, n.armed, n.suppressed)
}
