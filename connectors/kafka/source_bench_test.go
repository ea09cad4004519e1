package kafka

import (
	"context"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/clinksql/clinksql/connectors/nexmark"
	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/textform"
	"github.com/clinksql/clinksql/tests/kafkatest"
)

// benchBids is the number of bids preloaded into the benchmark's topic.
const benchBids = 1_000_000

// BenchmarkKafkaSourceJSON reads Nexmark bids (the nexmark connector's generator, seed 0, all seven columns,
// written as the JSON the file and Kafka sinks write, uncompressed as the Kafka producer's default compression.type
// = none leaves them) from a one-partition topic of the kfake process with one
// subtask, read_committed, through Produce: fetching, JSON decoding and building the Arrow batches. The topic is
// loaded once, outside the timed part; each pass reads it from the earliest to the latest offset with a fresh
// subtask (Open and Close not timed). GOMAXPROCS is 1 while it runs, so the client's fetch goroutines share the one
// core with Produce. Reported as BENCH kafka_source_json_rows_per_sec: rows per CPU-second of this process (user +
// sys: the client's fetching and the source's decoding, the garbage collector included; not the broker, another
// process, which kfake makes the slowest part), and kafka_source_json_rows_per_wall_sec, which waits for kfake.
func BenchmarkKafkaSourceJSON(b *testing.B) {
	c, err := kafkatest.Launch(kafkatest.Options{Topics: map[string]int32{"bids": 1}})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Kill()
	cols := []Column{col("auction", bigint), col("bidder", bigint), col("price", bigint), col("channel", varchar),
		col("url", varchar), col("dateTime", ts), col("extra", varchar)}
	preloadBids(b, c, "bids", cols, benchBids)
	cfg := config(b, c, cols, nil, map[string]string{"topic": "bids", "format": "json",
		"scan.startup.mode": "earliest-offset", "scan.bounded.mode": "latest-offset"})

	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	mem := memory.DefaultAllocator // the engine's
	rows, pass := 0, 0             // pass: the rows of the current pass
	var src exec.Source
	open := func() {
		src = NewSource(cfg)(0)
		if err := src.Open(&exec.TaskContext{Subtask: 0, Parallelism: 1, Alloc: mem, Errors: &exec.Counter{}}); err != nil {
			b.Fatal(err)
		}
	}
	closeSrc := func() {
		if err := src.Close(); err != nil {
			b.Fatal(err)
		}
	}
	open()
	b.ResetTimer()
	start := time.Now()
	var paused, pausedCPU time.Duration
	startCPU := cpuTime(b)
	for b.Loop() {
		res, err := src.Produce(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		switch res.Status {
		case exec.Produced:
			rows += res.Batch.Rows()
			pass += res.Batch.Rows()
			res.Batch.Release()
		case exec.Idle:
			select { // as the runtime waits for an IdleWaiter
			case <-src.(exec.IdleWaiter).IdleWait():
			case <-time.After(100 * time.Millisecond):
			}
		case exec.Finished:
			b.StopTimer()
			if pass != benchBids {
				b.Fatalf("a pass read %d rows, want the %d bids", pass, benchBids)
			}
			pass = 0
			p, pc := time.Now(), cpuTime(b)
			closeSrc()
			open()
			paused += time.Since(p)
			pausedCPU += cpuTime(b) - pc
			b.StartTimer()
		}
	}
	elapsed, cpu := time.Since(start)-paused, cpuTime(b)-startCPU-pausedCPU
	b.StopTimer()
	closeSrc()
	b.ReportMetric(float64(rows)/cpu.Seconds(), "kafka_source_json_rows_per_sec:rows/s")
	b.ReportMetric(float64(rows)/elapsed.Seconds(), "kafka_source_json_rows_per_wall_sec:rows/s")
}

// cpuTime is the user and system CPU time of this process so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// preloadBids writes n Nexmark bids of the nexmark generator as JSON values into partition 0 of topic.
func preloadBids(b *testing.B, c *kafkatest.Cluster, topic string, cols []Column, n int) {
	fields := make([]arrow.Field, len(cols))
	for i, cl := range cols {
		fields[i] = cl.Field
	}
	schema := arrow.NewSchema(fields, nil)
	// Events counts all three types: a bid is 46 of every 50 events.
	gen := nexmark.New(nexmark.Config{Table: "bid", Schema: schema, Events: int64(n)*50/46 + 50})(0)
	mem := memory.NewGoAllocator()
	if err := gen.Open(&exec.TaskContext{Subtask: 0, Parallelism: 1, Alloc: mem, Errors: &exec.Counter{}}); err != nil {
		b.Fatal(err)
	}
	defer gen.Close()
	enc, err := textform.NewRow("json", schema)
	if err != nil {
		b.Fatal(err)
	}
	cl := c.Client(b, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(5*time.Millisecond),
		kgo.ProducerBatchCompression(kgo.NoCompression())) // compression.type = none: the Kafka producer's default
	written := 0
	for written < n {
		res, err := gen.Produce(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		if res.Status == exec.Finished {
			break
		}
		if res.Status != exec.Produced {
			continue
		}
		rec := res.Batch.Rec
		if err := enc.Bind(rec.Columns()); err != nil {
			b.Fatal(err)
		}
		recs := make([]*kgo.Record, 0, rec.NumRows())
		for i := 0; i < int(rec.NumRows()) && written < n; i++ {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: 0, Value: enc.Append(nil, i)})
			written++
		}
		enc.Unbind()
		res.Batch.Release()
		ctx, cancel := context.WithTimeout(context.Background(), kafkatest.Timeout)
		err = cl.ProduceSync(ctx, recs...).FirstErr()
		cancel()
		if err != nil {
			b.Fatal(err)
		}
	}
	if written != n {
		b.Fatalf("the generator gave %d bids, want %d", written, n)
	}
}
