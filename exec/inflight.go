package exec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"sync"

	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// inflightLog holds, for one unaligned checkpoint at one subtask, the elements that preceded the barrier on the
// inputs that had not delivered it when the subtask snapshotted its state: records the barrier overtook. They are
// in no operator's state and behind every upstream offset of the checkpoint, so they are persisted with it and
// replayed, input by input, before anything else on restore.
type inflightLog struct {
	id       uint64
	elements []loggedElement
	// stateErr is the result of persisting the state captured at the first delivery; set and read on the snapshot
	// worker goroutine only (the state task runs before the log task, FIFO).
	stateErr error
	// stateBytes is what that persist added (the same goroutine).
	stateBytes int64
	once       sync.Once
}

type loggedElement struct {
	input int
	e     Element
}

// add records a received element; batches are retained (the runner releases its own reference when it processes
// them).
func (l *inflightLog) add(input int, e Element) {
	switch e.Kind {
	case KindBatch:
		e.Batch.Rec.Retain()
	case KindWatermark:
	default:
		return
	}
	l.elements = append(l.elements, loggedElement{input: input, e: e})
}

// release drops the log's batch references; safe to call more than once and from any goroutine.
func (l *inflightLog) release() {
	l.once.Do(func() {
		for _, le := range l.elements {
			if le.e.Kind == KindBatch {
				le.e.Batch.Release()
			}
		}
		l.elements = nil
	})
}

const inflightVersion = 1

// encodeInflight serializes logged elements: a version byte, then per element the input index, the kind and its
// payload (a watermark, or one Arrow IPC stream plus the row kinds), and a trailing CRC32 of everything before.
func encodeInflight(elems []loggedElement, alloc memory.Allocator) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte(inflightVersion)
	var tmp [binary.MaxVarintLen64]byte
	putU := func(v uint64) { buf.Write(tmp[:binary.PutUvarint(tmp[:], v)]) }
	putI := func(v int64) { buf.Write(tmp[:binary.PutVarint(tmp[:], v)]) }
	putU(uint64(len(elems)))
	for _, le := range elems {
		putU(uint64(le.input))
		buf.WriteByte(byte(le.e.Kind))
		switch le.e.Kind {
		case KindWatermark:
			putI(le.e.WM)
			if le.e.Idle {
				buf.WriteByte(1)
			} else {
				buf.WriteByte(0)
			}
		case KindBatch:
			var rb bytes.Buffer
			w := ipc.NewWriter(&rb, ipc.WithSchema(le.e.Batch.Rec.Schema()), ipc.WithAllocator(alloc))
			if err := w.Write(le.e.Batch.Rec); err != nil {
				w.Close()
				return nil, fmt.Errorf("in-flight record: %w", err)
			}
			if err := w.Close(); err != nil {
				return nil, fmt.Errorf("in-flight record: %w", err)
			}
			putU(uint64(rb.Len()))
			buf.Write(rb.Bytes())
			putU(uint64(len(le.e.Batch.Kinds)))
			for _, k := range le.e.Batch.Kinds {
				buf.WriteByte(byte(k))
			}
		}
	}
	var crc [4]byte
	binary.LittleEndian.PutUint32(crc[:], crc32.ChecksumIEEE(buf.Bytes()))
	buf.Write(crc[:])
	return buf.Bytes(), nil
}

var errInflightCorrupt = errors.New("in-flight log is corrupt")

// decodeInflight reads what encodeInflight wrote; the batches it returns are owned by the caller.
func decodeInflight(data []byte, alloc memory.Allocator) (out []loggedElement, err error) {
	if len(data) < 5 || data[0] != inflightVersion {
		return nil, errInflightCorrupt
	}
	body := data[:len(data)-4]
	if crc32.ChecksumIEEE(body) != binary.LittleEndian.Uint32(data[len(data)-4:]) {
		return nil, fmt.Errorf("%w: checksum mismatch", errInflightCorrupt)
	}
	defer func() {
		if err != nil {
			for _, le := range out {
				if le.e.Kind == KindBatch {
					le.e.Batch.Release()
				}
			}
			out = nil
		}
	}()
	r := bytes.NewReader(body[1:])
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return nil, errInflightCorrupt
	}
	for ; n > 0; n-- {
		input, err := binary.ReadUvarint(r)
		if err != nil {
			return out, errInflightCorrupt
		}
		kind, err := r.ReadByte()
		if err != nil {
			return out, errInflightCorrupt
		}
		le := loggedElement{input: int(input), e: Element{Kind: ElementKind(kind)}}
		switch le.e.Kind {
		case KindWatermark:
			if le.e.WM, err = binary.ReadVarint(r); err != nil {
				return out, errInflightCorrupt
			}
			idle, err := r.ReadByte()
			if err != nil {
				return out, errInflightCorrupt
			}
			le.e.Idle = idle == 1
		case KindBatch:
			size, err := binary.ReadUvarint(r)
			if err != nil || size > uint64(r.Len()) {
				return out, errInflightCorrupt
			}
			raw := make([]byte, size)
			r.Read(raw)
			ir, err := ipc.NewReader(bytes.NewReader(raw), ipc.WithAllocator(alloc))
			if err != nil {
				return out, fmt.Errorf("%w: %v", errInflightCorrupt, err)
			}
			if !ir.Next() {
				ir.Release()
				return out, errInflightCorrupt
			}
			rec := ir.RecordBatch()
			rec.Retain()
			ir.Release()
			le.e.Batch.Rec = rec
			nk, err := binary.ReadUvarint(r)
			if err != nil || nk > uint64(r.Len()) {
				rec.Release()
				return out, errInflightCorrupt
			}
			if nk > 0 {
				le.e.Batch.Kinds = make([]RowKind, nk)
				for i := range le.e.Batch.Kinds {
					b, _ := r.ReadByte()
					le.e.Batch.Kinds[i] = RowKind(b)
				}
			}
		default:
			return out, errInflightCorrupt
		}
		out = append(out, le)
	}
	return out, nil
}
