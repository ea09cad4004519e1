package operators

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/clinksql/clinksql/exec"
)

// NewBatchSource returns a bounded source that emits the given batches in order and finishes: the rows of a
// VALUES list or of a SELECT without FROM. Each subtask emits them all, so run it at parallelism 1. The source
// retains each batch it emits; the caller keeps its own references.
func NewBatchSource(batches []arrow.RecordBatch) exec.Source {
	return &batchSource{batches: batches}
}

type batchSource struct {
	batches []arrow.RecordBatch
	next    int
}

func (s *batchSource) RestoreOffset(offset []byte) error {
	if len(offset) != 8 {
		return fmt.Errorf("values source: offset of %d bytes", len(offset))
	}
	s.next = int(binary.BigEndian.Uint64(offset))
	return nil
}

func (s *batchSource) SnapshotOffset() ([]byte, error) {
	return binary.BigEndian.AppendUint64(nil, uint64(s.next)), nil
}

func (s *batchSource) Open(*exec.TaskContext) error { return nil }

func (s *batchSource) Produce(context.Context) (exec.SourceResult, error) {
	if s.next >= len(s.batches) {
		return exec.SourceResult{Status: exec.Finished}, nil
	}
	rec := s.batches[s.next]
	s.next++
	rec.Retain()
	return exec.SourceResult{Status: exec.Produced, Batch: exec.Batch{Rec: rec}, WM: exec.MinWatermark}, nil
}

func (s *batchSource) Close() error { return nil }
