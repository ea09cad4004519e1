package exec

import (
	"encoding/binary"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// What a reader outside a running job (clinksql state-cat, package state/inspect) needs to decode a checkpoint the
// way the runtime and the operators wrote it, without opening the job.

// StateDecoder is implemented by operators whose keyed state entries can be decoded into readable values. It is
// called on an operator that was built (Node.StateDecoder) but never opened: it must not touch a backend.
type StateDecoder interface {
	// DecodeState decodes one keyed state entry: the state id and user key of its KeyedKey, and its value.
	DecodeState(stateID byte, key, value []byte) (StateEntry, error)
}

// StateEntry is one decoded keyed state entry: named fields in Postgres text form (nil: NULL).
type StateEntry struct {
	Kind  string // what the entry is ("group", "window group", ...)
	Key   []StateField
	Value []StateField
}

// StateField is one named value of a decoded entry.
type StateField struct {
	Name  string  `json:"name"`
	Value *string `json:"value"`
}

// StateDecoder returns the decoder of an operator node's keyed state: its subtask 0 operator, built but not opened,
// when it implements StateDecoder; nil otherwise.
func (n *Node) StateDecoder() StateDecoder {
	if n.Kind != OperatorNode || n.newOperator == nil {
		return nil
	}
	d, _ := n.newOperator(0).(StateDecoder)
	return d
}

// InflightElement is one element of a captured in-flight log (unaligned checkpoint): a watermark or a batch of
// records that arrived on input channel Input before its barrier.
type InflightElement struct {
	Input     int
	Watermark *int64 // set for a watermark
	Idle      bool
	Batch     arrow.RecordBatch // set for a batch; the caller releases it
	Kinds     []RowKind         // a batch's row kinds; nil when every row is an insert
}

// DecodeInflightLog decodes the payload of an in-flight log file (chk-<id>/<participant>.inflight, after its frame
// was checked) with the reader a restore uses. The caller releases the batches.
func DecodeInflightLog(data []byte, alloc memory.Allocator) ([]InflightElement, error) {
	elems, err := decodeInflight(data, alloc)
	if err != nil {
		return nil, err
	}
	out := make([]InflightElement, 0, len(elems))
	for _, le := range elems {
		ie := InflightElement{Input: le.input}
		switch le.e.Kind {
		case KindWatermark:
			wm := le.e.WM
			ie.Watermark, ie.Idle = &wm, le.e.Idle
		case KindBatch:
			ie.Batch, ie.Kinds = le.e.Batch.Rec, le.e.Batch.Kinds
		}
		out = append(out, ie)
	}
	return out, nil
}

// OffsetDecoder is implemented by sources whose checkpointed offset (Source.SnapshotOffset) can be shown field by
// field. It is called on a source that was built (Node.OffsetDecoder) but never opened.
type OffsetDecoder interface {
	DecodeOffset(offset []byte) ([]StateField, error)
}

// OffsetDecoder returns the decoder of a source node's offsets: its subtask 0 source, built but not opened, when
// it implements OffsetDecoder; nil otherwise.
func (n *Node) OffsetDecoder() OffsetDecoder {
	if n.Kind != SourceNode || n.newSource == nil {
		return nil
	}
	d, _ := n.newSource(0).(OffsetDecoder)
	return d
}

// Field is a StateField of a non-NULL value.
func Field(name string, value any) StateField {
	s := fmt.Sprint(value)
	return StateField{Name: name, Value: &s}
}

// The names of the runtime's own operator keys in a subtask's state (state.OperatorKey of each is the key), for
// readers of a checkpoint such as clinksql state-cat.
const (
	StateKeySourceOffset    = "source/offset"     // a source's SnapshotOffset
	StateKeySourceWatermark = "source/watermark"  // a source's watermark: 8 bytes big endian
	StateKeyCounts          = "runner/counts"     // DecodeCounts
	StateKeyInputWatermarks = "runner/watermarks" // DecodeInputWatermarks
	StateKeyInflight        = "runner/inflight"   // set when the checkpoint has an in-flight log here
)

// DecodeInputWatermarks decodes a runner/watermarks value: the combined watermark, then each input's, big endian.
func DecodeInputWatermarks(v []byte) (combined int64, inputs []int64, err error) {
	if len(v) < 8 || len(v)%8 != 0 {
		return 0, nil, fmt.Errorf("input watermarks of %d bytes, want a positive multiple of 8", len(v))
	}
	inputs = make([]int64, 0, len(v)/8-1)
	for i := 8; i < len(v); i += 8 {
		inputs = append(inputs, int64(binary.BigEndian.Uint64(v[i:])))
	}
	return int64(binary.BigEndian.Uint64(v)), inputs, nil
}

// SubtaskCounts are the counts a subtask's checkpoint holds (its runner/counts entry): rows emitted (a source's
// rows read, a sink's rows written), late rows, bad values, and rows taken from the inputs.
type SubtaskCounts struct {
	RowsOut, Late, BadValues, RowsIn int64
}

// encode is the runner/counts value of c (DecodeCounts reads it back).
func (c SubtaskCounts) encode() []byte {
	v := binary.BigEndian.AppendUint64(make([]byte, 0, 32), uint64(c.RowsOut))
	v = binary.BigEndian.AppendUint64(v, uint64(c.Late))
	v = binary.BigEndian.AppendUint64(v, uint64(c.BadValues))
	return binary.BigEndian.AppendUint64(v, uint64(c.RowsIn))
}

// DecodeCounts decodes a runner/counts value: four big-endian int64s, or the first three in checkpoints of older
// builds (RowsIn 0).
func DecodeCounts(v []byte) (SubtaskCounts, error) {
	if len(v) != 24 && len(v) != 32 {
		return SubtaskCounts{}, fmt.Errorf("counts of %d bytes, want 32 (or 24)", len(v))
	}
	c := SubtaskCounts{
		RowsOut:   int64(binary.BigEndian.Uint64(v)),
		Late:      int64(binary.BigEndian.Uint64(v[8:])),
		BadValues: int64(binary.BigEndian.Uint64(v[16:])),
	}
	if len(v) == 32 {
		c.RowsIn = int64(binary.BigEndian.Uint64(v[24:]))
	}
	return c, nil
}
