package kafka

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/clinksql/clinksql/state"
)

const sourceOffsetVersion = 1

// sourceOffset is a source subtask's position: for every partition it owns, the next offset to read, the end of
// a bounded source (-1: none) and the partition's watermark.
type sourceOffset struct {
	sub, par int
	parts    []partOffset
}

type partOffset struct {
	tp
	next, end int64
	wm        int64
}

// encode writes a version byte, uvarints subtask, parallelism and partition count, then per partition (sorted):
// the topic (uvarint length, bytes), uvarint partition, varints next offset and end, and the 8-byte watermark.
func (o sourceOffset) encode() []byte {
	b := make([]byte, 0, 16+len(o.parts)*24)
	b = append(b, sourceOffsetVersion)
	b = binary.AppendUvarint(b, uint64(o.sub))
	b = binary.AppendUvarint(b, uint64(o.par))
	b = binary.AppendUvarint(b, uint64(len(o.parts)))
	for _, p := range o.parts {
		b = binary.AppendUvarint(b, uint64(len(p.topic)))
		b = append(b, p.topic...)
		b = binary.AppendUvarint(b, uint64(p.part))
		b = binary.AppendVarint(b, p.next)
		b = binary.AppendVarint(b, p.end)
		b = binary.BigEndian.AppendUint64(b, uint64(p.wm))
	}
	return b
}

func decodeSourceOffset(b []byte) (sourceOffset, error) {
	bad := fmt.Errorf("kafka source: unreadable offset (%d bytes)", len(b))
	if len(b) < 1 || b[0] != sourceOffsetVersion {
		return sourceOffset{}, bad
	}
	r := reader{b: b[1:], ok: true}
	o := sourceOffset{sub: int(r.uvarint(math.MaxInt32)), par: int(r.uvarint(math.MaxInt32))}
	n := r.uvarint(uint64(len(r.b)))
	for i := int64(0); i < n && r.ok; i++ {
		var p partOffset
		p.topic = string(r.bytes())
		p.part = int32(r.uvarint(math.MaxInt32))
		p.next, p.end = r.varint(), r.varint()
		p.wm = int64(r.fixed64())
		if p.next < 0 || p.end < -1 || i > 0 && !o.parts[i-1].tp.less(p.tp) {
			r.ok = false
		}
		o.parts = append(o.parts, p)
	}
	if !r.done() || o.par < 1 || o.sub >= o.par {
		return sourceOffset{}, bad
	}
	return o, nil
}

// reader reads what encode wrote; a short or malformed input clears ok.
type reader struct {
	b  []byte
	ok bool
}

func (r *reader) uvarint(limit uint64) int64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 || v > limit {
		r.ok = false
		return 0
	}
	r.b = r.b[n:]
	return int64(v)
}

func (r *reader) varint() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.ok = false
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) fixed64() uint64 {
	if len(r.b) < 8 {
		r.ok = false
		return 0
	}
	v := binary.BigEndian.Uint64(r.b)
	r.b = r.b[8:]
	return v
}

func (r *reader) bytes() []byte {
	n := r.uvarint(uint64(len(r.b)))
	if !r.ok {
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *reader) done() bool { return r.ok && len(r.b) == 0 }

// ---- upsert-kafka: the last record of every key, in the subtask's state ----

// A key's partition never changes while the topic keeps its partitions, so the subtask that reads a key keeps its
// last record: an update retracts it (-U) before its new row (+U), a delete retracts it (-D). The state is
// captured with the offset at every barrier, so a restore retracts exactly what the restored position had.

func upsertKey(r *kgo.Record) []byte {
	k := state.OperatorKey("kafka/upsert/")
	k = binary.AppendUvarint(k, uint64(len(r.Topic)))
	k = append(k, r.Topic...)
	return append(k, r.Key...)
}

// lastRecord returns the last record of r's key, nil for none.
func (s *source) lastRecord(r *kgo.Record) (*kgo.Record, error) {
	v, ok, err := s.ctx.State.Get(upsertKey(r))
	if err != nil || !ok {
		return nil, err
	}
	prev, err := decodeUpsertRecord(v)
	if err != nil {
		return nil, fmt.Errorf("kafka source: the last record of a key of %s: %w", r.Topic, err)
	}
	prev.Topic, prev.Key = r.Topic, r.Key
	return prev, nil
}

// remember stores the last record of every key the batch's records changed (groups not dropped), or deletes it.
func (s *source) remember(dropped []int) {
	b := s.batcher
	for g, r := range b.groups {
		if len(dropped) > 0 && dropped[0] == g {
			dropped = dropped[1:]
			continue
		}
		if r.Value == nil {
			s.ctx.State.Delete(upsertKey(r))
		} else {
			s.ctx.State.Put(upsertKey(r), encodeUpsertRecord(r))
		}
	}
}

// encodeUpsertRecord keeps what a retraction row shows: partition, offset, timestamp, leader epoch, timestamp
// type, headers, value.
func encodeUpsertRecord(r *kgo.Record) []byte {
	b := make([]byte, 0, 32+len(r.Value))
	b = binary.AppendUvarint(b, uint64(r.Partition))
	b = binary.AppendVarint(b, r.Offset)
	b = binary.AppendVarint(b, r.Timestamp.UnixMilli())
	b = binary.AppendVarint(b, int64(r.LeaderEpoch))
	b = append(b, byte(r.Attrs.TimestampType()&1))
	b = binary.AppendUvarint(b, uint64(len(r.Headers)))
	for _, h := range r.Headers {
		b = binary.AppendUvarint(b, uint64(len(h.Key)))
		b = append(b, h.Key...)
		if h.Value == nil {
			b = binary.AppendVarint(b, -1)
		} else {
			b = binary.AppendVarint(b, int64(len(h.Value)))
			b = append(b, h.Value...)
		}
	}
	return append(b, r.Value...)
}

func decodeUpsertRecord(b []byte) (*kgo.Record, error) {
	r := reader{b: b, ok: true}
	rec := &kgo.Record{}
	rec.Partition = int32(r.uvarint(math.MaxInt32))
	rec.Offset = r.varint()
	rec.Timestamp = time.UnixMilli(r.varint())
	rec.LeaderEpoch = int32(r.varint())
	if len(r.b) < 1 {
		return nil, errors.New("short record")
	}
	if r.b[0] == 1 {
		rec.Attrs = kgo.NewRecordAttrs(kgo.RecordAttrsOpts{TimestampType: 1})
	}
	r.b = r.b[1:]
	n := r.uvarint(uint64(len(r.b)))
	for i := int64(0); i < n && r.ok; i++ {
		h := kgo.RecordHeader{Key: string(r.bytes())}
		if l := r.varint(); l >= 0 && l <= int64(len(r.b)) {
			h.Value = append([]byte{}, r.b[:l]...)
			r.b = r.b[l:]
		} else if l != -1 {
			r.ok = false
		}
		rec.Headers = append(rec.Headers, h)
	}
	if !r.ok {
		return nil, errors.New("malformed record")
	}
	rec.Value = append([]byte{}, r.b...)
	return rec, nil
}
