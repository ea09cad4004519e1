package datagen

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/bits"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clinksql/clinksql/connectors"
	"github.com/clinksql/clinksql/connectors/internal/gen"
	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/expr"
)

// Kind is how a generator column makes its values.
type Kind uint8

const (
	// Random draws each value uniformly from a range (Flink datagen's 'random').
	Random Kind = iota
	// Sequence counts: row r holds Start + r*Step, and the source ends after End (Flink's 'sequence').
	Sequence
)

func (k Kind) String() string {
	if k == Sequence {
		return "sequence"
	}
	return "random"
}

// Field describes one generated column. Integer-like values are in the column's own units: integers as they
// are, DECIMAL unscaled (123 at scale 2 is 1.23), DATE in days since 1970-01-01, TIMESTAMP in the column's unit.
type Field struct {
	Kind Kind
	// Sequence: Start, Start+Step, ... up to End inclusive (End >= Start). Step 0 means 1. A string column holds
	// the decimal digits of the number. Use math.MaxInt64 as End for a sequence without end.
	Start, End, Step int64
	// Random integer-like values are uniform in [Min, Max]; Min == Max == 0 means a default range: the whole
	// type for integers, +-(10^precision - 1) (at most 18 digits) for DECIMAL, 1970-01-01 up to 2038-01-19 for
	// DATE and TIMESTAMP.
	Min, Max int64
	// Random REAL/DOUBLE values are uniform in [MinF, MaxF); both 0 means [0, 1).
	MinF, MaxF float64
	// Length of random strings (alphanumeric) and binaries; 0 means 100, as in Flink.
	Length int
	// NullRate is the fraction of NULLs in a nullable column, 0 to 1.
	NullRate float64
}

// Config configures a deterministic generator source.
type Config struct {
	Schema *arrow.Schema
	// Fields describes Schema's columns, index for index.
	Fields []Field
	Seed   int64
	// Rows is the number of rows over all subtasks; 0 means unbounded, unless a sequence column ends first.
	Rows int64
	// BatchRows is the rows per batch; 0 means 1024.
	BatchRows int
	// RowsPerSecond throttles each subtask to about this rate; 0 means as fast as possible.
	RowsPerSecond float64
	// EventTime names the event-time column (a TIMESTAMP, or a BIGINT of microseconds); "" for none.
	EventTime string
	// WatermarkBound is how far the watermark trails the largest event time seen (WATERMARK FOR ts AS
	// ts - bound).
	WatermarkBound time.Duration
}

// DefaultBatchRows is the generator's batch size when none is configured.
const DefaultBatchRows = 1024

// New returns a deterministic source. Every value is a pure function of (seed, column name, global row
// number): a counter-based hash (splitmix64's finalizer over seed, column and row), never a stateful random
// stream, so a replay from a restored offset reproduces exactly the same rows, and a column's values do not change
// when other columns are added.
//
// Subtask k of p produces the global rows k, k+p, k+2p, ... in that order: sequence columns stay globally unique
// and the subtasks together cover the range, whatever the batch sizes. The offset is the subtask's next row and its
// largest event time; it restores at the same parallelism only. Configuration errors surface at Open.
func New(cfg Config) exec.Source {
	return &generator{cfg: cfg}
}

var _ exec.SourceProgress = (*generator)(nil)

type generator struct {
	cfg Config

	alloc    memory.Allocator
	sub, par uint64
	keys     []uint64 // per column: the hash key of its values
	nullKeys []uint64 // per column: the hash key of its NULL decisions
	cols     []genColumn
	// next is the subtask's next local row index: its global row is sub + next*par.
	next      uint64
	localRows uint64 // rows this subtask produces in all; math.MaxUint64 when unbounded
	// progressRows is localRows when the stream is bounded ('number-of-rows'), else math.MaxUint64: a sequence
	// without an end given runs to its type's largest value, rows no one waits for, so the progress says unknown
	// rather than a lag of 10^18 rows.
	progressRows uint64
	batchRows    int

	eventCol      int
	eventToMicros func(int64) int64
	maxEvent      int64
	hasEvent      bool
	boundMicros   int64

	restored *genOffset

	gen.Throttle

	bld     *array.RecordBuilder
	raw     []int64
	nulls   []bool
	scratch []byte

	connectors.ReadProgress // bounded: rows left and the subtask's rows in all
}

type genColumn struct {
	field    Field
	typ      arrow.DataType
	nullable bool
	step     int64
}

// The generator's hash is splitmix64 (package gen): every value is a pure function of a column key and a row.
const (
	gamma  = gen.Gamma
	gamma2 = gen.Gamma2
)

func (g *generator) RestoreOffset(offset []byte) error {
	o, err := decodeGenOffset(offset)
	if err != nil {
		return err
	}
	g.restored = &o
	return nil
}

func (g *generator) Open(ctx *exec.TaskContext) error {
	cfg := &g.cfg
	if cfg.Schema == nil || len(cfg.Fields) != cfg.Schema.NumFields() {
		return fmt.Errorf("datagen: %d field descriptions for %d columns", len(cfg.Fields), schemaLen(cfg.Schema))
	}
	if ctx.Parallelism < 1 || ctx.Subtask < 0 || ctx.Subtask >= ctx.Parallelism {
		return fmt.Errorf("datagen: subtask %d of %d", ctx.Subtask, ctx.Parallelism)
	}
	if cfg.Rows < 0 || cfg.RowsPerSecond < 0 || cfg.BatchRows < 0 || cfg.WatermarkBound < 0 {
		return errors.New("datagen: negative rows, rate, batch size or watermark bound")
	}
	g.alloc = ctx.Alloc
	if g.alloc == nil {
		g.alloc = memory.DefaultAllocator
	}
	g.sub, g.par = uint64(ctx.Subtask), uint64(ctx.Parallelism)
	g.batchRows = cfg.BatchRows
	if g.batchRows == 0 {
		g.batchRows = DefaultBatchRows
	}

	total := uint64(math.MaxUint64) // global rows
	if cfg.Rows > 0 {
		total = uint64(cfg.Rows)
	}
	g.cols = g.cols[:0]
	g.keys, g.nullKeys = g.keys[:0], g.nullKeys[:0]
	g.eventCol = -1
	for i, f := range cfg.Schema.Fields() {
		gf := cfg.Fields[i]
		col := genColumn{field: gf, typ: f.Type, nullable: f.Nullable, step: gf.Step}
		if col.step == 0 {
			col.step = 1
		}
		if err := checkGenField(f, &col); err != nil {
			return fmt.Errorf("datagen: column %s: %w", f.Name, err)
		}
		if gf.Kind == Sequence {
			// Rows in the sequence: (End-Start)/Step + 1, computed without overflow.
			n := (uint64(gf.End)-uint64(gf.Start))/uint64(col.step) + 1
			if n != 0 && n < total { // n == 0 only when the count wrapped: the sequence is all of uint64
				total = n
			}
		}
		h := fnv.New64a()
		h.Write([]byte(f.Name))
		key := gen.Mix64(uint64(cfg.Seed) ^ gen.Mix64(h.Sum64()))
		g.keys = append(g.keys, key)
		g.nullKeys = append(g.nullKeys, gen.Mix64(key^0x6e756c6c6e756c6c))
		g.cols = append(g.cols, col)
		if f.Name == cfg.EventTime {
			g.eventCol = i
			switch t := f.Type.(type) {
			case *arrow.TimestampType:
				g.eventToMicros = expr.TimeUnitToMicros(t.Unit)
			case *arrow.Int64Type:
				g.eventToMicros = func(v int64) int64 { return v }
			default:
				return fmt.Errorf("datagen: event-time column %s is %s, want TIMESTAMP or BIGINT", f.Name, f.Type)
			}
		}
	}
	if cfg.EventTime != "" && g.eventCol < 0 {
		return fmt.Errorf("datagen: no event-time column %s", cfg.EventTime)
	}
	g.boundMicros = cfg.WatermarkBound.Microseconds()
	switch {
	case total == math.MaxUint64:
		g.localRows = math.MaxUint64
	case total <= g.sub:
		g.localRows = 0
	default:
		g.localRows = (total-g.sub-1)/g.par + 1
	}
	g.progressRows = uint64(math.MaxUint64)
	if cfg.Rows > 0 {
		g.progressRows = g.localRows
	}

	g.next, g.hasEvent, g.maxEvent = 0, false, 0
	if o := g.restored; o != nil {
		if o.sub != g.sub || o.par != g.par {
			return fmt.Errorf("datagen: offset of subtask %d of %d cannot restore subtask %d of %d (rescaling a "+
				"generator is not supported)", o.sub, o.par, g.sub, g.par)
		}
		g.next, g.hasEvent, g.maxEvent = o.next, o.hasEvent, o.maxEvent
	}
	if g.bld != nil {
		g.bld.Release()
	}
	g.bld = array.NewRecordBuilder(g.alloc, cfg.Schema)
	g.Throttle.Reset()
	gen.Report(&g.ReadProgress, g.next, g.progressRows)
	return nil
}

func schemaLen(s *arrow.Schema) int {
	if s == nil {
		return 0
	}
	return s.NumFields()
}

// checkGenField validates a column description against its type and fills in default ranges.
func checkGenField(f arrow.Field, col *genColumn) error {
	gf := &col.field
	if gf.NullRate < 0 || gf.NullRate > 1 {
		return fmt.Errorf("null rate %v is not in [0, 1]", gf.NullRate)
	}
	if gf.NullRate > 0 && !f.Nullable {
		return errors.New("null rate on a NOT NULL column")
	}
	if gf.Length < 0 {
		return fmt.Errorf("negative length %d", gf.Length)
	}
	if gf.Length == 0 {
		gf.Length = 100
	}
	lo, hi := int64(math.MinInt64), int64(math.MaxInt64) // the type's range, for integer-like types
	var defLo, defHi int64                               // the default random range
	integral := true
	switch t := f.Type.(type) {
	case *arrow.Int8Type:
		lo, hi = math.MinInt8, math.MaxInt8
	case *arrow.Int16Type:
		lo, hi = math.MinInt16, math.MaxInt16
	case *arrow.Int32Type:
		lo, hi = math.MinInt32, math.MaxInt32
	case *arrow.Int64Type:
	case *arrow.Uint8Type:
		lo, hi = 0, math.MaxUint8
	case *arrow.Uint16Type:
		lo, hi = 0, math.MaxUint16
	case *arrow.Uint32Type:
		lo, hi = 0, math.MaxUint32
	case *arrow.Uint64Type:
		lo = 0 // values above MaxInt64 are not generated
	case *arrow.Date32Type:
		lo, hi = math.MinInt32, math.MaxInt32
		defLo, defHi = 0, math.MaxInt32/86400
	case *arrow.TimestampType:
		defLo, defHi = 0, math.MaxInt32*timeUnitPerSecond(t.Unit)
	case *arrow.Decimal128Type:
		hi = 1
		for range min(int(t.Precision), 18) {
			hi *= 10
		}
		hi--
		lo = -hi
	case *arrow.StringType, *arrow.BinaryType:
		// Sequences print their numbers; random values use Length.
	case *arrow.Float32Type, *arrow.Float64Type:
		integral = false
		if gf.Kind == Random && gf.MinF == 0 && gf.MaxF == 0 {
			gf.MaxF = 1
		}
		if gf.MaxF < gf.MinF || math.IsInf(gf.MaxF-gf.MinF, 0) || math.IsNaN(gf.MaxF-gf.MinF) {
			return fmt.Errorf("random range [%v, %v) is empty or not finite", gf.MinF, gf.MaxF)
		}
	case *arrow.BooleanType:
		integral = false
		if gf.Kind == Sequence {
			return errors.New("BOOLEAN cannot be a sequence")
		}
	default:
		return fmt.Errorf("type %s cannot be generated", f.Type)
	}
	if defLo == 0 && defHi == 0 {
		defLo, defHi = lo, hi
	}
	if gf.Kind == Sequence {
		if col.step < 0 {
			return fmt.Errorf("negative step %d", col.step)
		}
		if integral && gf.End == math.MaxInt64 {
			gf.End = hi // no end given: the sequence runs to the type's largest value
		}
		if gf.End < gf.Start {
			return fmt.Errorf("sequence end %d is before its start %d", gf.End, gf.Start)
		}
		if integral && (gf.Start < lo || gf.End > hi) {
			// The last value reached is Start + k*Step <= End, so checking End bounds every value.
			return fmt.Errorf("sequence [%d, %d] does not fit %s", gf.Start, gf.End, f.Type)
		}
		return nil
	}
	if gf.Kind != Random {
		return fmt.Errorf("unknown kind %d", gf.Kind)
	}
	if integral {
		if gf.Min == 0 && gf.Max == 0 {
			gf.Min, gf.Max = defLo, defHi
		}
		if gf.Max < gf.Min || gf.Min < lo || gf.Max > hi {
			return fmt.Errorf("random range [%d, %d] is empty or does not fit %s", gf.Min, gf.Max, f.Type)
		}
	}
	return nil
}

func timeUnitPerSecond(u arrow.TimeUnit) int64 {
	switch u {
	case arrow.Second:
		return 1
	case arrow.Millisecond:
		return 1000
	case arrow.Microsecond:
		return 1_000_000
	}
	return 1_000_000_000
}

// Produce returns the next batch. Throttled, it returns batches of about a tenth of a second's rows, and Idle until
// they are due (gen.Throttle: the runtime waits on IdleWait).
func (g *generator) Produce(ctx context.Context) (exec.SourceResult, error) {
	if g.bld == nil {
		return exec.SourceResult{}, errors.New("datagen: produce before open")
	}
	if g.next >= g.localRows {
		return exec.SourceResult{Status: exec.Finished, WM: g.watermark()}, nil
	}
	n := uint64(g.batchRows)
	if rate := g.cfg.RowsPerSecond; rate > 0 {
		n = min(n, max(1, uint64(rate/10)))
		if !g.Due(rate) {
			return exec.SourceResult{Status: exec.Idle, WM: g.watermark()}, nil
		}
	}
	n = min(n, g.localRows-g.next)
	rec := g.generate(int(n))
	g.next += n
	g.Emitted(int64(n))
	gen.Report(&g.ReadProgress, g.next, g.progressRows)
	return exec.SourceResult{Status: exec.Produced, Batch: exec.Batch{Rec: rec}, WM: g.watermark()}, nil
}

func (g *generator) watermark() int64 {
	if !g.hasEvent {
		return exec.MinWatermark
	}
	wm := g.maxEvent - g.boundMicros
	if wm > g.maxEvent { // overflowed below MinInt64
		return exec.MinWatermark
	}
	return wm
}

// generate builds the batch of the subtask's next n rows, column by column.
func (g *generator) generate(n int) arrow.RecordBatch {
	if cap(g.raw) < n {
		g.raw = make([]int64, n)
		g.nulls = make([]bool, n)
	}
	raw, nulls := g.raw[:n], g.nulls[:n]
	first := g.sub + g.next*g.par // global row of the batch's first row
	for c := range g.cols {
		col := &g.cols[c]
		key := g.keys[c]
		anyNull := false
		if rate := col.field.NullRate; rate > 0 {
			nk := g.nullKeys[c]
			for j := range n {
				row := first + uint64(j)*g.par
				nulls[j] = unitFloat(gen.Mix64(nk+row*gamma)) < rate
				anyNull = anyNull || nulls[j]
			}
		}
		if !anyNull {
			clear(nulls)
		}
		b := g.bld.Field(c)
		b.Reserve(n)
		switch col.typ.ID() {
		case arrow.FLOAT32, arrow.FLOAT64:
			g.genFloats(b, col, key, first, nulls)
			continue
		case arrow.BOOL:
			bb := b.(*array.BooleanBuilder)
			for j := range n {
				if nulls[j] {
					bb.AppendNull()
				} else {
					bb.UnsafeAppend(gen.Mix64(key+(first+uint64(j)*g.par)*gamma)&1 == 1)
				}
			}
			continue
		case arrow.STRING, arrow.BINARY:
			if col.field.Kind == Random {
				g.genRandomBytes(b, col, key, first, nulls)
				continue
			}
		}
		// Integer-like types: draw the int64 of each row, then append it in the column's type.
		if col.field.Kind == Sequence {
			start, step := col.field.Start, col.step
			for j := range n {
				raw[j] = start + int64(first+uint64(j)*g.par)*step
			}
		} else {
			lo := col.field.Min
			span := uint64(col.field.Max-col.field.Min) + 1 // 0: the whole uint64 range
			for j := range n {
				h := gen.Mix64(key + (first+uint64(j)*g.par)*gamma)
				if span != 0 {
					h, _ = bits.Mul64(h, span)
				}
				raw[j] = lo + int64(h)
			}
		}
		if c == g.eventCol {
			g.observeEvents(raw, nulls)
		}
		g.appendIntegral(b, raw, nulls)
	}
	return g.bld.NewRecordBatch()
}

// unitFloat maps a hash to [0, 1).
func unitFloat(h uint64) float64 { return float64(h>>11) * 0x1p-53 }

func (g *generator) observeEvents(raw []int64, nulls []bool) {
	for j, v := range raw {
		if nulls[j] {
			continue
		}
		us := g.eventToMicros(v)
		if !g.hasEvent || us > g.maxEvent {
			g.maxEvent, g.hasEvent = us, true
		}
	}
}

func (g *generator) appendIntegral(b array.Builder, raw []int64, nulls []bool) {
	switch bb := b.(type) {
	case *array.Int8Builder:
		for j, v := range raw {
			if nulls[j] {
				bb.AppendNull()
			} else {
				bb.UnsafeAppend(int8(v))
			}
		}
	case *array.Int16Builder:
		for j, v := range raw {
			if nulls[j] {
				bb.AppendNull()
			} else {
				bb.UnsafeAppend(int16(v))
			}
		}
	case *array.Int32Builder:
		for j, v := range raw {
			if nulls[j] {
				bb.AppendNull()
			} else {
				bb.UnsafeAppend(int32(v))
			}
		}
	case *array.Int64Builder:
		for j, v := range raw {
			if nulls[j] {
				bb.AppendNull()
			} else {
				bb.UnsafeAppend(v)
			}
		}
	case *array.Uint8Builder:
		for j, v := range raw {
			if nulls[j] {
				bb.AppendNull()
			} else {
				bb.UnsafeAppend(uint8(v))
			}
		}
	case *array.Uint16Builder:
		for j, v := range raw {
			if nulls[j] {
				bb.AppendNull()
			} else {
				bb.UnsafeAppend(uint16(v))
			}
		}
	case *array.Uint32Builder:
		for j, v := range raw {
			if nulls[j] {
				bb.AppendNull()
			} else {
				bb.UnsafeAppend(uint32(v))
			}
		}
	case *array.Uint64Builder:
		for j, v := range raw {
			if nulls[j] {
				bb.AppendNull()
			} else {
				bb.UnsafeAppend(uint64(v))
			}
		}
	case *array.Date32Builder:
		for j, v := range raw {
			if nulls[j] {
				bb.AppendNull()
			} else {
				bb.UnsafeAppend(arrow.Date32(v))
			}
		}
	case *array.TimestampBuilder:
		for j, v := range raw {
			if nulls[j] {
				bb.AppendNull()
			} else {
				bb.UnsafeAppend(arrow.Timestamp(v))
			}
		}
	case *array.Decimal128Builder:
		for j, v := range raw {
			if nulls[j] {
				bb.AppendNull()
			} else {
				bb.UnsafeAppend(decimal128.FromI64(v))
			}
		}
	case *array.StringBuilder:
		g.appendDigits(bb.BinaryBuilder, raw, nulls)
	case *array.BinaryBuilder:
		g.appendDigits(bb, raw, nulls)
	}
}

// appendDigits fills a string or binary sequence column with the decimal digits of each number.
func (g *generator) appendDigits(bb *array.BinaryBuilder, raw []int64, nulls []bool) {
	bb.ReserveData(len(raw) * 8)
	for j, v := range raw {
		if nulls[j] {
			bb.AppendNull()
			continue
		}
		g.scratch = strconv.AppendInt(g.scratch[:0], v, 10)
		bb.Append(g.scratch)
	}
}

const alphanumeric = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// alnumOfByte maps a random byte to an alphanumeric character, near uniformly (each one 4 or 5 times of 256).
var alnumOfByte = func() (t [256]byte) {
	for c := range t {
		t[c] = alphanumeric[c*len(alphanumeric)>>8]
	}
	return t
}()

// genRandomBytes fills a random string column with alphanumeric text, or a binary column with bytes, of the
// configured length. Row r's bytes come from hashes of (key, r) extended by a counter, 8 bytes per hash.
func (g *generator) genRandomBytes(b array.Builder, col *genColumn, key, first uint64, nulls []bool) {
	length := col.field.Length
	text := false
	var bb *array.BinaryBuilder
	switch t := b.(type) {
	case *array.StringBuilder:
		bb, text = t.BinaryBuilder, true
	case *array.BinaryBuilder:
		bb = t
	}
	bb.ReserveData(len(nulls) * length)
	if cap(g.scratch) < length {
		g.scratch = make([]byte, length)
	}
	buf := g.scratch[:length]
	for j := range nulls {
		if nulls[j] {
			bb.AppendNull()
			continue
		}
		base := gen.Mix64(key + (first+uint64(j)*g.par)*gamma)
		h := base
		for k := 0; k < length; k += 8 {
			if k > 0 {
				h = gen.Mix64(base + uint64(k/8)*gamma2)
			}
			word := buf[k:min(k+8, length)]
			if len(word) == 8 {
				binary.LittleEndian.PutUint64(word, h)
			} else {
				for w := range word {
					word[w] = byte(h >> (8 * w))
				}
			}
			if text {
				for w, c := range word {
					word[w] = alnumOfByte[c]
				}
			}
		}
		bb.Append(buf)
	}
}

func (g *generator) genFloats(b array.Builder, col *genColumn, key, first uint64, nulls []bool) {
	f := &col.field
	value := func(j int) float64 {
		row := first + uint64(j)*g.par
		if f.Kind == Sequence {
			return float64(f.Start + int64(row)*col.step)
		}
		return f.MinF + unitFloat(gen.Mix64(key+row*gamma))*(f.MaxF-f.MinF)
	}
	switch bb := b.(type) {
	case *array.Float32Builder:
		for j := range nulls {
			if nulls[j] {
				bb.AppendNull()
			} else {
				bb.UnsafeAppend(float32(value(j)))
			}
		}
	case *array.Float64Builder:
		for j := range nulls {
			if nulls[j] {
				bb.AppendNull()
			} else {
				bb.UnsafeAppend(value(j))
			}
		}
	}
}

// genOffset is a generator's position: the subtask's next local row and the largest event time it produced, so
// that the watermark does not go back after a restore.
type genOffset struct {
	sub, par, next uint64
	maxEvent       int64
	hasEvent       bool
}

const genOffsetVersion = 1

func (g *generator) SnapshotOffset() ([]byte, error) {
	b := make([]byte, 0, 34)
	b = append(b, genOffsetVersion)
	b = binary.BigEndian.AppendUint64(b, g.sub)
	b = binary.BigEndian.AppendUint64(b, g.par)
	b = binary.BigEndian.AppendUint64(b, g.next)
	b = binary.BigEndian.AppendUint64(b, uint64(g.maxEvent))
	hasEvent := byte(0)
	if g.hasEvent {
		hasEvent = 1
	}
	return append(b, hasEvent), nil
}

func decodeGenOffset(b []byte) (genOffset, error) {
	if len(b) != 34 || b[0] != genOffsetVersion {
		return genOffset{}, fmt.Errorf("datagen: unreadable offset (%d bytes)", len(b))
	}
	return genOffset{
		sub:      binary.BigEndian.Uint64(b[1:]),
		par:      binary.BigEndian.Uint64(b[9:]),
		next:     binary.BigEndian.Uint64(b[17:]),
		maxEvent: int64(binary.BigEndian.Uint64(b[25:])),
		hasEvent: b[33] == 1,
	}, nil
}

func (g *generator) Close() error {
	if g.bld != nil {
		g.bld.Release()
		g.bld = nil
	}
	return nil
}
