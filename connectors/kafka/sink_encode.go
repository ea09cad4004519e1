package kafka

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/clinksql/clinksql/exec/operators"
)

// recordEncoder turns the rows of a batch into record keys and values: json and csv in the file sinks' text forms
// (operators.RowText), raw as the bytes of a single text or binary column (a NULL is a null value).
type recordEncoder struct {
	value, key         columnsEncoder
	valueCols, keyCols []int
}

// columnsEncoder renders selected columns of one row.
type columnsEncoder struct {
	text *operators.RowText // json, csv
	raw  bool
	bin  arrow.Array // raw: the bound column
	arrs []arrow.Array
}

func newRecordEncoder(cfg SinkConfig) (*recordEncoder, error) {
	e := &recordEncoder{}
	inKey := map[int]bool{}
	for _, name := range cfg.KeyFields {
		i := cfg.Schema.FieldIndices(name)[0]
		e.keyCols = append(e.keyCols, i)
		inKey[i] = true
	}
	for i := range cfg.Schema.NumFields() {
		if !(cfg.ValueExceptKey && inKey[i]) {
			e.valueCols = append(e.valueCols, i)
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
			return columnsEncoder{}, &operators.ConfigError{Code: "42804", Column: fields[0].Name, Msg: fmt.Sprintf("kafka sink: format 'raw' writes a VARCHAR or BYTEA column, not %s %s", fields[0].Name, fields[0].Type)}
		}
		return columnsEncoder{raw: true}, nil
	}
	text, err := operators.NewRowText(format, arrow.NewSchema(fields, nil))
	if err != nil {
		return columnsEncoder{}, &operators.ConfigError{Code: "42804", Msg: "kafka sink: " + err.Error(), Err: err}
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

func (e *recordEncoder) bind(rec arrow.RecordBatch) error {
	if err := e.value.bind(rec, e.valueCols); err != nil {
		return err
	}
	if len(e.keyCols) > 0 {
		return e.key.bind(rec, e.keyCols)
	}
	return nil
}

func (e *recordEncoder) unbind() {
	e.value.unbind()
	e.key.unbind()
}
