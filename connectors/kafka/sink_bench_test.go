package kafka

import (
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/tests/kafkatest"
)

// BenchmarkKafkaSinkExactlyOnce writes 4096-row batches (a BIGINT and a short VARCHAR, as JSON) through one
// exactly-once subtask into a 4-partition topic of the kfake process, with a checkpoint every second of wall time:
// PreCommit on the writing goroutine, Commit on another as the runtime does. Reported as
// BENCH kafka_sink_exactly_once_rows_per_sec (every row acknowledged and committed; the broker shares the cores).
func BenchmarkKafkaSinkExactlyOnce(b *testing.B) {
	c, err := kafkatest.Launch(kafkatest.Options{Topics: map[string]int32{"bench": 4}})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Kill()
	cfg, err := SinkConfigFromOptions("kafka", testSchema, nil, nil, map[string]string{
		"topic": "bench", "properties.bootstrap.servers": c.Bootstrap(), "format": "json",
		"sink.delivery-guarantee": "exactly-once", "sink.transactional-id-prefix": "bench",
	}, nil)
	if err != nil {
		b.Fatal(err)
	}
	r := &rig{mem: memory.NewCheckedAllocator(memory.DefaultAllocator)}
	const rows = 4096
	batch := r.batch(0, rows)
	defer batch.Release()
	s := NewSink(cfg)
	rc := &receipts{}
	if err := s.Open(&exec.TaskContext{Job: "job-1", Operator: "sink", Parallelism: 1, Alloc: r.mem, Receipt: rc.add}); err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	var commits sync.WaitGroup
	var commitErr error
	var mu sync.Mutex
	commit := func(id uint64) {
		defer commits.Done()
		if err := s.Commit(id); err != nil {
			mu.Lock()
			commitErr = err
			mu.Unlock()
		}
	}
	b.ResetTimer()
	start := time.Now()
	next, ckpt := start.Add(time.Second), uint64(0)
	for range b.N {
		batch.Rec.Retain()
		if err := s.Write(batch); err != nil {
			b.Fatal(err)
		}
		if now := time.Now(); now.After(next) {
			ckpt++
			if err := s.PreCommit(ckpt); err != nil {
				b.Fatal(err)
			}
			commits.Add(1)
			go commit(ckpt)
			next = now.Add(time.Second)
		}
	}
	ckpt++
	if err := s.PreCommit(ckpt); err != nil {
		b.Fatal(err)
	}
	commits.Add(1)
	commit(ckpt)
	commits.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if commitErr != nil {
		b.Fatal(commitErr)
	}
	if got := rc.get(); len(got) != int(ckpt) {
		b.Fatalf("%d receipts for %d checkpoints", len(got), ckpt)
	}
	b.ReportMetric(float64(b.N*rows)/elapsed.Seconds(), "kafka_sink_exactly_once_rows_per_sec:rows/s")
}
