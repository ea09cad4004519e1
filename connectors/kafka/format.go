package kafka

import (
	"encoding/json"
	"fmt"
	"github.com/clinksql/clinksql/connectors/file"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/clinksql/clinksql/connectors"
	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/sqlerr"
)

// A batcher turns records into a batch of the stream's columns: the value's and the key's columns decoded in
// their formats (file.TextDecoder for json and csv, the bytes themselves for raw), the metadata columns from
// the records. A record gives one row, none (a debezium tombstone, an upsert delete of an unknown key), or two
// (an update's before and after); a record any of whose rows cannot be read is dropped whole (skip) or fails the
// source (fail), and counted once.

// rowOf is one row of the batch being built: the record whose metadata it carries, the record that made it (its
// group: an index in batcher.groups) and its kind.
type rowOf struct {
	meta  *kgo.Record
	group int
	kind  exec.RowKind
}

type batcher struct {
	cfg   *SourceConfig
	alloc memory.Allocator

	value, key *file.TextDecoder // json and csv
	rawValue   *rawColumn        // raw
	rawKey     *rawColumn
	envelope   *file.TextDecoder // debezium-json: before, after, op (or payload)
	payload    *file.TextDecoder // debezium-json with the schema: before, after, op inside payload
	keyNull    bool              // the key parse read last was null

	groups []*kgo.Record
	rows   []rowOf
}

// decodeErr is why a record cannot be read: the column at fault ("" for the record) and the error; row is the
// batch row it was found in (for errors found by batch).
type decodeErr struct {
	column string
	err    *sqlerr.Error
	row    int
	group  int
}

func newBatcher(cfg *SourceConfig, alloc memory.Allocator) (*batcher, error) {
	b := &batcher{cfg: cfg, alloc: alloc}
	sub := func(idx []int) *arrow.Schema {
		fields := make([]arrow.Field, len(idx))
		for i, j := range idx {
			fields[i] = cfg.Columns[j].Field
		}
		return arrow.NewSchema(fields, nil)
	}
	var err error
	switch cfg.Value {
	case FormatRaw:
		b.rawValue = newRawColumn(cfg.Columns[cfg.ValueColumns[0]].Field, alloc)
	default:
		if b.value, err = file.NewTextDecoder(sub(cfg.ValueColumns), alloc); err != nil {
			return nil, err
		}
	}
	if cfg.Value == FormatDebezium {
		str := func(names ...string) *arrow.Schema {
			fs := make([]arrow.Field, len(names))
			for i, n := range names {
				fs[i] = arrow.Field{Name: n, Type: arrow.BinaryTypes.String, Nullable: true}
			}
			return arrow.NewSchema(fs, nil)
		}
		if b.envelope, err = file.NewTextDecoder(str("before", "after", "op"), alloc); err != nil {
			return nil, err
		}
		if cfg.DebeziumSchema {
			b.payload = b.envelope
			if b.envelope, err = file.NewTextDecoder(str("payload"), alloc); err != nil {
				return nil, err
			}
		}
	}
	switch cfg.Key {
	case "":
	case FormatRaw:
		b.rawKey = newRawColumn(cfg.Columns[cfg.KeyColumns[0]].Field, alloc)
	default:
		if b.key, err = file.NewTextDecoder(sub(cfg.KeyColumns), alloc); err != nil {
			return nil, err
		}
	}
	return b, nil
}

func (b *batcher) release() {
	for _, d := range []*file.TextDecoder{b.value, b.key, b.envelope, b.payload} {
		if d != nil {
			d.Release()
		}
	}
	for _, r := range []*rawColumn{b.rawValue, b.rawKey} {
		if r != nil {
			r.b.Release()
		}
	}
}

// reserve makes room for about rows rows in the value's and key's decoders (each record a row).
func (b *batcher) reserve(rows int) {
	for _, d := range []*file.TextDecoder{b.value, b.key} {
		if d != nil {
			d.Reserve(rows)
		}
	}
}

// rowCount is the rows gathered.
func (b *batcher) rowCount() int { return len(b.rows) }

func (b *batcher) begin(r *kgo.Record) int {
	b.groups = append(b.groups, r)
	return len(b.groups) - 1
}

// add decodes one record of an append-only or debezium-json stream. It returns nil, or why the record cannot be
// read (nothing was added then).
func (b *batcher) add(r *kgo.Record) *decodeErr {
	if b.cfg.Value == FormatDebezium {
		return b.addDebezium(r)
	}
	if r.Value == nil {
		return nil // a null value (a tombstone of a compacted topic) has no row of an append-only stream
	}
	if d := b.parse(r.Key, r.Value); d != nil {
		return d
	}
	b.appendParsed()
	b.rows = append(b.rows, rowOf{meta: r, group: b.begin(r), kind: exec.Insert})
	return nil
}

// addUpsert decodes one record of an upsert-kafka stream whose key's last record is prev (nil: none): a value
// inserts (no prev) or updates (-U of prev, +U), a null value deletes prev (-D), or is nothing without one.
func (b *batcher) addUpsert(r, prev *kgo.Record) *decodeErr {
	if r.Value == nil && prev == nil {
		return nil
	}
	if d := b.parse(r.Key, r.Value); d != nil {
		return d
	}
	g := b.begin(r)
	if prev != nil {
		if d := b.parse(prev.Key, prev.Value); d != nil {
			return d // cannot happen: prev was read when it came
		}
		b.appendParsed()
		kind := exec.UpdateBefore
		if r.Value == nil {
			kind = exec.Delete
		}
		b.rows = append(b.rows, rowOf{meta: prev, group: g, kind: kind})
		if r.Value == nil {
			return nil
		}
		b.parse(r.Key, r.Value)
	}
	b.appendParsed()
	kind := exec.Insert
	if prev != nil {
		kind = exec.UpdateAfter
	}
	b.rows = append(b.rows, rowOf{meta: r, group: g, kind: kind})
	return nil
}

// parse reads a record's key and value without adding anything.
func (b *batcher) parse(key, value []byte) *decodeErr {
	if b.cfg.Key != "" {
		b.keyNull = key == nil
		if d := parseInto(b.key, b.rawKey, b.cfg.Key, key, "key"); d != nil {
			return d
		}
	}
	return parseInto(b.value, b.rawValue, b.cfg.Value, value, "value")
}

func parseInto(d *file.TextDecoder, raw *rawColumn, format string, data []byte, what string) *decodeErr {
	switch {
	case raw != nil:
		return raw.check(data)
	case data == nil:
		return nil // a null key: NULL columns
	case format == FormatCSV:
		if bad := d.ParseCSV(data); bad != nil {
			return &decodeErr{err: prefixed(bad, what)}
		}
	default:
		blank, bad := d.ParseJSON(data)
		if blank {
			bad = sqlerr.New(sqlerr.InvalidTextRep, sqlerr.NoPos, "empty JSON %s", what)
		}
		if bad != nil {
			return &decodeErr{err: prefixed(bad, what)}
		}
	}
	return nil
}

func prefixed(e *sqlerr.Error, what string) *sqlerr.Error {
	c := *e
	c.Msg = what + ": " + c.Msg
	return &c
}

// appendParsed adds the row parse read.
func (b *batcher) appendParsed() {
	if b.cfg.Key != "" {
		switch {
		case b.rawKey != nil:
			b.rawKey.appendChecked()
		case b.keyNull:
			b.key.AppendNull()
		default:
			b.key.AppendParsed()
		}
	}
	switch {
	case b.rawValue != nil:
		b.rawValue.appendChecked()
	default:
		b.value.AppendParsed()
	}
}

// addDebezium reads a Debezium change event: c and r insert after, u retracts before and inserts after, d
// retracts before; a null value (the tombstone after a delete) has no row.
func (b *batcher) addDebezium(r *kgo.Record) *decodeErr {
	if r.Value == nil {
		return nil
	}
	env := b.envelope
	blank, bad := env.ParseJSON(r.Value)
	if bad == nil && blank {
		bad = sqlerr.New(sqlerr.InvalidTextRep, sqlerr.NoPos, "empty JSON value")
	}
	if bad != nil {
		return &decodeErr{err: prefixed(bad, "value")}
	}
	if b.payload != nil {
		p, ok := env.Field(0)
		if !ok {
			return &decodeErr{err: sqlerr.New(sqlerr.InvalidTextRep, sqlerr.NoPos, "debezium-json: no \"payload\" (is 'debezium-json.schema-include' right?)")}
		}
		env = b.payload
		if _, bad := env.ParseJSON(p); bad != nil {
			return &decodeErr{err: prefixed(bad, "debezium-json payload")}
		}
	}
	op, _ := env.Field(2)
	before, hasBefore := env.Field(0)
	after, hasAfter := env.Field(1)
	var images [][]byte
	var kinds []exec.RowKind
	switch string(op) {
	case "c", "r":
		images, kinds = [][]byte{after}, []exec.RowKind{exec.Insert}
		hasBefore = true
	case "u":
		images, kinds = [][]byte{before, after}, []exec.RowKind{exec.UpdateBefore, exec.UpdateAfter}
	case "d":
		images, kinds = [][]byte{before}, []exec.RowKind{exec.Delete}
		hasAfter = true
	default:
		return &decodeErr{err: sqlerr.New(sqlerr.InvalidTextRep, sqlerr.NoPos, "debezium-json: unknown operation %q (want c, r, u or d)", op)}
	}
	if !hasBefore || !hasAfter {
		return &decodeErr{err: sqlerr.New(sqlerr.InvalidTextRep, sqlerr.NoPos,
			"debezium-json: operation %q without its before or after image (an update needs REPLICA IDENTITY FULL)", op)}
	}
	// Check every image before adding any row: a record adds all its rows or none. (The images point into the
	// envelope's record or scratch, which the value decoder does not touch.)
	for _, img := range images {
		if d := parseInto(b.value, nil, FormatJSON, img, "debezium-json image"); d != nil {
			return d
		}
	}
	g := b.begin(r)
	for i, img := range images {
		b.value.ParseJSON(img)
		b.value.AppendParsed()
		b.rows = append(b.rows, rowOf{meta: r, group: g, kind: kinds[i]})
	}
	return nil
}

// reset drops the records and rows gathered (after batch and the caller's look at the dropped groups).
func (b *batcher) reset() {
	clear(b.groups)
	clear(b.rows)
	b.groups, b.rows = b.groups[:0], b.rows[:0]
}

// batch converts the rows gathered into a batch; rows of records with values that cannot be read are dropped
// and those records returned (sorted), with the first one's error.
func (b *batcher) batch() (exec.Batch, []int, *decodeErr, error) {
	n := len(b.rows)
	cols := make([]arrow.Array, len(b.cfg.Columns))
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	var firstBad *decodeErr
	badRec := map[int]bool{}
	take := func(d *file.TextDecoder, idx []int) error {
		rec, bads, err := d.Batch(n)
		if err != nil {
			return err
		}
		defer rec.Release()
		for _, bv := range bads {
			badRec[b.rows[bv.Row].group] = true
			if firstBad == nil || bv.Row < firstBad.row {
				e := bv.Err
				if e == nil {
					e = sqlerr.New(sqlerr.InvalidTextRep, sqlerr.NoPos, "invalid value")
				}
				firstBad = &decodeErr{column: d.ColumnName(bv.Col), err: e, row: bv.Row, group: b.rows[bv.Row].group}
			}
		}
		for i, j := range idx {
			a := rec.Column(i)
			a.Retain()
			if cols[j] != nil {
				cols[j].Release() // the value's column wins over the key's (ALL)
			}
			cols[j] = a
		}
		return nil
	}
	if b.cfg.Key != "" {
		if b.rawKey != nil {
			cols[b.cfg.KeyColumns[0]] = b.rawKey.b.NewArray()
		} else if err := take(b.key, b.cfg.KeyColumns); err != nil {
			return exec.Batch{}, nil, nil, fmt.Errorf("key: %w", err)
		}
	}
	if b.rawValue != nil {
		j := b.cfg.ValueColumns[0]
		if cols[j] != nil {
			cols[j].Release()
		}
		cols[j] = b.rawValue.b.NewArray()
	} else if err := take(b.value, b.cfg.ValueColumns); err != nil {
		return exec.Batch{}, nil, nil, fmt.Errorf("value: %w", err)
	}
	for j, c := range b.cfg.Columns {
		if c.MetadataKey != "" {
			cols[j] = b.metadataColumn(c)
		}
	}
	rec := array.NewRecordBatch(b.cfg.Schema, cols, int64(n))
	var kinds []exec.RowKind
	for i, r := range b.rows {
		if r.kind != exec.Insert {
			if kinds == nil {
				kinds = make([]exec.RowKind, n)
			}
			kinds[i] = r.kind
		}
	}
	if len(badRec) == 0 {
		return exec.Batch{Rec: rec, Kinds: kinds}, nil, nil, nil
	}
	var dropped []int
	for r := range badRec {
		dropped = append(dropped, r)
	}
	slices.Sort(dropped)
	keep := make([]bool, n)
	var keptKinds []exec.RowKind
	for i, r := range b.rows {
		keep[i] = !badRec[r.group]
		if keep[i] && kinds != nil {
			keptKinds = append(keptKinds, kinds[i])
		}
	}
	out, err := connectors.FilterRows(b.alloc, rec, keep)
	rec.Release()
	if err != nil {
		return exec.Batch{}, nil, nil, err
	}
	return exec.Batch{Rec: out, Kinds: keptKinds}, dropped, firstBad, nil
}

// metadataColumn builds a metadata column from the rows' records.
func (b *batcher) metadataColumn(c Column) arrow.Array {
	n := len(b.rows)
	switch c.MetadataKey {
	case "topic", "timestamp-type", "headers":
		sb := array.NewStringBuilder(b.alloc)
		defer sb.Release()
		sb.Reserve(n)
		for _, row := range b.rows {
			r := row.meta
			switch c.MetadataKey {
			case "topic":
				sb.Append(r.Topic)
			case "timestamp-type":
				sb.Append(timestampType(r))
			default:
				sb.Append(headersJSON(r.Headers))
			}
		}
		return sb.NewArray()
	case "timestamp":
		tb := array.NewTimestampBuilder(b.alloc, c.Field.Type.(*arrow.TimestampType))
		defer tb.Release()
		tb.Reserve(n)
		mul := int64(1000) // milliseconds to the column's unit (microseconds)
		switch c.Field.Type.(*arrow.TimestampType).Unit {
		case arrow.Millisecond:
			mul = 1
		case arrow.Nanosecond:
			mul = 1_000_000
		case arrow.Second:
			mul = 0
		}
		for _, row := range b.rows {
			ms := row.meta.Timestamp.UnixMilli()
			if mul == 0 {
				tb.Append(arrow.Timestamp(ms / 1000))
			} else {
				tb.Append(arrow.Timestamp(ms * mul))
			}
		}
		return tb.NewArray()
	}
	// partition, offset, leader-epoch: integers
	val := func(r *kgo.Record) int64 {
		switch c.MetadataKey {
		case "partition":
			return int64(r.Partition)
		case "offset":
			return r.Offset
		}
		return int64(r.LeaderEpoch)
	}
	if c.Field.Type.ID() == arrow.INT32 {
		ib := array.NewInt32Builder(b.alloc)
		defer ib.Release()
		ib.Reserve(n)
		for _, row := range b.rows {
			ib.Append(int32(val(row.meta)))
		}
		return ib.NewArray()
	}
	ib := array.NewInt64Builder(b.alloc)
	defer ib.Release()
	ib.Reserve(n)
	for _, row := range b.rows {
		ib.Append(val(row.meta))
	}
	return ib.NewArray()
}

func timestampType(r *kgo.Record) string {
	if r.Attrs.TimestampType() == 1 {
		return "LogAppendTime"
	}
	return "CreateTime"
}

// headersJSON is the headers as a JSON object of strings (not UTF-8: U+FFFD replacements; a repeated name: the
// last value; a null value: null).
func headersJSON(hs []kgo.RecordHeader) string {
	var sb strings.Builder
	sb.WriteByte('{')
	seen := map[string]int{}
	var keys []string
	vals := map[string][]byte{}
	for _, h := range hs {
		if _, ok := seen[h.Key]; !ok {
			seen[h.Key] = len(keys)
			keys = append(keys, h.Key)
		}
		vals[h.Key] = h.Value
	}
	for i, k := range keys {
		if i > 0 {
			sb.WriteByte(',')
		}
		kb, _ := json.Marshal(strings.ToValidUTF8(k, "\uFFFD"))
		sb.Write(kb)
		sb.WriteByte(':')
		if v := vals[k]; v == nil {
			sb.WriteString("null")
		} else {
			vb, _ := json.Marshal(strings.ToValidUTF8(string(v), "\uFFFD"))
			sb.Write(vb)
		}
	}
	sb.WriteByte('}')
	return sb.String()
}

// rawColumn is the raw format: the bytes themselves as the one column (VARCHAR: they must be UTF-8).
type rawColumn struct {
	name    string
	str     bool
	b       array.Builder
	checked []byte
	null    bool
}

func newRawColumn(f arrow.Field, alloc memory.Allocator) *rawColumn {
	if f.Type.ID() == arrow.STRING {
		return &rawColumn{name: f.Name, str: true, b: array.NewStringBuilder(alloc)}
	}
	return &rawColumn{name: f.Name, b: array.NewBinaryBuilder(alloc, arrow.BinaryTypes.Binary)}
}

func (r *rawColumn) check(data []byte) *decodeErr {
	r.checked, r.null = data, data == nil
	if r.str && data != nil && !utf8.Valid(data) {
		return &decodeErr{column: r.name, err: sqlerr.New("22021", sqlerr.NoPos, "invalid byte sequence for encoding \"UTF8\"")}
	}
	return nil
}

func (r *rawColumn) appendChecked() {
	switch {
	case r.null:
		r.b.AppendNull()
	case r.str:
		r.b.(*array.StringBuilder).BinaryBuilder.Append(r.checked)
	default:
		r.b.(*array.BinaryBuilder).Append(r.checked)
	}
}

// describeBad is a bad record's message: where it is and why.
func describeBad(r *kgo.Record, d *decodeErr) string {
	msg := d.err.Msg
	if d.column != "" {
		msg = "column " + strconv.Quote(d.column) + ": " + msg
	}
	return fmt.Sprintf("kafka source: topic %s partition %d offset %d: %s", r.Topic, r.Partition, r.Offset, msg)
}
