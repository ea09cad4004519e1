package nats_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/nats-io/nats.go/jetstream"

	natsconn "github.com/clinksql/clinksql/connectors/nats"
	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/tests/natstest"
)

// BenchmarkNATSSource reads small JSON messages ({"id": n, "k": "k<n%100>", "v": n*7}, three columns) preloaded
// into a file-stored stream of a local nats-server (another process), with one source subtask through Produce:
// pull requests, the subscription's queue, reply-subject metadata, JSON decoding into Arrow batches. Each pass
// opens a fresh ephemeral consumer (explicit acks, as every source's) and reads the whole stream (Open and Close
// not timed). Reported, as BenchmarkKafkaSourceJSON does, as BENCH nats_source_rows_per_sec: rows per CPU-second
// of this process (user + sys: the client's reading and the source's decoding, the garbage collector included;
// not the server, another process); nats_source_rows_per_wall_sec waits for the server, which on a small machine
// is the slowest part (nats_server_msgs_per_cpu_sec: what one consumer's deliveries cost the server).
func BenchmarkNATSSource(b *testing.B) {
	n := 1_000_000
	if testing.Short() {
		n = 100_000
	}
	srv := natstest.StartWithStream(b, jetstream.StreamConfig{Name: "IN", Subjects: []string{"in.>"}})
	js := srv.JetStream(b)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	for from := 0; from < n; from += 100_000 {
		ps := make([][]byte, 0, 100_000)
		for i := from; i < min(n, from+100_000); i++ {
			ps = append(ps, fmt.Appendf(nil, `{"id": %d, "k": "k%d", "v": %d}`, i, i%100, i*7))
		}
		if err := natstest.Publish(ctx, js, "in.x", ps); err != nil {
			b.Fatal(err)
		}
	}
	cols := []natsconn.Column{{Field: arrow.Field{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true}},
		{Field: arrow.Field{Name: "k", Type: arrow.BinaryTypes.String, Nullable: true}},
		{Field: arrow.Field{Name: "v", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}}
	opts := map[string]string{"nats.url": srv.URL(), "nats.stream": "IN", "format": "json"}
	cfg, err := natsconn.SourceConfigFromOptions(cols, opts, nil)
	if err != nil {
		b.Fatal(err)
	}
	var wall time.Duration
	var cpu, srvCPU float64
	rows := 0
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		src := natsconn.NewSource(cfg)(0)
		if err := src.Open(&exec.TaskContext{Job: "bench", Parallelism: 1, Alloc: memory.DefaultAllocator, Errors: &exec.Counter{}}); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		c0, t0, s0 := cpuSeconds(), time.Now(), procCPU(srv.Pid())
		got := 0
		for got < n {
			res, err := src.Produce(ctx)
			if err != nil {
				b.Fatal(err)
			}
			switch res.Status {
			case exec.Produced:
				got += int(res.Batch.Rows())
				res.Batch.Release()
			case exec.Idle:
				select {
				case <-src.(exec.IdleWaiter).IdleWait():
				case <-time.After(10 * time.Millisecond):
				case <-ctx.Done():
					b.Fatalf("read %d of %d rows", got, n)
				}
			}
		}
		wall += time.Since(t0)
		cpu += cpuSeconds() - c0
		srvCPU += procCPU(srv.Pid()) - s0
		rows += got
		b.StopTimer()
		if err := src.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(rows)/cpu, "nats_source_rows_per_sec:rows/s")
	b.ReportMetric(float64(rows)/wall.Seconds(), "nats_source_rows_per_wall_sec:rows/s")
	b.ReportMetric(float64(rows)/srvCPU, "nats_server_msgs_per_cpu_sec:msgs/s")
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// procCPU is a process's user + system CPU seconds (/proc/<pid>/stat; 0 where there is none).
func procCPU(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseFloat(f[11], 64)
	s, _ := strconv.ParseFloat(f[12], 64)
	return (u + s) / 100 // clock ticks (USER_HZ = 100)
}
