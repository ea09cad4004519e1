package exec

import (
	"context"
	"fmt"
	"syscall"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// BenchmarkHashExchange routes 8192-row batches of bid-like rows (three int64s, a timestamp, two strings) over a
// hash exchange on the first column to 2 and 4 subtasks: the hashing, the partition by index vectors and the
// gathers. Reported as rows routed per second.
func BenchmarkHashExchange(b *testing.B) {
	const rows = 8192
	alloc := memory.NewGoAllocator()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "auction", Type: arrow.PrimitiveTypes.Int64}, {Name: "bidder", Type: arrow.PrimitiveTypes.Int64},
		{Name: "price", Type: arrow.PrimitiveTypes.Int64}, {Name: "ts", Type: arrow.FixedWidthTypes.Timestamp_ms},
		{Name: "url", Type: arrow.BinaryTypes.String}, {Name: "extra", Type: arrow.BinaryTypes.String},
	}, nil)
	rb := array.NewRecordBuilder(alloc, schema)
	for i := 0; i < rows; i++ {
		rb.Field(0).(*array.Int64Builder).Append(int64(i*7919) % 1000)
		rb.Field(1).(*array.Int64Builder).Append(int64(i))
		rb.Field(2).(*array.Int64Builder).Append(int64(i % 100))
		rb.Field(3).(*array.TimestampBuilder).Append(arrow.Timestamp(i))
		rb.Field(4).(*array.StringBuilder).Append("https://www.nexmark.com/abc/def/ghi/item.htm?query=1")
		rb.Field(5).(*array.StringBuilder).Append("some extra padding text of about fifty bytes or so")
	}
	rec := rb.NewRecordBatch()
	rb.Release()
	defer rec.Release()
	for _, c := range []struct {
		p              int
		kernel, zeroed bool
	}{{2, false, false}, {4, false, false}, {2, true, false}, {2, false, true}} { // one target forwards the batch as it is: nothing to measure
		p, name := c.p, fmt.Sprintf("p%d", c.p)
		if c.kernel {
			name += "-take-kernel"
		}
		if c.zeroed {
			name += "-zeroed" // value buffers cleared first, as before noZeroAlloc
		}
		b.Run(name, func(b *testing.B) {
			takeKernelOnly, zeroValueBuffers = c.kernel, c.zeroed
			defer func() { takeKernelOnly, zeroValueBuffers = false, false }()
			ed := &outEdge{exchange: HashExchange(0), keyGroups: 128}
			for range p {
				ed.chans = append(ed.chans, newChannel(16))
			}
			o := &output{ctx: context.Background(), edges: []*outEdge{ed}, alloc: alloc, st: &subStats{}}
			b.ResetTimer()
			cpu0 := processCPU()
			for i := 0; i < b.N; i++ {
				rec.Retain()
				if err := o.Emit(Batch{Rec: rec}); err != nil {
					b.Fatal(err)
				}
				for _, ch := range ed.chans {
					for len(ch.c) > 0 {
						e := <-ch.c
						e.Batch.Release()
					}
				}
			}
			// CPU time (the collector's workers included) is steadier than wall time on a shared machine.
			b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
			if !c.kernel && !c.zeroed {
				b.ReportMetric(float64(b.N)*rows/b.Elapsed().Seconds(), fmt.Sprintf("hash_exchange_p%d_rows_per_sec:rows/s", p))
			}
		})
	}
}

// processCPU is the user+sys CPU time of this process so far, in nanoseconds.
func processCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
