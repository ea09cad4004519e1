package exec

import (
	"fmt"
	"math"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/clinksql/clinksql/checkpoint"
)

// RowKind says what a row does to the result it feeds: append-only operators see only Insert; updating queries emit
// retractions as UpdateBefore/UpdateAfter pairs and Delete.
type RowKind int8

const (
	Insert RowKind = iota
	UpdateBefore
	UpdateAfter
	Delete
)

func (k RowKind) String() string {
	switch k {
	case Insert:
		return "+I"
	case UpdateBefore:
		return "-U"
	case UpdateAfter:
		return "+U"
	case Delete:
		return "-D"
	}
	return fmt.Sprintf("RowKind(%d)", int8(k))
}

// Batch is a record batch with the row kind of each row. Kinds is nil when every row is an Insert, so append-only
// paths carry no extra vector. A Batch owns one reference to Rec: whoever receives a Batch releases it (or hands it
// on) exactly once.
type Batch struct {
	Rec   arrow.RecordBatch
	Kinds []RowKind
	// keyGroups, set by a hash exchange (WithKeyGroups), are the key group of every row of groupedRec by the hash
	// of its columns groupedCols (state.KeyGroupOf(HashKeys(...)), the exchange's routing): the keyed operator
	// behind the exchange takes them instead of hashing its keys again (BatchKeyGroups), provided Rec is still
	// groupedRec and its key columns are groupedCols. Two bytes a row, read where the operator needs them. An
	// operator that builds another Batch, or puts another record into this one, leaves them behind or unused.
	keyGroups   []uint16
	groupedCols []int
	groupedRec  arrow.RecordBatch
}

// WithKeyGroups returns b carrying kgs, the key groups of its rows by the hash of columns cols (read-only from
// then on).
func (b Batch) WithKeyGroups(kgs []uint16, cols []int) Batch {
	b.keyGroups, b.groupedCols, b.groupedRec = kgs, cols, b.Rec
	return b
}

// KeyGroups returns the key groups of b's rows by the hash of columns cols if b carries them (see
// WithKeyGroups), else nil.
func (b Batch) KeyGroups(cols []int) []uint16 {
	if b.keyGroups == nil || b.Rec != b.groupedRec || len(b.keyGroups) != b.Rows() || !slices.Equal(cols, b.groupedCols) {
		return nil
	}
	return b.keyGroups
}

// Rows returns the number of rows.
func (b Batch) Rows() int {
	if b.Rec == nil {
		return 0
	}
	return int(b.Rec.NumRows())
}

// Kind returns the kind of row i.
func (b Batch) Kind(i int) RowKind {
	if b.Kinds == nil {
		return Insert
	}
	return b.Kinds[i]
}

// Release drops the batch's reference to its record.
func (b Batch) Release() {
	if b.Rec != nil {
		b.Rec.Release()
	}
}

// Event time is int64 microseconds since the Unix epoch, UTC.
const (
	// MinWatermark is the watermark of an input that has not said anything yet.
	MinWatermark int64 = math.MinInt64
	// MaxWatermark is the watermark of a finished input: every window fires.
	MaxWatermark int64 = math.MaxInt64
)

// ElementKind tags a stream element.
type ElementKind uint8

const (
	KindBatch ElementKind = iota
	KindWatermark
	KindBarrier
	// KindEnd is end of input on one channel: the producer sends nothing after it.
	KindEnd
	// KindMarker is a latency marker (latency.go): a source's wall-clock time when it emitted it, forwarded in
	// order through every channel and subtask, bypassing the operators, to the sinks, which record its age.
	KindMarker
)

func (k ElementKind) String() string {
	return [...]string{"batch", "watermark", "barrier", "end", "marker"}[k]
}

// Element is exactly one of: a data batch, a watermark, a checkpoint barrier, end of input, a latency marker.
// Elements travel FIFO on a channel, so a barrier separates the records of two checkpoints.
type Element struct {
	Kind    ElementKind
	Batch   Batch              // KindBatch
	WM      int64              // KindWatermark: event time in microseconds
	Idle    bool               // KindWatermark: the producer is idle and stops holding the watermark back
	Barrier checkpoint.Barrier // KindBarrier
	Marker  int64              // KindMarker: when the source emitted it, Unix nanoseconds (JobConfig.Now)
}

func (e Element) String() string {
	switch e.Kind {
	case KindBatch:
		return fmt.Sprintf("batch(%d rows)", e.Batch.Rows())
	case KindWatermark:
		if e.Idle {
			return "watermark(idle)"
		}
		return fmt.Sprintf("watermark(%d)", e.WM)
	case KindBarrier:
		return e.Barrier.String()
	case KindMarker:
		return fmt.Sprintf("marker(%d)", e.Marker)
	}
	return e.Kind.String()
}

// BatchElement wraps a batch.
func BatchElement(b Batch) Element { return Element{Kind: KindBatch, Batch: b} }

// WatermarkElement wraps a watermark.
func WatermarkElement(wm int64) Element { return Element{Kind: KindWatermark, WM: wm} }

// BarrierElement wraps a barrier.
func BarrierElement(b checkpoint.Barrier) Element { return Element{Kind: KindBarrier, Barrier: b} }
