package file

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
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
	ints      []int64 // plainInt64s's values, kept from batch to batch
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
		col.text.reset()
		t.cols = append(t.cols, col)
	}
	t.ectx = &expr.Context{Alloc: alloc, Mode: expr.ErrorsNull, BadValues: &t.castBad}
	t.failCtx = &expr.Context{Alloc: alloc, Mode: expr.ErrorsFail}
	t.jsonp.init(schema)
	return nil
}

// Release frees the texts gathered.
func (t *TextDecoder) Release() { t.cols = nil }

// ColumnName is the name of column c.
func (t *TextDecoder) ColumnName(c int) string { return t.cols[c].name }

// Reserve makes room for rows rows (the texts' room is kept from batch to batch).
func (t *TextDecoder) Reserve(rows int) {
	for i := range t.cols {
		x := &t.cols[i].text
		x.offs = slices.Grow(x.offs, rows)
		x.valid = slices.Grow(x.valid, rows)
	}
}

// Discard drops the rows gathered since the last Batch.
func (t *TextDecoder) Discard() {
	for i := range t.cols {
		t.cols[i].text.reset()
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
		t.cols[c].text.appendNull()
	}
}

// appendJSON appends the values jsonp parsed from line.
func (t *TextDecoder) appendJSON(line []byte) {
	p := &t.jsonp
	for c := range t.cols {
		b := &t.cols[c].text
		sl := p.slots[c]
		switch {
		case !sl.set || sl.null:
			b.appendNull()
		case sl.scratch:
			b.append(p.scratch[sl.start:sl.end])
		default:
			b.append(line[sl.start:sl.end])
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
		b := &t.cols[c].text
		if f.start == f.end && !f.quoted {
			b.appendNull()
			continue
		}
		src := p.data
		if f.scratch {
			src = p.scratch
		}
		b.append(src[f.start:f.end])
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
	defer func() {
		for c := range t.cols {
			t.cols[c].text.reset()
		}
	}()
	for c := range t.cols {
		col := &t.cols[c]
		if rows := len(col.text.valid); rows != n {
			return nil, nil, fmt.Errorf("column %s: %d values for %d rows", col.name, rows, n)
		}
		// A VARCHAR column's texts are the batch's column: copied out; the others' are read in place.
		texts[c] = col.text.array(t.alloc, col.conv == fcString || col.typ.ID() == arrow.BINARY)
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

// textColumn is one column's texts, kept from batch to batch: value i is data[offs[i]:offs[i+1]], NULL where not
// valid[i].
type textColumn struct {
	offs  []int32
	data  []byte
	valid []bool
	nulls int
}

func (x *textColumn) reset() {
	x.offs, x.data, x.valid, x.nulls = append(x.offs[:0], 0), x.data[:0], x.valid[:0], 0
}

func (x *textColumn) append(v []byte) {
	x.data = append(x.data, v...)
	x.offs = append(x.offs, int32(len(x.data)))
	x.valid = append(x.valid, true)
}

func (x *textColumn) appendNull() {
	x.offs = append(x.offs, int32(len(x.data)))
	x.valid = append(x.valid, false)
	x.nulls++
}

// array is the texts as a VARCHAR array: in memory of alloc when copied, else over the texts themselves (valid
// until the next reset).
func (x *textColumn) array(alloc memory.Allocator, copied bool) *array.String {
	n := len(x.valid)
	buf := func(b []byte) *memory.Buffer {
		if !copied {
			return memory.NewBufferBytes(b)
		}
		m := memory.NewResizableBuffer(alloc)
		m.Resize(len(b))
		copy(m.Bytes(), b)
		return m
	}
	var bitmap *memory.Buffer
	if x.nulls > 0 {
		bits := make([]byte, bitutil.BytesForBits(int64(n)))
		for i, v := range x.valid {
			if v {
				bitutil.SetBit(bits, i)
			}
		}
		bitmap = buf(bits)
	}
	offs, data := buf(arrow.Int32Traits.CastToBytes(x.offs)), buf(x.data)
	d := array.NewData(arrow.BinaryTypes.String, n, []*memory.Buffer{bitmap, offs, data}, nil, x.nulls, 0)
	for _, b := range []*memory.Buffer{bitmap, offs, data} {
		if b != nil {
			b.Release()
		}
	}
	defer d.Release()
	return array.NewStringData(d)
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
		if col.typ.ID() == arrow.INT64 {
			if arr := t.plainInt64s(txt); arr != nil {
				return arr, nil
			}
		}
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
			v, err := col.parseScaled(s, parseTimestamp, codeDatetimeRange, "timestamp")
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

// plainInt64s converts a BIGINT column whose texts are all plain decimal integers (an optional '-' and 1 to 18
// digits, which cannot overflow) without the CAST, to the same values; nil when any text has another form
// (spaces, '+', more digits, anything the CAST reads or refuses), and the CAST then reads the column as always.
func (t *TextDecoder) plainInt64s(txt *array.String) arrow.Array {
	n := txt.Len()
	vals := slices.Grow(t.ints[:0], n)[:n]
	t.ints = vals
	for i := range n {
		if txt.IsNull(i) {
			vals[i] = 0
			continue
		}
		s := txt.Value(i)
		neg := len(s) > 0 && s[0] == '-'
		if neg {
			s = s[1:]
		}
		if len(s) == 0 || len(s) > 18 {
			return nil
		}
		var v int64
		for j := 0; j < len(s); j++ {
			c := s[j] - '0'
			if c > 9 {
				return nil
			}
			v = v*10 + int64(c)
		}
		if neg {
			v = -v
		}
		vals[i] = v
	}
	b := array.NewInt64Builder(t.alloc)
	defer b.Release()
	var valid []bool
	if txt.NullN() > 0 {
		valid = make([]bool, n)
		for i := range n {
			valid[i] = txt.IsValid(i)
		}
	}
	b.AppendValues(vals, valid)
	return b.NewArray()
}

// parseTimestamp is expr.ParseTimestamp, with a shortcut for the form the sinks write: 'YYYY-MM-DD HH:MM:SS'
// with up to six digits of fraction, a four-digit year and a day of at most 28 (any other text, or value, goes
// to expr.ParseTimestamp).
func parseTimestamp(s string) (int64, error) {
	if us, ok := plainTimestamp(s); ok {
		return us, nil
	}
	return expr.ParseTimestamp(s)
}

func plainTimestamp(s string) (int64, bool) {
	if len(s) < 19 || len(s) > 26 || s[4] != '-' || s[7] != '-' || s[10] != ' ' || s[13] != ':' || s[16] != ':' ||
		len(s) > 19 && (s[19] != '.' || len(s) == 20) {
		return 0, false
	}
	num := func(t string) int64 {
		var v int64
		for i := 0; i < len(t); i++ {
			c := t[i] - '0'
			if c > 9 {
				return -1
			}
			v = v*10 + int64(c)
		}
		return v
	}
	y, mo, d, h, mi, sec := num(s[0:4]), num(s[5:7]), num(s[8:10]), num(s[11:13]), num(s[14:16]), num(s[17:19])
	if y < 1000 || mo < 1 || mo > 12 || d < 1 || d > 28 || h < 0 || h > 23 || mi < 0 || mi > 59 || sec < 0 || sec > 59 {
		return 0, false
	}
	var frac int64
	if len(s) > 20 {
		if frac = num(s[20:]); frac < 0 {
			return 0, false
		}
		for range 26 - len(s) {
			frac *= 10
		}
	}
	return (expr.DaysFromCivil(y, int(mo), int(d))*86400+h*3600+mi*60+sec)*1_000_000 + frac, true
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
