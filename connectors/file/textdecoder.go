package file

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/expr"
	"github.com/clinksql/clinksql/sqlerr"
)

// TextDecoder decodes records of text into Arrow batches of a schema, in the Postgres text forms the file sink writes:
// one CSV record (COPY ... CSV) or one JSON object per row. The file source feeds it its files' lines; the Kafka
// source a message's key or value. Append* add one row's values as texts (a record that cannot be read adds
// nothing and returns its error); Batch converts the rows gathered since the last Batch column at a time, and
// reports the values that cannot be read (a text the column's type refuses, a NULL in a NOT NULL column), which
// are NULL in the batch: the caller drops or fails their rows.
type TextDecoder struct {
	schema  *arrow.Schema
	alloc   memory.Allocator
	cols    []fsColumn
	csvp    csvParser
	jsonp   jsonParser
	ectx    *expr.Context // CAST with bad values as NULL (the rows are found by their NULLs)
	failCtx *expr.Context // CAST failing, to get a bad value's error
	castBad exec.Counter
	// The record ParseJSON or ParseCSV read last (nil after a failed parse).
	parsed    []byte
	parsedCSV bool
}

// BadValue is a value Batch could not read: column Col of batch row Row, and why.
type BadValue struct {
	Row, Col int
	Err      *sqlerr.Error
}

// NewTextDecoder returns a decoder of schema's columns; a column whose type has no text form is an error.
func NewTextDecoder(schema *arrow.Schema, alloc memory.Allocator) (*TextDecoder, error) {
	t := &TextDecoder{}
	if err := t.init(schema, alloc); err != nil {
		return nil, err
	}
	return t, nil
}

// CheckTextSchema reports a column whose type TextDecoder cannot produce (the message names the column).
func CheckTextSchema(schema *arrow.Schema) error { return checkSourceSchema(schema) }

func (t *TextDecoder) init(schema *arrow.Schema, alloc memory.Allocator) error {
	if err := checkSourceSchema(schema); err != nil {
		return err
	}
	t.schema, t.alloc = schema, alloc
	t.cols = make([]fsColumn, 0, schema.NumFields())
	for _, f := range schema.Fields() {
		col, _ := planFSColumn(f) // checked above
		col.text = array.NewStringBuilder(alloc)
		t.cols = append(t.cols, col)
	}
	t.ectx = &expr.Context{Alloc: alloc, Mode: expr.ErrorsNull, BadValues: &t.castBad}
	t.failCtx = &expr.Context{Alloc: alloc, Mode: expr.ErrorsFail}
	t.jsonp.init(schema)
	return nil
}

// Release frees the texts gathered.
func (t *TextDecoder) Release() {
	for i := range t.cols {
		t.cols[i].text.Release()
	}
	t.cols = nil
}

// ColumnName is the name of column c.
func (t *TextDecoder) ColumnName(c int) string { return t.cols[c].name }

// Reserve makes room for rows rows, and for texts as large as the last batch's.
func (t *TextDecoder) Reserve(rows int) {
	for i := range t.cols {
		t.cols[i].text.Reserve(rows)
		t.cols[i].text.ReserveData(t.cols[i].textSize + t.cols[i].textSize/8)
	}
}

// Discard drops the rows gathered since the last Batch.
func (t *TextDecoder) Discard() {
	for i := range t.cols {
		t.cols[i].text.NewArray().Release()
	}
}

// AppendJSON adds the row of one JSON object (ParseJSON, then AppendParsed).
func (t *TextDecoder) AppendJSON(rec []byte) (blank bool, bad *sqlerr.Error) {
	blank, bad = t.ParseJSON(rec)
	if bad == nil && !blank {
		t.AppendParsed()
	}
	return blank, bad
}

// ParseJSON reads one JSON object's values for the columns, without adding a row: a missing key or null is NULL,
// keys that name no column are ignored, keys match column names exactly, else case-insensitively. A record
// holding only white space is blank; one that is not a JSON object returns why. Field and AppendParsed then use
// the values, which point into rec until the next Parse.
func (t *TextDecoder) ParseJSON(rec []byte) (blank bool, bad *sqlerr.Error) {
	t.parsed, t.parsedCSV = nil, false
	blank, bad = t.jsonp.parse(rec)
	if bad == nil && !blank {
		t.parsed = rec
	}
	return blank, bad
}

// AppendCSV adds the row of one CSV record (ParseCSV, then AppendParsed).
func (t *TextDecoder) AppendCSV(rec []byte) *sqlerr.Error {
	if bad := t.ParseCSV(rec); bad != nil {
		return bad
	}
	t.AppendParsed()
	return nil
}

// ParseCSV reads one CSV record (a trailing line end is allowed) without adding a row: fields by position, an
// unquoted empty field is NULL. A record that does not parse or has too few or too many fields returns why.
func (t *TextDecoder) ParseCSV(rec []byte) *sqlerr.Error {
	t.parsed, t.parsedCSV = nil, false
	n, _, st, bad := t.csvp.parse(rec, true)
	switch {
	case bad != nil:
		return bad
	case st == recEnd:
		t.csvp.fields = append(t.csvp.fields[:0], csvField{}) // an empty record is one empty field
	case n < len(rec):
		return sqlerr.New(codeBadCopyFormat, sqlerr.NoPos, "extra data after the CSV record")
	}
	t.csvp.data = rec[:n]
	if bad := t.checkCSV(); bad != nil {
		return bad
	}
	t.parsed, t.parsedCSV = rec, true
	return nil
}

// Field is column c's value in the record parsed last: its bytes, or ok false for NULL.
func (t *TextDecoder) Field(c int) (v []byte, ok bool) {
	if t.parsedCSV {
		f := t.csvp.fields[c]
		if f.start == f.end && !f.quoted {
			return nil, false
		}
		if f.scratch {
			return t.csvp.scratch[f.start:f.end], true
		}
		return t.csvp.data[f.start:f.end], true
	}
	sl := t.jsonp.slots[c]
	switch {
	case !sl.set || sl.null:
		return nil, false
	case sl.scratch:
		return t.jsonp.scratch[sl.start:sl.end], true
	}
	return t.parsed[sl.start:sl.end], true
}

// AppendParsed adds the row of the record parsed last.
func (t *TextDecoder) AppendParsed() {
	if t.parsedCSV {
		t.appendCSVFields()
	} else {
		t.appendJSON(t.parsed)
	}
}

// AppendNull adds a row whose every column is NULL.
func (t *TextDecoder) AppendNull() {
	for c := range t.cols {
		t.cols[c].text.AppendNull()
	}
}

// appendJSON appends the values jsonp parsed from line.
func (t *TextDecoder) appendJSON(line []byte) {
	p := &t.jsonp
	for c := range t.cols {
		b := t.cols[c].text.BinaryBuilder
		sl := p.slots[c]
		switch {
		case !sl.set || sl.null:
			b.AppendNull()
		case sl.scratch:
			b.Append(p.scratch[sl.start:sl.end])
		default:
			b.Append(line[sl.start:sl.end])
		}
	}
}

// appendCSV appends the fields csvp parsed, checking their number.
func (t *TextDecoder) appendCSV() *sqlerr.Error {
	if bad := t.checkCSV(); bad != nil {
		return bad
	}
	t.appendCSVFields()
	return nil
}

// checkCSV checks the number of fields csvp parsed.
func (t *TextDecoder) checkCSV() *sqlerr.Error {
	p := &t.csvp
	nc := len(t.cols)
	switch {
	case len(p.fields) == nc:
	case nc == 0 && len(p.fields) == 1 && p.fields[0].start == p.fields[0].end && !p.fields[0].quoted:
		p.fields = p.fields[:0] // an empty line is a row without columns
	case len(p.fields) < nc:
		return sqlerr.New(codeBadCopyFormat, sqlerr.NoPos, "missing data for column %s (%d fields, want %d)",
			strconv.Quote(t.cols[len(p.fields)].name), len(p.fields), nc)
	default:
		return sqlerr.New(codeBadCopyFormat, sqlerr.NoPos, "extra data after last expected column (%d fields, want %d)",
			len(p.fields), nc)
	}
	return nil
}

func (t *TextDecoder) appendCSVFields() {
	p := &t.csvp
	for c, f := range p.fields {
		b := t.cols[c].text.BinaryBuilder
		if f.start == f.end && !f.quoted {
			b.AppendNull()
			continue
		}
		src := p.data
		if f.scratch {
			src = p.scratch
		}
		b.Append(src[f.start:f.end])
	}
}

// Batch turns the texts gathered for n rows into a batch; bads are the values that cannot be read, sorted by row
// and column, the first with its error (the others' may be nil). An error names the column.
func (t *TextDecoder) Batch(n int) (arrow.RecordBatch, []BadValue, error) {
	texts := make([]*array.String, len(t.cols))
	arrs := make([]arrow.Array, len(t.cols))
	defer func() {
		for c := range t.cols {
			if texts[c] != nil {
				texts[c].Release()
			}
			if arrs[c] != nil {
				arrs[c].Release()
			}
		}
	}()
	var bads []BadValue
	for c := range t.cols {
		texts[c] = t.cols[c].text.NewStringArray()
		t.cols[c].textSize = len(texts[c].ValueBytes())
		if texts[c].Len() != n {
			return nil, nil, fmt.Errorf("column %s: %d values for %d rows", t.cols[c].name, texts[c].Len(), n)
		}
	}
	for c := range t.cols {
		arr, err := t.convertColumn(c, texts[c], &bads)
		if err != nil {
			return nil, nil, fmt.Errorf("column %s: %w", t.cols[c].name, err)
		}
		arrs[c] = arr
	}
	if len(bads) > 0 {
		slices.SortFunc(bads, func(a, b BadValue) int {
			if a.Row != b.Row {
				return a.Row - b.Row
			}
			return a.Col - b.Col
		})
		if bads[0].Err == nil {
			bads[0].Err = t.castError(bads[0].Col, texts[bads[0].Col], bads[0].Row)
		}
	}
	return array.NewRecordBatch(t.schema, arrs, int64(n)), bads, nil
}

// BadMessage is a bad value's message naming its column.
func (t *TextDecoder) BadMessage(b BadValue) string {
	if b.Col < 0 {
		return b.Err.Msg
	}
	return fmt.Sprintf("column %s: %s", strconv.Quote(t.cols[b.Col].name), b.Err.Msg)
}

// convertColumn converts one column's texts (NULL for NULL) into its Arrow type, adding the rows whose text
// does not read to bads (their values are NULL in the result, which drops or fails them).
func (t *TextDecoder) convertColumn(c int, txt *array.String, bads *[]BadValue) (arrow.Array, error) {
	col := &t.cols[c]
	n := txt.Len()
	addBad := func(i int, e *sqlerr.Error) { *bads = append(*bads, BadValue{Row: i, Col: c, Err: e}) }
	if !col.nullable && txt.NullN() > 0 {
		for i := range n {
			if txt.IsNull(i) {
				addBad(i, sqlerr.New(codeNullNotAllow, sqlerr.NoPos, "null value in column %s violates not-null constraint", strconv.Quote(col.name)))
			}
		}
	}
	switch col.conv {
	case fcString:
		if !utf8.Valid(txt.ValueBytes()) {
			for i := range n {
				if txt.IsValid(i) && !utf8.ValidString(txt.Value(i)) {
					addBad(i, sqlerr.New(codeBadEncoding, sqlerr.NoPos, "invalid byte sequence for encoding \"UTF8\""))
				}
			}
		}
		txt.Retain()
		return txt, nil
	case fcCast:
		rec := array.NewRecordBatch(fsTextSchema, []arrow.Array{txt}, int64(n))
		out, err := col.cast.Eval(t.ectx, rec)
		rec.Release()
		if err != nil {
			return nil, err
		}
		if out.NullN() != txt.NullN() {
			for i := range n {
				if txt.IsValid(i) && out.IsNull(i) {
					addBad(i, nil) // the error is made again when it is needed
				}
			}
		}
		return out, nil
	case fcTimestamp:
		b := array.NewTimestampBuilder(t.alloc, col.typ.(*arrow.TimestampType))
		return fsParseColumn(b, txt, addBad, func(s string) (arrow.Timestamp, error) {
			v, err := col.parseScaled(s, expr.ParseTimestamp, codeDatetimeRange, "timestamp")
			return arrow.Timestamp(v), err
		}), nil
	case fcDate:
		return fsParseColumn(array.NewDate32Builder(t.alloc), txt, addBad, func(s string) (arrow.Date32, error) {
			d, err := expr.ParseDate(s)
			return arrow.Date32(d), err
		}), nil
	case fcInterval:
		b := array.NewDurationBuilder(t.alloc, col.typ.(*arrow.DurationType))
		return fsParseColumn(b, txt, addBad, func(s string) (arrow.Duration, error) {
			v, err := col.parseScaled(s, expr.ParseInterval, sqlerr.NumericOutOfRange, "interval")
			return arrow.Duration(v), err
		}), nil
	}
	return nil, errors.New("unhandled conversion")
}

// parseScaled parses a text into microseconds with parse and converts them to the column's unit; a value the unit
// cannot hold is an error of code, "<what> out of range".
func (col *fsColumn) parseScaled(t string, parse func(string) (int64, error), code, what string) (int64, error) {
	us, err := parse(t)
	v, ok := fsScale(us, col.mul, col.div)
	if err == nil && !ok {
		err = sqlerr.New(code, sqlerr.NoPos, "%s out of range: %q", what, t)
	}
	return v, err
}

// fsParseColumn builds a column by parsing each text on its own into b (which it releases): a NULL text is NULL,
// and a text parse refuses is a bad row (NULL in the result).
func fsParseColumn[T any, B interface {
	Reserve(int)
	UnsafeAppend(T)
	UnsafeAppendBoolToBitmap(bool)
	NewArray() arrow.Array
	Release()
}](b B, txt *array.String, addBad func(int, *sqlerr.Error), parse func(string) (T, error)) arrow.Array {
	defer b.Release()
	n := txt.Len()
	b.Reserve(n)
	for i := range n {
		if txt.IsNull(i) {
			b.UnsafeAppendBoolToBitmap(false)
			continue
		}
		v, err := parse(txt.Value(i))
		if err != nil {
			addBad(i, sqlerr.As(err))
			b.UnsafeAppendBoolToBitmap(false)
			continue
		}
		b.UnsafeAppend(v)
	}
	return b.NewArray()
}

// castError evaluates the CAST of row i's text again, failing, to get its error.
func (t *TextDecoder) castError(c int, txt *array.String, i int) *sqlerr.Error {
	one := array.NewSlice(txt, int64(i), int64(i+1))
	defer one.Release()
	rec := array.NewRecordBatch(fsTextSchema, []arrow.Array{one}, 1)
	defer rec.Release()
	out, err := t.cols[c].cast.Eval(t.failCtx, rec)
	if err == nil {
		out.Release()
		return sqlerr.New(sqlerr.InvalidTextRep, sqlerr.NoPos, "invalid input for type %s: %q", expr.TypeName(t.cols[c].typ), txt.Value(i))
	}
	return sqlerr.As(err)
}
