package nats

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	natsgo "github.com/nats-io/nats.go"

	"github.com/clinksql/clinksql/connectors"
	"github.com/clinksql/clinksql/connectors/file"
	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/sqlerr"
)

// rowMeta is a row's message attributes for the metadata columns.
type rowMeta struct {
	subject string
	hdr     natsgo.Header
	md      msgMeta
}

// batcher decodes message payloads into a batch of the stream's columns: json and csv by file.TextDecoder, raw
// as the bytes themselves; the metadata columns from the messages.
type batcher struct {
	cfg   *SourceConfig
	alloc memory.Allocator
	dec   *file.TextDecoder
	raw   array.Builder
	str   bool
	meta  bool
	rows  []rowMeta
}

type badBatch struct {
	md    msgMeta
	err   error
	count int
}

func newBatcher(cfg *SourceConfig, alloc memory.Allocator) (*batcher, error) {
	b := &batcher{cfg: cfg, alloc: alloc, meta: len(cfg.DataColumns) < len(cfg.Columns)}
	fields := make([]arrow.Field, len(cfg.DataColumns))
	for i, j := range cfg.DataColumns {
		fields[i] = cfg.Columns[j].Field
	}
	if cfg.Format == FormatRaw {
		if fields[0].Type.ID() == arrow.STRING {
			b.raw, b.str = array.NewStringBuilder(alloc), true
		} else {
			b.raw = array.NewBinaryBuilder(alloc, arrow.BinaryTypes.Binary)
		}
		return b, nil
	}
	var err error
	b.dec, err = file.NewTextDecoder(arrow.NewSchema(fields, nil), alloc)
	return b, err
}

func (b *batcher) release() {
	if b.dec != nil {
		b.dec.Release()
	}
	if b.raw != nil {
		b.raw.Release()
	}
}

func (b *batcher) rowCount() int { return len(b.rows) }

// add decodes one message; an error means it has no row.
func (b *batcher) add(m *natsgo.Msg, md msgMeta) error {
	switch b.cfg.Format {
	case FormatRaw:
		if b.str {
			if !utf8.Valid(m.Data) {
				return sqlerr.New("22021", sqlerr.NoPos, "invalid byte sequence for encoding \"UTF8\"")
			}
			b.raw.(*array.StringBuilder).BinaryBuilder.Append(m.Data)
		} else {
			b.raw.(*array.BinaryBuilder).Append(m.Data)
		}
	case FormatCSV:
		if bad := b.dec.AppendCSV(m.Data); bad != nil {
			return bad
		}
	default:
		blank, bad := b.dec.AppendJSON(m.Data)
		if bad != nil {
			return bad
		}
		if blank {
			return sqlerr.New(sqlerr.InvalidTextRep, sqlerr.NoPos, "empty JSON message")
		}
	}
	r := rowMeta{md: md}
	if b.meta {
		r.subject, r.hdr = m.Subject, m.Header
	}
	b.rows = append(b.rows, r)
	return nil
}

// build converts the rows into a batch; rows with values that cannot be read are dropped (the first with its
// error, and their count).
func (b *batcher) build() (exec.Batch, *badBatch, error) {
	n := len(b.rows)
	defer func() {
		clear(b.rows)
		b.rows = b.rows[:0]
	}()
	cols := make([]arrow.Array, len(b.cfg.Columns))
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	var bad *badBatch
	var keep []bool
	if b.raw != nil {
		cols[b.cfg.DataColumns[0]] = b.raw.NewArray()
	} else {
		rec, bads, err := b.dec.Batch(n)
		if err != nil {
			return exec.Batch{}, nil, err
		}
		for i, j := range b.cfg.DataColumns {
			a := rec.Column(i)
			a.Retain()
			cols[j] = a
		}
		rec.Release()
		if len(bads) > 0 {
			keep = make([]bool, n)
			for i := range keep {
				keep[i] = true
			}
			for _, bv := range bads {
				if keep[bv.Row] {
					keep[bv.Row] = false
					if bad == nil {
						var e error = bv.Err
						if bv.Err == nil {
							e = errors.New("invalid value")
						}
						bad = &badBatch{md: b.rows[bv.Row].md, err: fmt.Errorf("column %q: %w", b.dec.ColumnName(bv.Col), e)}
					}
					bad.count++
				}
			}
		}
	}
	for j, c := range b.cfg.Columns {
		if c.MetadataKey != "" {
			cols[j] = b.metadataColumn(c)
		}
	}
	rec := array.NewRecordBatch(b.cfg.Schema, cols, int64(n))
	if keep == nil {
		return exec.Batch{Rec: rec}, nil, nil
	}
	defer rec.Release()
	out, err := connectors.FilterRows(b.alloc, rec, keep)
	if err != nil {
		return exec.Batch{}, nil, err
	}
	return exec.Batch{Rec: out}, bad, nil
}

func (b *batcher) metadataColumn(c Column) arrow.Array {
	n := len(b.rows)
	switch c.MetadataKey {
	case "subject", "headers":
		sb := array.NewStringBuilder(b.alloc)
		defer sb.Release()
		sb.Reserve(n)
		for _, r := range b.rows {
			if c.MetadataKey == "subject" {
				sb.Append(r.subject)
			} else {
				sb.Append(headersJSON(r.hdr))
			}
		}
		return sb.NewArray()
	case "timestamp":
		tt := c.Field.Type.(*arrow.TimestampType)
		tb := array.NewTimestampBuilder(b.alloc, tt)
		defer tb.Release()
		tb.Reserve(n)
		div := int64(1000) // nanoseconds to the column's unit
		switch tt.Unit {
		case arrow.Nanosecond:
			div = 1
		case arrow.Millisecond:
			div = 1_000_000
		case arrow.Second:
			div = 1_000_000_000
		}
		for _, r := range b.rows {
			tb.Append(arrow.Timestamp(r.md.ts / div))
		}
		return tb.NewArray()
	}
	ib := array.NewInt64Builder(b.alloc)
	defer ib.Release()
	ib.Reserve(n)
	for _, r := range b.rows {
		ib.Append(int64(r.md.seq))
	}
	return ib.NewArray()
}

// badRowError is a message that cannot be read in fail mode: a data error with the value's SQLSTATE.
func badRowError(msg string, err error) error {
	code := sqlerr.Code(err)
	if code == "" {
		code = sqlerr.InvalidTextRep
	}
	return &sqlerr.Error{Code: code, Pos: sqlerr.NoPos, Msg: msg, Err: err}
}
