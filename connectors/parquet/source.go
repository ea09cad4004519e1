package parquet

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"github.com/clinksql/clinksql/connectors"
	"github.com/clinksql/clinksql/connectors/filelist"
	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/state"
)

// SourceConfig configures a bounded Parquet source.
type SourceConfig struct {
	// Path is a directory, whose *.parquet files (directly in it, not in subdirectories such as _staging) are read;
	// a glob pattern such as 'dir/*.parquet'; or a single file.
	Path string
	// Schema is the columns to produce, matched to the files' top-level columns by name (case-sensitive).
	Schema *arrow.Schema
	// BatchRows bounds the rows of a batch; 0 means DefaultBatchRows. A batch never spans two files.
	BatchRows int
	// Guard confines the files read: every listed file, and each again when it is opened.
	Guard connectors.PathGuard
}

// DefaultBatchRows is the Parquet source's batch size when none is configured.
const DefaultBatchRows = 4096

// NewSource returns a bounded source that reads Parquet files into Arrow batches.
//
// The file list is fixed at Open: the matching files sorted by path. Subtask k of p reads files k, k+p, k+2p, ...
// of that list, whole, in order, and finishes after its last one. Open also reads the footer of each of the
// subtask's files and fails if a column of Schema is missing or cannot be read as its Arrow type; a file that is not
// Parquet at all fails Produce when the read reaches it, after the rows of the files before it.
//
// The offset is the index of the file being read and the number of its rows already produced, with a fingerprint
// of the whole file list (names and sizes). A restore needs the same parallelism and the same list: if a file was
// removed, added or rewritten since the checkpoint, Open fails instead of reading the wrong rows.
//
// Types are read as the inverse of NewSink's mapping, and more generally whenever the file's logical type
// matches the Arrow type without loss: narrower integers widen, REAL widens to DOUBLE, timestamps of any unit
// (and legacy INT96 ones) convert to the column's unit (a finer unit is floored), decimals of a smaller scale and no
// more integer digits rescale. Anything else is an error naming the file, the column and both types.
func NewSource(cfg SourceConfig) exec.Source {
	return &parquetSource{cfg: cfg}
}

type parquetSource struct {
	cfg      SourceConfig
	fsys     state.FS
	alloc    memory.Allocator
	sub, par int
	batch    int

	files []filelist.File
	fp    uint64 // fingerprint of files
	// The read position: files[next] is the file being read (or the next to read), and its first row rows have
	// been produced. next steps by par.
	next int
	row  int64

	restored *pqSrcOffset
	cur      *pqOpenFile
	bld      *array.RecordBuilder
	err      error // sticky: a failed read leaves the cursors in no known position

	// Scratch for one run of values of one column.
	vals  []parquet.Value
	raw   []int64
	valid []bool

	// restRows[i] is the rows of the subtask's files i, i+par, ... from their footers (-1 when one could not be
	// read), so that the progress knows the rows left and the total.
	restRows []int64
	connectors.ReadProgress
}

var _ exec.SourceProgress = (*parquetSource)(nil)

// ---- offsets ----

const pqSrcOffsetVersion = 1

type pqSrcOffset struct {
	sub, par, files int
	fp              uint64
	next            int
	row             int64
}

func (s *parquetSource) RestoreOffset(b []byte) error {
	return connectors.RestoreOffset(&s.restored, b, decodePQSrcOffset)
}

// SnapshotOffset encodes the position as a version byte, uvarints subtask, parallelism and file count, the 8-byte
// list fingerprint, then uvarints file index and row.
func (s *parquetSource) SnapshotOffset() ([]byte, error) {
	if s.bld == nil {
		return nil, errors.New("parquet source: snapshot before open")
	}
	b := filelist.AppendPos(append(make([]byte, 0, 32), pqSrcOffsetVersion), s.sub, s.par, len(s.files), s.fp, s.next)
	return binary.AppendUvarint(b, uint64(s.row)), nil
}

func decodePQSrcOffset(b []byte) (pqSrcOffset, error) {
	bad := fmt.Errorf("parquet source: unreadable offset (%d bytes)", len(b))
	if len(b) < 1 || b[0] != pqSrcOffsetVersion {
		return pqSrcOffset{}, bad
	}
	r := filelist.NewOffsetReader(b[1:])
	var o pqSrcOffset
	o.sub, o.par, o.files = int(r.Uvarint(math.MaxInt32)), int(r.Uvarint(math.MaxInt32)), int(r.Uvarint(math.MaxInt32))
	o.fp = r.Fixed64()
	o.next, o.row = int(r.Uvarint(math.MaxInt32)), r.Uvarint(math.MaxInt64)
	if !r.Done() {
		return pqSrcOffset{}, bad
	}
	return o, nil
}

// ---- open: list, check the restore, check the schemas ----

func (s *parquetSource) Open(ctx *exec.TaskContext) error {
	cfg := &s.cfg
	if cfg.Path == "" || cfg.Schema == nil {
		return errors.New("parquet source: no path or schema")
	}
	if cfg.BatchRows < 0 {
		return errors.New("parquet source: negative batch size")
	}
	if err := connectors.CheckSubtask("parquet source", ctx); err != nil {
		return err
	}
	for _, f := range cfg.Schema.Fields() {
		if !pqSourceType(f.Type) {
			return fmt.Errorf("parquet source: column %s: type %s cannot be read from Parquet", f.Name, f.Type)
		}
	}
	s.fsys, s.alloc = connectors.TaskFS(ctx), connectors.TaskAlloc(ctx)
	s.sub, s.par = ctx.Subtask, ctx.Parallelism
	s.batch = cmp.Or(cfg.BatchRows, DefaultBatchRows)

	files, err := filelist.List(s.fsys, cfg.Path, ".parquet")
	if err == nil {
		err = filelist.Guard(cfg.Guard, files)
	}
	if err != nil {
		return fmt.Errorf("parquet source: %w", err)
	}
	s.files, s.fp = files, filelist.Fingerprint(files)
	s.next, s.row = s.sub, 0
	if o := s.restored; o != nil {
		if err := connectors.CheckOffsetSubtask("parquet source", o.sub, o.par, s.sub, s.par); err != nil {
			return err
		}
		if err := filelist.CheckSame("parquet source", cfg.Path, o.files, o.fp, len(files), s.fp); err != nil {
			return err
		}
		if o.next < len(files) && o.next%s.par != s.sub || o.row < 0 {
			return fmt.Errorf("parquet source: offset (file %d, row %d) is not subtask %d's", o.next, o.row, s.sub)
		}
		s.next, s.row = o.next, o.row
	}
	rows := make([]int64, len(files))
	for i := s.sub; i < len(files); i += s.par {
		if i < s.next {
			rows[i] = s.footerRows(files[i]) // read before the restored checkpoint: for the total only
			continue
		}
		if rows[i], err = s.checkFile(files[i]); err != nil {
			return err
		}
	}
	s.restRows = connectors.StridedRest(len(files), s.par, func(i int) int64 { return rows[i] })
	s.report()
	s.vals = make([]parquet.Value, pqChunk)
	s.raw = make([]int64, pqChunk)
	s.valid = make([]bool, pqChunk)
	s.bld = array.NewRecordBuilder(s.alloc, cfg.Schema)
	return nil
}

// checkFile reads the footer of one file and plans its columns, and returns its rows. A file that cannot be opened
// as Parquet is left for Produce to report when it gets there (its rows are -1); a readable file that lacks a
// column, or holds it in a type that does not convert, fails Open.
func (s *parquetSource) checkFile(f filelist.File) (int64, error) {
	of, err := s.openFile(f, true)
	if err != nil {
		var pe *pqPlanError
		if errors.As(err, &pe) {
			return 0, fmt.Errorf("parquet source: %s: %w", f.Name, err)
		}
		return -1, nil
	}
	of.close()
	return of.rows, nil
}

// footerRows returns the rows of a file from its footer, -1 when it cannot be read.
func (s *parquetSource) footerRows(f filelist.File) int64 {
	rows, err := s.checkFile(f)
	if err != nil {
		return -1
	}
	return rows
}

// report sets the progress: the rows of the subtask's files from the current position on, and of all its files;
// unknown when a footer could not be read.
func (s *parquetSource) report() {
	total, left := s.restRows[s.sub], s.restRows[min(s.next, len(s.files))]
	if total < 0 || left < 0 {
		s.Set(-1, -1, -1)
		return
	}
	s.Set(max(left-s.row, 0), -1, total)
}

// pqPlanError is a schema mismatch, as opposed to a file that could not be read.
type pqPlanError struct {
	col string
	err error
}

func (e *pqPlanError) Error() string { return e.err.Error() }
func (e *pqPlanError) Unwrap() error { return e.err }

// ---- reading ----

// Produce returns the next batch of the subtask's current file, moving on to its next file at the end of one.
func (s *parquetSource) Produce(context.Context) (exec.SourceResult, error) {
	if s.bld == nil {
		return exec.SourceResult{}, errors.New("parquet source: produce before open")
	}
	if s.err != nil {
		return exec.SourceResult{}, s.err
	}
	for {
		if s.next >= len(s.files) {
			return exec.SourceResult{Status: exec.Finished, WM: exec.MinWatermark}, nil
		}
		if s.cur == nil {
			f := s.files[s.next]
			of, err := s.openFile(f, false)
			if err == nil {
				err = of.seek(s.row)
				if err != nil {
					of.close()
				}
			}
			if err != nil {
				s.err = fmt.Errorf("parquet source: %s: %w", f.Name, err)
				return exec.SourceResult{}, s.err
			}
			s.cur = of
		}
		left := s.cur.rows - s.row
		if left == 0 {
			s.advance()
			continue
		}
		n := int(min(int64(s.batch), left))
		rec, err := s.read(n)
		if err != nil {
			s.err = fmt.Errorf("parquet source: %s: %w", s.cur.name, err)
			return exec.SourceResult{}, s.err
		}
		s.row += int64(n)
		if s.row == s.cur.rows {
			s.advance()
		}
		s.report()
		return exec.SourceResult{Status: exec.Produced, Batch: exec.Batch{Rec: rec}, WM: exec.MinWatermark}, nil
	}
}

func (s *parquetSource) advance() {
	s.cur.close()
	s.cur = nil
	s.next += s.par
	s.row = 0
	clear(s.vals) // drop pointers into the file's pages
}

func (s *parquetSource) Close() error {
	if s.cur != nil {
		s.cur.close()
		s.cur = nil
	}
	if s.bld != nil {
		s.bld.Release()
		s.bld = nil
	}
	return nil
}

// pqOpenFile is the file being read: its column plans, and per column a cursor in the current row group.
type pqOpenFile struct {
	name   string
	closer io.Closer
	pf     *parquet.File
	cols   []pqReadCol
	groups []parquet.RowGroup
	rows   int64

	group     int   // the current row group
	groupLeft int64 // its rows not yet read
	cursors   []pqCursor
}

type pqCursor struct {
	pages parquet.Pages
	page  parquet.Page // the page values are being read from, nil between pages
	vals  parquet.ValueReader

	// A nested column's leaves, each with the values read ahead of the assembly (nestedread.go); pages is unused.
	leaves []pqLeafCursor
}

// openFile opens one file through the task's file system and plans its columns; only to check them, it skips
// the page index, which reading uses to seek. parquet-go panics on some malformed files: the panic becomes an
// error.
func (s *parquetSource) openFile(f filelist.File, check bool) (of *pqOpenFile, err error) {
	if err := s.cfg.Guard.Check(f.Name); err != nil {
		return nil, err
	}
	st, err := s.fsys.Stat(f.Name)
	if err != nil {
		return nil, err
	}
	if st.Size() != f.Size {
		return nil, fmt.Errorf("size changed from %d to %d bytes since the file list was made", f.Size, st.Size())
	}
	file, err := s.fsys.Open(f.Name)
	if err != nil {
		return nil, err
	}
	ra, ok := file.(io.ReaderAt)
	if !ok {
		// A file system whose files cannot read at an offset: read the file into memory.
		data, err := io.ReadAll(file)
		file.Close()
		if err != nil {
			return nil, err
		}
		ra, file = bytes.NewReader(data), nil
	}
	opened := &pqOpenFile{name: f.Name}
	if file != nil {
		opened.closer = file
	}
	defer func() {
		if r := recover(); r != nil {
			of, err = nil, fmt.Errorf("malformed Parquet file: %v", r)
		}
		if err != nil {
			opened.close()
		}
	}()
	of = opened
	of.pf, err = parquet.OpenFile(ra, f.Size, parquet.SkipBloomFilters(true), parquet.SkipPageIndex(check))
	if err != nil {
		return nil, fmt.Errorf("not a readable Parquet file: %w", err)
	}
	sch := of.pf.Schema()
	for _, field := range s.cfg.Schema.Fields() {
		col, err := planPQColumn(sch, field)
		if err != nil {
			return nil, &pqPlanError{col: field.Name, err: err}
		}
		of.cols = append(of.cols, col)
	}
	of.groups = of.pf.RowGroups()
	for _, g := range of.groups {
		of.rows += g.NumRows()
	}
	of.group = -1
	return of, nil
}

// seek positions the cursors at row r of the file.
func (of *pqOpenFile) seek(r int64) (err error) {
	defer pqRecover(&err)
	if r < 0 || r > of.rows {
		return fmt.Errorf("row %d is beyond the file's %d rows", r, of.rows)
	}
	start := int64(0)
	for g, rg := range of.groups {
		n := rg.NumRows()
		if r < start+n {
			return of.openGroup(g, r-start)
		}
		start += n
	}
	of.group, of.groupLeft = len(of.groups), 0 // at the end
	return nil
}

// openGroup makes row group g current, with its first skip rows already read.
func (of *pqOpenFile) openGroup(g int, skip int64) error {
	of.closeCursors()
	of.group = g
	of.groupLeft = of.groups[g].NumRows() - skip
	chunks := of.groups[g].ColumnChunks()
	of.cursors = of.cursors[:0]
	for i := range of.cols {
		col := &of.cols[i]
		if col.nested != nil {
			of.cursors = append(of.cursors, pqCursor{leaves: make([]pqLeafCursor, len(col.leaves))})
			for k, leaf := range col.leaves {
				pages, err := of.groupPages(chunks, g, col, leaf, skip)
				if err != nil {
					return err
				}
				of.cursors[i].leaves[k].pages = pages
			}
			continue
		}
		pages, err := of.groupPages(chunks, g, col, col.leaf, skip)
		if err != nil {
			return err
		}
		of.cursors = append(of.cursors, pqCursor{pages: pages})
	}
	return nil
}

// groupPages opens the pages of one leaf column of row group g at row skip.
func (of *pqOpenFile) groupPages(chunks []parquet.ColumnChunk, g int, col *pqReadCol, leaf int, skip int64) (parquet.Pages, error) {
	if leaf >= len(chunks) {
		return nil, fmt.Errorf("row group %d has %d columns, column %s has number %d", g, len(chunks), col.name, leaf)
	}
	pages := chunks[leaf].Pages()
	if skip > 0 {
		if err := pages.SeekToRow(skip); err != nil {
			pages.Close()
			return nil, fmt.Errorf("column %s: seek to row %d of row group %d: %w", col.name, skip, g, err)
		}
	}
	return pages, nil
}

func (of *pqOpenFile) closeCursors() {
	for i := range of.cursors {
		c := &of.cursors[i]
		for k := range c.leaves {
			c.leaves[k].close()
		}
		if c.page != nil {
			parquet.Release(c.page)
		}
		if c.pages != nil {
			c.pages.Close()
		}
		*c = pqCursor{}
	}
	of.cursors = of.cursors[:0]
}

func (of *pqOpenFile) close() {
	of.closeCursors()
	if of.closer != nil {
		of.closer.Close()
		of.closer = nil
	}
}

func pqRecover(err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("malformed Parquet file: %v", r)
	}
}

// read builds a batch of the current file's next n rows (n >= 1, no more than are left), crossing row groups.
func (s *parquetSource) read(n int) (rec arrow.RecordBatch, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("malformed Parquet file: %v", r)
		}
		if err != nil {
			// Drop the partial rows, column by column: the columns may hold different numbers of them.
			for c := range s.bld.Fields() {
				s.bld.Field(c).NewArray().Release()
			}
		}
	}()
	of := s.cur
	for left := int64(n); left > 0; {
		for of.groupLeft == 0 {
			if of.group+1 >= len(of.groups) {
				return nil, fmt.Errorf("the row groups end before the %d rows the footer declares", of.rows)
			}
			if err := of.openGroup(of.group+1, 0); err != nil {
				return nil, err
			}
		}
		k := min(left, of.groupLeft)
		for c := range of.cols {
			read := s.readColumn
			if of.cols[c].nested != nil {
				read = s.readNested
			}
			if err := read(c, int(k)); err != nil {
				return nil, fmt.Errorf("column %s: %w", of.cols[c].name, err)
			}
		}
		of.groupLeft -= k
		left -= k
	}
	if len(of.cols) == 0 {
		return array.NewRecordBatch(s.cfg.Schema, nil, int64(n)), nil
	}
	return s.bld.NewRecordBatch(), nil
}

// readColumn appends the next n values of column c to its builder, page by page. The values of a page are
// converted before the next page is read: byte arrays point into the page's buffers, which parquet-go reuses.
func (s *parquetSource) readColumn(c, n int) error {
	of := s.cur
	cur, col, b := &of.cursors[c], &of.cols[c], s.bld.Field(c)
	for n > 0 {
		if cur.vals == nil {
			page, err := cur.pages.ReadPage()
			if errors.Is(err, io.EOF) {
				return fmt.Errorf("row group %d ends %d rows early", of.group, n)
			}
			if err != nil {
				return err
			}
			cur.page, cur.vals = page, page.Values()
		}
		got, err := cur.vals.ReadValues(s.vals[:min(n, len(s.vals))])
		if got > 0 {
			if err := s.appendValues(col, b, s.vals[:got]); err != nil {
				return err
			}
			n -= got
		}
		switch {
		case errors.Is(err, io.EOF):
			parquet.Release(cur.page)
			cur.page, cur.vals = nil, nil
		case err != nil:
			return err
		case got == 0:
			return errors.New("page reader made no progress")
		}
	}
	return nil
}

// ---- type mapping ----

// pqConv is how the values of one Parquet column become Arrow values.
type pqConv uint8

const (
	pcBool         pqConv = iota
	pcFloat               // FLOAT into REAL or DOUBLE
	pcDouble              // DOUBLE into DOUBLE
	pcBytes               // BYTE_ARRAY or FIXED_LEN_BYTE_ARRAY into VARCHAR or VARBINARY
	pcUTF8                // a BYTE_ARRAY without logical type into VARCHAR: checked to be UTF-8
	pcInt                 // INT32 or INT64 integers and dates into an integer or DATE column
	pcTimestamp           // INT64 timestamps, converted to the column's unit
	pcInt96               // legacy INT96 timestamps (nanosecond of day, Julian day)
	pcDecimalInt          // DECIMAL on INT32 or INT64
	pcDecimalBytes        // DECIMAL on BYTE_ARRAY or FIXED_LEN_BYTE_ARRAY: big-endian two's complement
)

// pqExt is how an INT32 or INT64 value widens to int64.
type pqExt uint8

const (
	extInt32  pqExt = iota // sign-extend
	extUint32              // zero-extend (UINT_8 to UINT_32 are stored in INT32's bits)
	extInt64               // as is (UINT_64 keeps its bits)
)

// pqReadCol is the plan for one column of one file.
type pqReadCol struct {
	name     string
	leaf     int // the leaf's column index in the file's row groups
	conv     pqConv
	ext      pqExt
	target   arrow.DataType
	nullable bool
	mul, div int64 // pcTimestamp: multiply, or floor-divide, by this to reach the column's unit
	perSec   int64 // pcInt96: the column unit's ticks per second
	rescale  int32 // decimals: how many digits the scale grows by
	prec     int32 // decimals: the column's precision

	// A nested column (ROW, ARRAY or MAP): its tree, and the file's column index of each of its leaves (leaf is
	// then unused). nestedread.go.
	nested *pqReadNode
	leaves []int
}

// pqSourceType reports whether the source can produce an Arrow type at all.
func pqSourceType(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.BOOL, arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT8, arrow.UINT16, arrow.UINT32,
		arrow.UINT64, arrow.FLOAT32, arrow.FLOAT64, arrow.STRING, arrow.BINARY, arrow.DATE32, arrow.TIMESTAMP:
		return true
	case arrow.DECIMAL128:
		dt := t.(*arrow.Decimal128Type)
		return dt.Precision >= 1 && dt.Precision <= 38 && dt.Scale >= 0 && dt.Scale <= dt.Precision
	case arrow.STRUCT:
		for _, f := range t.(*arrow.StructType).Fields() {
			if !pqSourceType(f.Type) {
				return false
			}
		}
		return true
	case arrow.MAP:
		m := t.(*arrow.MapType)
		return pqSourceType(m.KeyType()) && pqSourceType(m.ItemType())
	case arrow.LIST:
		return pqSourceType(t.(*arrow.ListType).Elem())
	}
	return false
}

// pqTypeName spells a Parquet leaf type for errors: physical type, then logical type in parentheses.
func pqTypeName(t parquet.Type) string {
	s := t.Kind().String()
	if t.Kind() == parquet.FixedLenByteArray {
		s += fmt.Sprintf("[%d]", t.Length())
	}
	if lt := t.LogicalType(); lt != nil && lt.Value != nil {
		s += " (" + lt.String() + ")"
	}
	return s
}

// planPQColumn finds field in a file's schema and decides how its values convert.
func planPQColumn(sch *parquet.Schema, field arrow.Field) (pqReadCol, error) {
	var node parquet.Field
	var names []string
	for _, f := range sch.Fields() {
		names = append(names, f.Name())
		if f.Name() == field.Name {
			node = f
		}
	}
	if node == nil {
		return pqReadCol{}, fmt.Errorf("no column %q (the file has %s)", field.Name, strings.Join(names, ", "))
	}
	switch field.Type.ID() {
	case arrow.STRUCT, arrow.LIST, arrow.MAP:
		return planPQNested(sch, node, field)
	}
	if !node.Leaf() || node.Repeated() {
		return pqReadCol{}, fmt.Errorf("column %s is a nested or repeated Parquet column, not a %s", field.Name, field.Type)
	}
	leaf, ok := sch.Lookup(field.Name)
	if !ok {
		return pqReadCol{}, fmt.Errorf("no leaf column %q", field.Name)
	}
	return planPQLeaf(node, field.Name, leaf.ColumnIndex, field.Type, field.Nullable)
}

// planPQLeaf decides how the values of a leaf column (number leaf of the file) convert to Arrow type target; name
// names it in errors.
func planPQLeaf(node parquet.Node, name string, leaf int, target arrow.DataType, nullable bool) (pqReadCol, error) {
	field := arrow.Field{Name: name, Type: target, Nullable: nullable}
	t := node.Type()
	kind := t.Kind()
	var lt any
	if l := t.LogicalType(); l != nil {
		lt = l.Value
	}
	col := pqReadCol{name: field.Name, leaf: leaf, target: field.Type, nullable: field.Nullable}
	why, ok := "", false
	switch field.Type.ID() {
	case arrow.BOOL:
		col.conv, ok = pcBool, kind == parquet.Boolean
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64:
		bits, signed, ext, isInt := pqIntegerOf(kind, lt)
		if isInt {
			width := field.Type.(arrow.FixedWidthDataType).BitWidth()
			tSigned := arrow.IsSignedInteger(field.Type.ID())
			ok = signed == tSigned && bits <= width || !signed && tSigned && bits < width
			if !ok {
				why = ": values might not fit"
			}
		}
		col.conv, col.ext = pcInt, ext
	case arrow.FLOAT32:
		col.conv, ok = pcFloat, kind == parquet.Float
	case arrow.FLOAT64:
		col.conv, ok = pcFloat, kind == parquet.Float
		if kind == parquet.Double {
			col.conv, ok = pcDouble, true
		}
	case arrow.STRING:
		if kind == parquet.ByteArray {
			switch lt.(type) {
			case *format.StringType, *format.EnumType, *format.JsonType:
				col.conv, ok = pcBytes, true
			case nil:
				col.conv, ok = pcUTF8, true
			}
		}
	case arrow.BINARY:
		switch lt.(type) {
		case nil, *format.StringType, *format.EnumType, *format.JsonType, *format.BsonType, *format.UUIDType:
			col.conv, ok = pcBytes, kind == parquet.ByteArray || kind == parquet.FixedLenByteArray
		}
	case arrow.DATE32:
		_, isDate := lt.(*format.DateType)
		col.conv, col.ext, ok = pcInt, extInt32, isDate && kind == parquet.Int32
	case arrow.TIMESTAMP:
		perSec := pqUnitPerSecond(field.Type.(*arrow.TimestampType).Unit)
		if ts, isTS := lt.(*format.TimestampType); isTS && kind == parquet.Int64 {
			var src int64
			switch ts.Unit.Value.(type) {
			case *format.MilliSeconds:
				src = 1e3
			case *format.MicroSeconds:
				src = 1e6
			case *format.NanoSeconds:
				src = 1e9
			}
			if src != 0 {
				col.conv, col.ext, ok = pcTimestamp, extInt64, true
				col.mul, col.div = 1, 1
				if perSec >= src {
					col.mul = perSec / src
				} else {
					col.div = src / perSec
				}
			}
		} else if kind == parquet.Int96 && lt == nil {
			col.conv, col.perSec, ok = pcInt96, perSec, true
		}
	case arrow.DECIMAL128:
		dt := field.Type.(*arrow.Decimal128Type)
		if d, isDec := lt.(*format.DecimalType); isDec {
			col.prec, col.rescale = dt.Precision, dt.Scale-d.Scale
			if d.Scale > dt.Scale || d.Precision-d.Scale > dt.Precision-dt.Scale {
				why = ": values might not fit"
				break
			}
			switch kind {
			case parquet.Int32:
				col.conv, col.ext, ok = pcDecimalInt, extInt32, true
			case parquet.Int64:
				col.conv, col.ext, ok = pcDecimalInt, extInt64, true
			case parquet.ByteArray, parquet.FixedLenByteArray:
				col.conv, ok = pcDecimalBytes, true
			}
		}
	}
	if !ok {
		return pqReadCol{}, fmt.Errorf("column %s: cannot read Parquet %s as %s%s", field.Name, pqTypeName(t), field.Type, why)
	}
	return col, nil
}

// pqIntegerOf describes an integer column: its width, signedness and how to widen its values to int64.
func pqIntegerOf(kind parquet.Kind, lt any) (bits int, signed bool, ext pqExt, ok bool) {
	switch lt := lt.(type) {
	case nil:
		switch kind {
		case parquet.Int32:
			return 32, true, extInt32, true
		case parquet.Int64:
			return 64, true, extInt64, true
		}
	case *format.IntType:
		switch {
		case kind == parquet.Int32 && lt.BitWidth <= 32 && lt.IsSigned:
			return int(lt.BitWidth), true, extInt32, true
		case kind == parquet.Int32 && lt.BitWidth <= 32:
			return int(lt.BitWidth), false, extUint32, true
		case kind == parquet.Int64:
			return int(lt.BitWidth), lt.IsSigned, extInt64, true
		}
	}
	return 0, false, 0, false
}

func pqUnitPerSecond(u arrow.TimeUnit) int64 {
	switch u {
	case arrow.Second:
		return 1
	case arrow.Millisecond:
		return 1e3
	case arrow.Microsecond:
		return 1e6
	}
	return 1e9
}

// appendValues converts one run of values of a column (all from one page) and appends them: one switch per run,
// then a loop over the values.
func (s *parquetSource) appendValues(col *pqReadCol, b array.Builder, vals []parquet.Value) error {
	n := len(vals)
	valid := s.valid[:n]
	nulls := 0
	for i := range vals {
		valid[i] = !vals[i].IsNull()
		if !valid[i] {
			nulls++
		}
	}
	if nulls > 0 && !col.nullable {
		return errors.New("NULL in a NOT NULL column")
	}
	switch col.conv {
	case pcBool:
		bb := b.(*array.BooleanBuilder)
		bb.Reserve(n)
		for i, v := range vals {
			if valid[i] {
				bb.UnsafeAppend(v.Boolean())
			} else {
				bb.UnsafeAppendBoolToBitmap(false)
			}
		}
	case pcFloat:
		if fb, ok := b.(*array.Float64Builder); ok {
			fb.Reserve(n)
			for i, v := range vals {
				if valid[i] {
					fb.UnsafeAppend(float64(v.Float()))
				} else {
					fb.UnsafeAppendBoolToBitmap(false)
				}
			}
			break
		}
		fb := b.(*array.Float32Builder)
		fb.Reserve(n)
		for i, v := range vals {
			if valid[i] {
				fb.UnsafeAppend(v.Float())
			} else {
				fb.UnsafeAppendBoolToBitmap(false)
			}
		}
	case pcDouble:
		fb := b.(*array.Float64Builder)
		fb.Reserve(n)
		for i, v := range vals {
			if valid[i] {
				fb.UnsafeAppend(v.Double())
			} else {
				fb.UnsafeAppendBoolToBitmap(false)
			}
		}
	case pcBytes, pcUTF8:
		var bb *array.BinaryBuilder
		if sb, ok := b.(*array.StringBuilder); ok {
			bb = sb.BinaryBuilder
		} else {
			bb = b.(*array.BinaryBuilder)
		}
		size := 0
		for _, v := range vals {
			size += len(v.ByteArray())
		}
		bb.Reserve(n)
		bb.ReserveData(size)
		for i, v := range vals {
			if !valid[i] {
				bb.AppendNull()
				continue
			}
			if col.conv == pcUTF8 && !utf8.Valid(v.ByteArray()) {
				return errors.New("a BYTE_ARRAY value without logical type is not UTF-8, so not a VARCHAR")
			}
			bb.UnsafeAppend(v.ByteArray())
		}
	case pcInt, pcTimestamp, pcDecimalInt:
		raw := s.raw[:n]
		switch col.ext {
		case extInt32:
			for i, v := range vals {
				raw[i] = int64(v.Int32())
			}
		case extUint32:
			for i, v := range vals {
				raw[i] = int64(uint32(v.Int32()))
			}
		default:
			for i, v := range vals {
				raw[i] = v.Int64()
			}
		}
		switch col.conv {
		case pcInt:
			pqAppendInts(b, raw, valid)
		case pcTimestamp:
			if err := pqScaleTimes(raw, valid, col.mul, col.div); err != nil {
				return err
			}
			pqAppendFixed(b.(*array.TimestampBuilder), raw, valid)
		case pcDecimalInt:
			db := b.(*array.Decimal128Builder)
			db.Reserve(n)
			for i, x := range raw {
				if !valid[i] {
					db.UnsafeAppendBoolToBitmap(false)
					continue
				}
				d, err := pqDecimalFit(decimal128.FromI64(x), col)
				if err != nil {
					return err
				}
				db.UnsafeAppend(d)
			}
		}
	case pcInt96:
		raw := s.raw[:n]
		for i, v := range vals {
			if !valid[i] {
				raw[i] = 0
				continue
			}
			t, ok := pqInt96Time(v.Int96(), col.perSec)
			if !ok {
				return fmt.Errorf("INT96 timestamp %v is out of range for %s", v.Int96(), col.target)
			}
			raw[i] = t
		}
		pqAppendFixed(b.(*array.TimestampBuilder), raw, valid)
	case pcDecimalBytes:
		db := b.(*array.Decimal128Builder)
		db.Reserve(n)
		for i, v := range vals {
			if !valid[i] {
				db.UnsafeAppendBoolToBitmap(false)
				continue
			}
			d, ok := pqDecimalFromBE(v.ByteArray())
			if !ok {
				return fmt.Errorf("a DECIMAL value of %d bytes does not fit 128 bits", len(v.ByteArray()))
			}
			d, err := pqDecimalFit(d, col)
			if err != nil {
				return err
			}
			db.UnsafeAppend(d)
		}
	default:
		return fmt.Errorf("unhandled conversion %d", col.conv)
	}
	return nil
}

// pqFixedBuilder is the part of Arrow's fixed-width builders the conversion loops use.
type pqFixedBuilder[T any] interface {
	Reserve(n int)
	UnsafeAppend(v T)
	UnsafeAppendBoolToBitmap(valid bool)
}

type pqIntegral interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64
}

// pqAppendFixed appends widened values, truncating each to T: the plan checked that no value loses bits.
func pqAppendFixed[T pqIntegral](b pqFixedBuilder[T], raw []int64, valid []bool) {
	b.Reserve(len(raw))
	for i, x := range raw {
		if valid[i] {
			b.UnsafeAppend(T(x))
		} else {
			b.UnsafeAppendBoolToBitmap(false)
		}
	}
}

func pqAppendInts(b array.Builder, raw []int64, valid []bool) {
	switch b := b.(type) {
	case *array.Int8Builder:
		pqAppendFixed(b, raw, valid)
	case *array.Int16Builder:
		pqAppendFixed(b, raw, valid)
	case *array.Int32Builder:
		pqAppendFixed(b, raw, valid)
	case *array.Int64Builder:
		pqAppendFixed(b, raw, valid)
	case *array.Uint8Builder:
		pqAppendFixed(b, raw, valid)
	case *array.Uint16Builder:
		pqAppendFixed(b, raw, valid)
	case *array.Uint32Builder:
		pqAppendFixed(b, raw, valid)
	case *array.Uint64Builder:
		pqAppendFixed(b, raw, valid)
	case *array.Date32Builder:
		pqAppendFixed(b, raw, valid)
	default:
		panic(fmt.Sprintf("parquet source: integer builder %T", b))
	}
}

// pqScaleTimes converts timestamps to the column's unit in place: multiplying (checked) or flooring.
func pqScaleTimes(raw []int64, valid []bool, mul, div int64) error {
	switch {
	case mul > 1:
		lo, hi := math.MinInt64/mul, math.MaxInt64/mul
		for i, x := range raw {
			if x < lo || x > hi {
				if !valid[i] {
					continue
				}
				return fmt.Errorf("timestamp %d overflows when converted to a %d times finer unit", x, mul)
			}
			raw[i] = x * mul
		}
	case div > 1:
		for i, x := range raw {
			q := x / div
			if x%div < 0 {
				q--
			}
			raw[i] = q
		}
	}
	return nil
}

// pqInt96Time converts a legacy INT96 timestamp (8 bytes of nanosecond of the day, then 4 bytes of Julian day,
// little-endian) to ticks of perSec per second since the Unix epoch.
func pqInt96Time(v [3]uint32, perSec int64) (int64, bool) {
	const unixJulianDay = 2440588
	nanos := int64(uint64(v[1])<<32 | uint64(v[0]))
	days := int64(int32(v[2])) - unixJulianDay
	secs := days * 86400
	if secs > math.MaxInt64/perSec || secs < math.MinInt64/perSec {
		return 0, false
	}
	ticks := secs * perSec
	frac := nanos / (1e9 / perSec)
	if nanos < 0 || ticks > math.MaxInt64-frac {
		return 0, false
	}
	return ticks + frac, true
}

// pqDecimalFromBE decodes a big-endian two's complement integer of up to 16 significant bytes.
func pqDecimalFromBE(b []byte) (decimal128.Num, bool) {
	if len(b) == 0 {
		return decimal128.Num{}, true
	}
	neg := b[0]&0x80 != 0
	if len(b) > 16 {
		ext := byte(0)
		if neg {
			ext = 0xff
		}
		for _, c := range b[:len(b)-16] {
			if c != ext {
				return decimal128.Num{}, false
			}
		}
		b = b[len(b)-16:]
		if (b[0]&0x80 != 0) != neg {
			return decimal128.Num{}, false
		}
	}
	var buf [16]byte
	if neg {
		for i := range buf {
			buf[i] = 0xff
		}
	}
	copy(buf[16-len(b):], b)
	return decimal128.New(int64(binary.BigEndian.Uint64(buf[:8])), binary.BigEndian.Uint64(buf[8:])), true
}

// pqDecimalFit rescales a decimal to the column's scale and checks it holds no more digits than the column's
// precision: a file may hold values beyond the precision it declares.
func pqDecimalFit(d decimal128.Num, col *pqReadCol) (decimal128.Num, error) {
	a := d.Abs() // the most negative 128-bit value stays negative
	if a.Sign() < 0 || !a.Less(decimal128.GetScaleMultiplier(int(col.prec-col.rescale))) {
		return d, fmt.Errorf("DECIMAL value %s (unscaled) does not fit %s", d.BigInt(), col.target)
	}
	if col.rescale > 0 {
		d = d.Mul(decimal128.GetScaleMultiplier(int(col.rescale)))
	}
	return d, nil
}
