package operators

import (
	"context"
	"encoding/binary"
	"testing"

	"github.com/clinksql/clinksql/exec"
)

// ackingSource records what the runtime tells it about checkpoints, as a source that acks on completion does.
type ackingSource struct {
	at                 []uint64
	completed, aborted []uint64
}

func (s *ackingSource) RestoreOffset([]byte) error      { return nil }
func (s *ackingSource) Open(*exec.TaskContext) error    { return nil }
func (s *ackingSource) SnapshotOffset() ([]byte, error) { return []byte("plain"), nil }
func (s *ackingSource) Close() error                    { return nil }
func (s *ackingSource) Produce(context.Context) (exec.SourceResult, error) {
	return exec.SourceResult{Status: exec.Idle, WM: exec.MinWatermark}, nil
}
func (s *ackingSource) SnapshotOffsetAt(id uint64) ([]byte, error) {
	s.at = append(s.at, id)
	return []byte{byte(id)}, nil
}
func (s *ackingSource) NotifyCheckpointComplete(id uint64) { s.completed = append(s.completed, id) }
func (s *ackingSource) NotifyCheckpointAborted(id uint64)  { s.aborted = append(s.aborted, id) }

// A stream with a WATERMARK wraps its source: the wrapper must pass the checkpoint hooks through, or a source
// that acks on completion would never ack (the runtime finds the listener on the wrapper only).
func TestWatermarkWrapperForwardsCheckpointHooks(t *testing.T) {
	inner := &ackingSource{}
	w := WithWatermark(inner, nil)
	co, ok := w.(exec.CheckpointOffsetter)
	if !ok {
		t.Fatal("the wrapper is not a CheckpointOffsetter")
	}
	off, err := co.SnapshotOffsetAt(7)
	if err != nil {
		t.Fatal(err)
	}
	if len(off) != 9 || off[8] != 7 || int64(binary.BigEndian.Uint64(off)) != exec.MinWatermark {
		t.Fatalf("offset %x: want the watermark then the inner offset of checkpoint 7", off)
	}
	l, ok := w.(exec.CheckpointListener)
	if !ok {
		t.Fatal("the wrapper is not a CheckpointListener")
	}
	l.NotifyCheckpointComplete(7)
	l.NotifyCheckpointAborted(8)
	if len(inner.at) != 1 || inner.at[0] != 7 || len(inner.completed) != 1 || inner.completed[0] != 7 ||
		len(inner.aborted) != 1 || inner.aborted[0] != 8 {
		t.Fatalf("inner saw offsets at %v, completed %v, aborted %v", inner.at, inner.completed, inner.aborted)
	}
	// A plain source keeps its SnapshotOffset.
	plain := WithWatermark(&batchSource{}, nil).(exec.CheckpointOffsetter)
	if _, err := plain.SnapshotOffsetAt(3); err != nil {
		t.Fatal(err)
	}
}
