package parquet

import (
	"encoding/binary"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/klauspost/compress/s2"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/format"

	"github.com/clinksql/clinksql/connectors"
	"github.com/clinksql/clinksql/connectors/txnfile"
	"github.com/clinksql/clinksql/exec"
)

// SinkConfig configures a Parquet sink.
type SinkConfig struct {
	// Path is the directory committed files appear in; staging lives in Path/_staging/<job>/.
	Path   string
	Schema *arrow.Schema
	// Compression is "snappy" (the default), "zstd", "gzip", "lz4" or "none".
	Compression string
	// RowGroupRows is the rows of a row group; 0 means DefaultRowGroupRows. The last row group of a transaction
	// holds the rest.
	RowGroupRows int64
	// Guard confines the directories and files the sink creates, each checked when it is created.
	Guard connectors.PathGuard
	// Partition, when it has keys, makes a partitioned sink (PARTITIONED BY): rows go into Hive-style directories,
	// files without the partition columns, as Flink and Hive write them (txnfile.PartitionedSink).
	Partition txnfile.PartitionConfig
}

// DefaultRowGroupRows bounds the rows of a Parquet row group: large enough for efficient scans, small enough that
// the encoded pages the writer holds until the group closes stay in the tens of megabytes.
const DefaultRowGroupRows = 1 << 20

// NewSink returns a two-phase-commit sink whose every transaction is one complete Parquet file,
// <job>-<op>-<subtask>-<checkpoint>.parquet: footer written and fsync'd before it is staged, visible in Path only
// once the checkpoint completed, so any Parquet reader can read every committed file. Configuration errors
// surface at Open.
func NewSink(cfg SinkConfig) exec.Sink {
	if len(cfg.Partition.Keys) > 0 {
		s := txnfile.NewPartitioned("parquet", cfg.Path, cfg.Schema, cfg.Partition,
			func() txnfile.Encoder { return &parquetEncoder{cfg: cfg} })
		s.Guard = cfg.Guard
		return s
	}
	s := txnfile.New("parquet", cfg.Path, cfg.Schema, &parquetEncoder{cfg: cfg})
	s.Guard = cfg.Guard
	return s
}

// pqKind is how an Arrow column is turned into parquet values.
type pqKind uint8

const (
	pqBool pqKind = iota
	pqInt8
	pqInt16
	pqInt32
	pqInt64
	pqUint8
	pqUint16
	pqUint32
	pqUint64
	pqFloat32
	pqFloat64
	pqString
	pqBinary
	pqDate32
	pqTimestamp
	pqTimestampSeconds // stored as milliseconds: Parquet has no second unit
	pqDecimalInt32
	pqDecimalInt64
	pqDecimalFixed
)

type pqColumn struct {
	kind     pqKind
	optional bool
	fixedLen int // pqDecimalFixed: bytes per value
}

// pqChunk is how many values of one column are converted and handed to the column writer at a time: it bounds
// the scratch slices, and the writer can only cut pages between such calls.
const pqChunk = 4096

type parquetEncoder struct {
	cfg     SinkConfig
	schema  *parquet.Schema
	opts    []parquet.WriterOption
	cols    []pqColumn
	nested  []*pqNested // per column: its tree when nested (nested.go), else nil
	leafOf  []int       // per column: its first Parquet leaf column
	leaves  int         // the Parquet leaf columns
	w       *parquet.Writer
	writers []*parquet.ColumnWriter
	// groupRows counts the rows of the open row group.
	groupRows int64
	vals      []parquet.Value
	fixed     []byte // big-endian decimal bytes the FIXED_LEN_BYTE_ARRAY values point into
}

func (e *parquetEncoder) Ext() string { return "parquet" }

func (e *parquetEncoder) Init(schema *arrow.Schema) error {
	codec, err := parquetCodec(e.cfg.Compression)
	if err != nil {
		return err
	}
	if e.cfg.RowGroupRows <= 0 {
		e.cfg.RowGroupRows = DefaultRowGroupRows
	}
	group := parquet.Group{}
	order := make([]string, 0, schema.NumFields())
	e.cols, e.nested, e.leafOf, e.leaves = e.cols[:0], e.nested[:0], e.leafOf[:0], 0
	var leafNames []string // per leaf, its column's name
	for _, f := range schema.Fields() {
		if _, dup := group[f.Name]; dup {
			return fmt.Errorf("duplicate column name %q", f.Name)
		}
		first := e.leaves
		var node parquet.Node
		var col pqColumn
		var tree *pqNested
		var err error
		switch f.Type.ID() {
		case arrow.STRUCT, arrow.LIST, arrow.MAP:
			node, tree, err = nestedNode(f.Type, f.Nullable, &e.leaves, 0)
		default:
			node, col, err = parquetNode(f.Type)
			if f.Nullable {
				node, col.optional = parquet.Optional(node), true
			} else {
				node = parquet.Required(node)
			}
			e.leaves++
		}
		if err != nil {
			return fmt.Errorf("column %s: %w", f.Name, err)
		}
		group[f.Name] = node
		order = append(order, f.Name)
		e.cols, e.nested, e.leafOf = append(e.cols, col), append(e.nested, tree), append(e.leafOf, first)
		for range e.leaves - first {
			leafNames = append(leafNames, f.Name)
		}
	}
	e.schema = parquet.NewSchema("schema", newOrderedGroup(group, order))
	paths := e.schema.Columns()
	if len(paths) != e.leaves {
		return fmt.Errorf("parquet schema has %d columns, want %d", len(paths), e.leaves)
	}
	for i, path := range paths {
		if path[0] != leafNames[i] || (len(path) != 1 && e.nested[slices.Index(order, path[0])] == nil) {
			return fmt.Errorf("parquet column %d is %v, want one of %s", i, path, leafNames[i])
		}
	}
	e.opts = []parquet.WriterOption{e.schema, parquet.Compression(codec), parquet.CreatedBy("clinksql", "", "")}
	return nil
}

func parquetCodec(name string) (compress.Codec, error) {
	switch strings.ToLower(name) {
	case "", "snappy":
		return fastSnappy{}, nil
	case "zstd":
		return &parquet.Zstd, nil
	case "gzip":
		return &parquet.Gzip, nil
	case "lz4":
		return &parquet.Lz4Raw, nil
	case "none", "uncompressed":
		return &parquet.Uncompressed, nil
	}
	return nil, fmt.Errorf("unknown parquet compression %q (snappy, zstd, gzip, lz4 or none)", name)
}

// fastSnappy is the SNAPPY codec with s2's fast Snappy-compatible block encoder. parquet-go's codec uses the
// "better" encoder, which costs the sink about a third of its throughput for a few percent of file size. The
// output is plain Snappy blocks: every reader decodes it.
type fastSnappy struct{}

func (fastSnappy) String() string                            { return "SNAPPY" }
func (fastSnappy) CompressionCodec() format.CompressionCodec { return format.Snappy }
func (fastSnappy) Encode(dst, src []byte) ([]byte, error) {
	return s2.EncodeSnappy(dst[:cap(dst)], src), nil
}
func (fastSnappy) Decode(dst, src []byte) ([]byte, error) { return parquet.Snappy.Decode(dst, src) }

// parquetNode maps an Arrow type to a Parquet leaf with its logical type. Timestamps are not adjusted to UTC:
// a SQL TIMESTAMP has no time zone. A zoned Arrow timestamp is an instant and is marked adjusted.
func parquetNode(t arrow.DataType) (parquet.Node, pqColumn, error) {
	switch t.ID() {
	case arrow.BOOL:
		return parquet.Leaf(parquet.BooleanType), pqColumn{kind: pqBool}, nil
	case arrow.INT8:
		return parquet.Int(8), pqColumn{kind: pqInt8}, nil
	case arrow.INT16:
		return parquet.Int(16), pqColumn{kind: pqInt16}, nil
	case arrow.INT32:
		return parquet.Int(32), pqColumn{kind: pqInt32}, nil
	case arrow.INT64:
		return parquet.Int(64), pqColumn{kind: pqInt64}, nil
	case arrow.UINT8:
		return parquet.Uint(8), pqColumn{kind: pqUint8}, nil
	case arrow.UINT16:
		return parquet.Uint(16), pqColumn{kind: pqUint16}, nil
	case arrow.UINT32:
		return parquet.Uint(32), pqColumn{kind: pqUint32}, nil
	case arrow.UINT64:
		return parquet.Uint(64), pqColumn{kind: pqUint64}, nil
	case arrow.FLOAT32:
		return parquet.Leaf(parquet.FloatType), pqColumn{kind: pqFloat32}, nil
	case arrow.FLOAT64:
		return parquet.Leaf(parquet.DoubleType), pqColumn{kind: pqFloat64}, nil
	case arrow.STRING:
		return parquet.String(), pqColumn{kind: pqString}, nil
	case arrow.BINARY:
		return parquet.Leaf(parquet.ByteArrayType), pqColumn{kind: pqBinary}, nil
	case arrow.DATE32:
		return parquet.Date(), pqColumn{kind: pqDate32}, nil
	case arrow.TIMESTAMP:
		tt := t.(*arrow.TimestampType)
		adjusted := tt.TimeZone != ""
		switch tt.Unit {
		case arrow.Second:
			return parquet.TimestampAdjusted(parquet.Millisecond, adjusted), pqColumn{kind: pqTimestampSeconds}, nil
		case arrow.Millisecond:
			return parquet.TimestampAdjusted(parquet.Millisecond, adjusted), pqColumn{kind: pqTimestamp}, nil
		case arrow.Microsecond:
			return parquet.TimestampAdjusted(parquet.Microsecond, adjusted), pqColumn{kind: pqTimestamp}, nil
		case arrow.Nanosecond:
			return parquet.TimestampAdjusted(parquet.Nanosecond, adjusted), pqColumn{kind: pqTimestamp}, nil
		}
	case arrow.DECIMAL128:
		dt := t.(*arrow.Decimal128Type)
		p, s := int(dt.Precision), int(dt.Scale)
		if s < 0 || s > p {
			return nil, pqColumn{}, fmt.Errorf("decimal(%d,%d) has no Parquet form", p, s)
		}
		// The Parquet spec's preferred physical types by precision (INT32 up to 9 digits, INT64 up to 18), then
		// the shortest FIXED_LEN_BYTE_ARRAY that holds the precision.
		switch {
		case p <= 9:
			return parquet.Decimal(s, p, parquet.Int32Type), pqColumn{kind: pqDecimalInt32}, nil
		case p <= 18:
			return parquet.Decimal(s, p, parquet.Int64Type), pqColumn{kind: pqDecimalInt64}, nil
		}
		n := decimalBytes(p)
		return parquet.Decimal(s, p, parquet.FixedLenByteArrayType(n)), pqColumn{kind: pqDecimalFixed, fixedLen: n}, nil
	}
	return nil, pqColumn{}, fmt.Errorf("type %s has no Parquet mapping", t)
}

// decimalBytes is the fewest bytes of two's complement that hold every value of the given decimal precision.
func decimalBytes(precision int) int {
	// 10^p <= 2^(8n-1)-1  <=>  8n-1 >= p*log2(10); log2(10) < 3.3219281.
	bits := int(float64(precision)*3.3219280948873623) + 2
	return (bits + 7) / 8
}

func (e *parquetEncoder) Begin(w io.Writer) error {
	// A fresh writer per file: a transaction that failed half-way leaves nothing behind for the next one.
	e.w = parquet.NewWriter(w, e.opts...)
	e.writers = e.w.ColumnWriters()
	if len(e.writers) != e.leaves {
		return fmt.Errorf("parquet writer has %d columns, schema %d", len(e.writers), e.leaves)
	}
	e.groupRows = 0
	return nil
}

func (e *parquetEncoder) Write(rec arrow.RecordBatch, _ []exec.RowKind) error {
	n := int(rec.NumRows())
	for off, end := 0, 0; off < n; off = end {
		// Cut row groups at exactly RowGroupRows.
		end = min(off+pqChunk, n, off+int(e.cfg.RowGroupRows-e.groupRows))
		for c := range e.cols {
			if e.nested[c] != nil {
				if err := e.writeNested(e.nested[c], rec.Column(c), off, end); err != nil {
					return fmt.Errorf("column %s: %w", rec.ColumnName(c), err)
				}
				continue
			}
			leaf := e.leafOf[c]
			vals, err := e.values(c, leaf, rec.Column(c), off, end)
			if err != nil {
				return fmt.Errorf("column %s: %w", rec.ColumnName(c), err)
			}
			if _, err := e.writers[leaf].WriteRowValues(vals); err != nil {
				return fmt.Errorf("column %s: %w", rec.ColumnName(c), err)
			}
		}
		e.groupRows += int64(end - off)
		if e.groupRows >= e.cfg.RowGroupRows {
			if err := e.w.Flush(); err != nil {
				return err
			}
			e.groupRows = 0
		}
	}
	return nil
}

// values converts rows [off, end) of flat column c, Parquet column leaf, into parquet values, column at a time:
// one type switch per chunk, then a tight loop over the Arrow buffer. Values of byte-array columns point into the
// Arrow buffers; the column writer copies them before values returns again.
func (e *parquetEncoder) values(c, leaf int, arr arrow.Array, off, end int) ([]parquet.Value, error) {
	col := e.cols[c]
	vals := e.vals[:0]
	if cap(vals) < end-off {
		vals = make([]parquet.Value, 0, pqChunk)
	}
	vals = vals[:end-off]
	e.vals = vals
	hasNulls := arr.NullN() > 0
	if hasNulls && !col.optional {
		return nil, fmt.Errorf("NULL in a NOT NULL column")
	}
	def := 0
	if col.optional {
		def = 1
	}
	switch col.kind {
	case pqBool:
		a := arr.(*array.Boolean)
		for i := off; i < end; i++ {
			vals[i-off] = parquet.BooleanValue(a.Value(i))
		}
	case pqInt8:
		v := arr.(*array.Int8).Int8Values()
		for i := off; i < end; i++ {
			vals[i-off] = parquet.Int32Value(int32(v[i]))
		}
	case pqInt16:
		v := arr.(*array.Int16).Int16Values()
		for i := off; i < end; i++ {
			vals[i-off] = parquet.Int32Value(int32(v[i]))
		}
	case pqInt32:
		v := arr.(*array.Int32).Int32Values()
		for i := off; i < end; i++ {
			vals[i-off] = parquet.Int32Value(v[i])
		}
	case pqDate32:
		v := arr.(*array.Date32).Date32Values()
		for i := off; i < end; i++ {
			vals[i-off] = parquet.Int32Value(int32(v[i]))
		}
	case pqDecimalInt32:
		v := arr.(*array.Decimal128).Values()
		for i := off; i < end; i++ {
			vals[i-off] = parquet.Int32Value(int32(v[i].LowBits()))
		}
	case pqInt64:
		v := arr.(*array.Int64).Int64Values()
		for i := off; i < end; i++ {
			vals[i-off] = parquet.Int64Value(v[i])
		}
	case pqDecimalInt64:
		v := arr.(*array.Decimal128).Values()
		for i := off; i < end; i++ {
			vals[i-off] = parquet.Int64Value(int64(v[i].LowBits()))
		}
	case pqTimestamp:
		v := arr.(*array.Timestamp).TimestampValues()
		for i := off; i < end; i++ {
			vals[i-off] = parquet.Int64Value(int64(v[i]))
		}
	case pqTimestampSeconds:
		v := arr.(*array.Timestamp).TimestampValues()
		for i := off; i < end; i++ {
			vals[i-off] = parquet.Int64Value(int64(v[i]) * 1000)
		}
	case pqUint8:
		v := arr.(*array.Uint8).Uint8Values()
		for i := off; i < end; i++ {
			vals[i-off] = parquet.Int32Value(int32(v[i]))
		}
	case pqUint16:
		v := arr.(*array.Uint16).Uint16Values()
		for i := off; i < end; i++ {
			vals[i-off] = parquet.Int32Value(int32(v[i]))
		}
	case pqUint32:
		v := arr.(*array.Uint32).Uint32Values()
		for i := off; i < end; i++ {
			vals[i-off] = parquet.Int32Value(int32(v[i])) // UINT_32 is stored in INT32's bits
		}
	case pqUint64:
		v := arr.(*array.Uint64).Uint64Values()
		for i := off; i < end; i++ {
			vals[i-off] = parquet.Int64Value(int64(v[i]))
		}
	case pqFloat32:
		v := arr.(*array.Float32).Float32Values()
		for i := off; i < end; i++ {
			vals[i-off] = parquet.FloatValue(v[i])
		}
	case pqFloat64:
		v := arr.(*array.Float64).Float64Values()
		for i := off; i < end; i++ {
			vals[i-off] = parquet.DoubleValue(v[i])
		}
	case pqString:
		a := arr.(*array.String)
		offs, data := a.ValueOffsets(), a.ValueBytes()
		base := offs[0] // ValueBytes starts at the array's first value
		for i := off; i < end; i++ {
			vals[i-off] = parquet.ByteArrayValue(data[offs[i]-base : offs[i+1]-base])
		}
	case pqBinary:
		a := arr.(*array.Binary)
		for i := off; i < end; i++ {
			vals[i-off] = parquet.ByteArrayValue(a.Value(i))
		}
	case pqDecimalFixed:
		v := arr.(*array.Decimal128).Values()
		n := col.fixedLen
		if cap(e.fixed) < pqChunk*16 {
			e.fixed = make([]byte, pqChunk*16)
		}
		var be [16]byte
		for i := off; i < end; i++ {
			binary.BigEndian.PutUint64(be[:8], uint64(v[i].HighBits()))
			binary.BigEndian.PutUint64(be[8:], v[i].LowBits())
			dst := e.fixed[(i-off)*n : (i-off+1)*n]
			copy(dst, be[16-n:])
			vals[i-off] = parquet.FixedLenByteArrayValue(dst)
		}
	default:
		return nil, fmt.Errorf("unhandled parquet column kind %d", col.kind)
	}
	// Levels in a second pass: the setters inline, where Value.Level does not, and the value loops above stay
	// free of them. The loops read whatever the buffer holds under a null slot; those values are replaced.
	for i := range vals {
		vals[i].SetDefinitionLevel(def)
		vals[i].SetColumnIndex(leaf)
	}
	if hasNulls {
		for i := off; i < end; i++ {
			if arr.IsNull(i) {
				vals[i-off] = parquet.NullValue().Level(0, 0, leaf)
			}
		}
	}
	return vals, nil
}

func (e *parquetEncoder) Finish() error {
	err := e.w.Close() // flushes the last row group and writes the footer
	e.w, e.writers = nil, nil
	return err
}

func (e *parquetEncoder) Abandon() {
	e.w, e.writers = nil, nil
	clear(e.vals[:cap(e.vals)]) // drop pointers into released Arrow buffers
}

// orderedGroup is a parquet.Group whose columns keep the Arrow schema's order; parquet.Group sorts them by name.
type orderedGroup struct {
	parquet.Group
	fields []parquet.Field
}

func newOrderedGroup(g parquet.Group, order []string) orderedGroup {
	byName := map[string]parquet.Field{}
	for _, f := range g.Fields() {
		byName[f.Name()] = f
	}
	og := orderedGroup{Group: g}
	for _, name := range order {
		og.fields = append(og.fields, byName[name])
	}
	return og
}

func (g orderedGroup) Fields() []parquet.Field { return g.fields }

// SinkConfigFromOptions reads the WITH options of a Parquet sink; path is the 'path' option, already
// resolved by the engine.
//
//	'parquet.compression'  'snappy' (default), 'zstd', 'gzip', 'lz4' or 'none' (also 'uncompressed')
//
// and the partition options of a partitioned sink (txnfile.PartitionConfigFromOptions, which the caller reads).
// 'connector', 'path', 'type' and 'primary_key' are the planner's; any other key is an error.
func SinkConfigFromOptions(schema *arrow.Schema, path string, opts map[string]string) (SinkConfig, error) {
	cfg := SinkConfig{Path: path, Schema: schema}
	for key, val := range connectors.SortedOptions(opts) {
		if slices.Contains(txnfile.PartitionOptionNames, strings.ToLower(key)) {
			continue
		}
		switch strings.ToLower(key) {
		case "connector", "path", "type", "primary_key":
		case "parquet.compression":
			cfg.Compression = strings.ToLower(val)
		default:
			return cfg, connectors.OptionError(key, "unknown option '%s' for connector 'parquet'", key)
		}
	}
	return cfg, nil
}
