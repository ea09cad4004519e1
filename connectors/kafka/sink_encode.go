package kafka

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/clinksql/clinksql/connectors"
	"github.com/clinksql/clinksql/exec/textform"
)

// recordEncoder turns the rows of a batch into record keys and values: json and csv in the file sinks' text forms
// (textform.Row), raw as the bytes of a single text or binary column (a NULL is a null value).
type recordEncoder struct {
	value, key         columnsEncoder
	valueCols, keyCols []int
	// tsCol and headersCol are the 'timestamp' and 'headers' metadata columns, -1 for none.
	tsCol, headersCol int
	ts                *array.Timestamp
	toTime            func(arrow.Timestamp) time.Time
	headers           arrow.Array
}

// columnsEncoder renders selected columns of one row.
type columnsEncoder struct {
	text *textform.Row // json, csv
	raw  bool
	bin  arrow.Array // raw: the bound column
	arrs []arrow.Array
}

func newRecordEncoder(cfg SinkConfig) (*recordEncoder, error) {
	e := &recordEncoder{tsCol: -1, headersCol: -1}
	meta := func(i int) string {
		if i < len(cfg.Metadata) {
			return cfg.Metadata[i]
		}
		return ""
	}
	inKey := map[int]bool{}
	for _, name := range cfg.KeyFields {
		i := cfg.Schema.FieldIndices(name)[0]
		if meta(i) != "" {
			return nil, optionError("key.fields", "kafka sink: key column '%s' is a metadata column", name)
		}
		e.keyCols = append(e.keyCols, i)
		inKey[i] = true
	}
	for i := range cfg.Schema.NumFields() {
		f := cfg.Schema.Field(i)
		switch meta(i) {
		case "":
			if !(cfg.ValueExceptKey && inKey[i]) {
				e.valueCols = append(e.valueCols, i)
			}
		case "timestamp":
			tt, ok := f.Type.(*arrow.TimestampType)
			if !ok {
				return nil, &connectors.ConfigError{Code: "42804", Column: f.Name, Msg: fmt.Sprintf("kafka sink: metadata column %s ('timestamp') must be a TIMESTAMP", f.Name)}
			}
			toTime, err := tt.GetToTimeFunc()
			if err != nil {
				return nil, err
			}
			e.tsCol, e.toTime = i, toTime
		case "headers":
			if f.Type.ID() != arrow.STRING {
				return nil, &connectors.ConfigError{Code: "42804", Column: f.Name, Msg: fmt.Sprintf("kafka sink: metadata column %s ('headers') must be VARCHAR (a JSON object)", f.Name)}
			}
			e.headersCol = i
		default:
			return nil, &connectors.ConfigError{Code: "0A000", Column: f.Name, Msg: fmt.Sprintf("kafka sink: metadata '%s' of column %s is read-only", meta(i), f.Name)}
		}
	}
	var err error
	if e.value, err = newColumnsEncoder("value.format", cfg.ValueFormat, cfg.Schema, e.valueCols); err != nil {
		return nil, err
	}
	if len(e.keyCols) > 0 {
		if e.key, err = newColumnsEncoder("key.format", cfg.KeyFormat, cfg.Schema, e.keyCols); err != nil {
			return nil, err
		}
	}
	return e, nil
}

func newColumnsEncoder(option, format string, schema *arrow.Schema, cols []int) (columnsEncoder, error) {
	fields := make([]arrow.Field, len(cols))
	for j, i := range cols {
		fields[j] = schema.Field(i)
	}
	if format == "raw" {
		if len(fields) != 1 {
			return columnsEncoder{}, optionError(option, "kafka sink: format 'raw' writes one column, not %d", len(fields))
		}
		switch fields[0].Type.ID() {
		case arrow.STRING, arrow.LARGE_STRING, arrow.BINARY, arrow.LARGE_BINARY:
		default:
			return columnsEncoder{}, &connectors.ConfigError{Code: "42804", Column: fields[0].Name, Msg: fmt.Sprintf("kafka sink: format 'raw' writes a VARCHAR or BYTEA column, not %s %s", fields[0].Name, fields[0].Type)}
		}
		return columnsEncoder{raw: true}, nil
	}
	text, err := textform.NewRow(format, arrow.NewSchema(fields, nil))
	if err != nil {
		return columnsEncoder{}, &connectors.ConfigError{Code: "42804", Msg: "kafka sink: " + err.Error(), Err: err}
	}
	return columnsEncoder{text: text}, nil
}

func (c *columnsEncoder) bind(rec arrow.RecordBatch, cols []int) error {
	if c.raw {
		c.bin = rec.Column(cols[0])
		return nil
	}
	c.arrs = c.arrs[:0]
	for _, i := range cols {
		c.arrs = append(c.arrs, rec.Column(i))
	}
	return c.text.Bind(c.arrs)
}

func (c *columnsEncoder) unbind() {
	c.bin = nil
	if c.text != nil {
		c.text.Unbind()
		clear(c.arrs)
		c.arrs = c.arrs[:0]
	}
}

// append appends row i to dst; null reports a raw NULL (a null key or value, not an empty one).
func (c *columnsEncoder) append(dst []byte, i int) (out []byte, null bool) {
	if !c.raw {
		return c.text.Append(dst, i), false
	}
	if c.bin.IsNull(i) {
		return dst, true
	}
	switch a := c.bin.(type) {
	case *array.String:
		return append(dst, a.Value(i)...), false
	case *array.LargeString:
		return append(dst, a.Value(i)...), false
	case *array.Binary:
		return append(dst, a.Value(i)...), false
	case *array.LargeBinary:
		return append(dst, a.Value(i)...), false
	}
	panic(fmt.Sprintf("kafka sink: raw column of type %s", c.bin.DataType()))
}

// timestamp is row i's record timestamp: its 'timestamp' column, else now.
func (e *recordEncoder) timestamp(i int, now time.Time) time.Time {
	if e.ts == nil || e.ts.IsNull(i) {
		return now
	}
	return e.toTime(e.ts.Value(i))
}

// recordHeaders are row i's headers: its 'headers' column, a JSON object of names and text values.
func (e *recordEncoder) recordHeaders(i int) ([]kgo.RecordHeader, error) {
	if e.headers == nil || e.headers.IsNull(i) {
		return nil, nil
	}
	text := e.headers.(*array.String).Value(i)
	var m map[string]*string
	if err := json.Unmarshal([]byte(text), &m); err != nil {
		return nil, fmt.Errorf("kafka sink: headers %q are not a JSON object of text values: %w", text, err)
	}
	hs := make([]kgo.RecordHeader, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		h := kgo.RecordHeader{Key: k}
		if m[k] != nil {
			h.Value = []byte(*m[k])
		}
		hs = append(hs, h)
	}
	return hs, nil
}

func (e *recordEncoder) bind(rec arrow.RecordBatch) error {
	if e.tsCol >= 0 {
		e.ts = rec.Column(e.tsCol).(*array.Timestamp)
	}
	if e.headersCol >= 0 {
		e.headers = rec.Column(e.headersCol)
	}
	if err := e.value.bind(rec, e.valueCols); err != nil {
		return err
	}
	if len(e.keyCols) > 0 {
		return e.key.bind(rec, e.keyCols)
	}
	return nil
}

func (e *recordEncoder) unbind() {
	e.ts, e.headers = nil, nil
	e.value.unbind()
	e.key.unbind()
}
