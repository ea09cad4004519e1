package file

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/clinksql/clinksql/connectors"
	"github.com/clinksql/clinksql/connectors/txnfile"
	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/textform"
)

// SinkConfig configures a CSV or JSON-lines file sink.
type SinkConfig struct {
	// Path is the directory committed files appear in; staging lives in Path/_staging/<job>/.
	Path string
	// Format is "csv" or "json" (JSON lines: one object per row).
	Format string
	// CSVHeader writes the column names as the first line of every CSV file ('csv.header' = 'true').
	CSVHeader bool
	Schema    *arrow.Schema
	// Guard confines the directories and files the sink creates, each checked when it is created.
	Guard connectors.PathGuard
	// Partition, when it has keys, makes a partitioned sink (PARTITIONED BY): rows go into Hive-style directories,
	// files without the partition columns (txnfile.PartitionedSink).
	Partition txnfile.PartitionConfig
}

// NewSink returns a two-phase-commit sink writing CSV or JSON lines in Postgres text forms. Each subtask
// writes one file per checkpoint that saw rows: <job>-<op>-<subtask>-<checkpoint>.csv (or .json), visible in
// Path only once the checkpoint completed. Configuration errors surface at Open.
func NewSink(cfg SinkConfig) exec.Sink {
	newEnc := func() txnfile.Encoder {
		switch cfg.Format {
		case "csv":
			return &csvEncoder{header: cfg.CSVHeader}
		case "json":
			return &jsonEncoder{}
		}
		return badEncoder{fmt.Errorf("unknown format %q (want csv or json)", cfg.Format)}
	}
	if len(cfg.Partition.Keys) > 0 {
		s := txnfile.NewPartitioned("file", cfg.Path, cfg.Schema, cfg.Partition, newEnc)
		s.Guard = cfg.Guard
		return s
	}
	s := txnfile.New("file", cfg.Path, cfg.Schema, newEnc())
	s.Guard = cfg.Guard
	return s
}

// badEncoder carries a configuration error to Open, where a Sink reports errors.
type badEncoder struct{ err error }

func (e badEncoder) Ext() string                                   { return "invalid" }
func (e badEncoder) Init(*arrow.Schema) error                      { return e.err }
func (e badEncoder) Begin(io.Writer) error                         { return e.err }
func (e badEncoder) Write(arrow.RecordBatch, []exec.RowKind) error { return e.err }
func (e badEncoder) Finish() error                                 { return e.err }
func (e badEncoder) Abandon()                                      {}

// lineFlush is how much encoded text a file encoder gathers before handing it to the writer.
const lineFlush = 64 << 10

// textEncoder holds what the CSV and JSON encoders share: the output, a reusable line buffer and the row renderer.
type textEncoder struct {
	w    io.Writer
	line []byte
	row  *textform.Row
}

func (t *textEncoder) init(format string, schema *arrow.Schema) error {
	row, err := textform.NewRow(format, schema)
	if err != nil {
		return err
	}
	t.row = row
	return nil
}

func (t *textEncoder) Begin(w io.Writer) error {
	t.w = w
	t.line = t.line[:0]
	return nil
}

// Write appends each row of rec as one line.
func (t *textEncoder) Write(rec arrow.RecordBatch, _ []exec.RowKind) error {
	if err := t.row.Bind(rec.Columns()); err != nil {
		return err
	}
	defer t.row.Unbind()
	for i := range int(rec.NumRows()) {
		t.line = append(t.row.Append(t.line, i), '\n')
		if len(t.line) >= lineFlush {
			if err := t.flush(); err != nil {
				return err
			}
		}
	}
	return nil
}

func (t *textEncoder) flush() error {
	if len(t.line) == 0 {
		return nil
	}
	_, err := t.w.Write(t.line)
	t.line = t.line[:0]
	return err
}

func (t *textEncoder) Finish() error { return t.flush() }

func (t *textEncoder) Abandon() {
	t.w = nil
	t.line = t.line[:0]
	if t.row != nil {
		t.row.Unbind() // drop references to the last batch's arrays
	}
}

// csvEncoder writes RFC 4180 CSV (textform.Row's), lines ending in \n, with an optional header line.
type csvEncoder struct {
	textEncoder
	header bool
	names  []string
}

func (e *csvEncoder) Ext() string { return "csv" }

func (e *csvEncoder) Init(schema *arrow.Schema) error {
	e.names = e.names[:0]
	for _, f := range schema.Fields() {
		e.names = append(e.names, f.Name)
	}
	return e.textEncoder.init("csv", schema)
}

func (e *csvEncoder) Begin(w io.Writer) error {
	e.textEncoder.Begin(w)
	if e.header {
		for i, n := range e.names {
			if i > 0 {
				e.line = append(e.line, ',')
			}
			e.line = textform.AppendCSVField(e.line, []byte(n))
		}
		e.line = append(e.line, '\n')
	}
	return nil
}

// jsonEncoder writes JSON lines: one object per row (textform.Row's).
type jsonEncoder struct{ textEncoder }

func (e *jsonEncoder) Ext() string { return "json" }

func (e *jsonEncoder) Init(schema *arrow.Schema) error { return e.textEncoder.init("json", schema) }

// SinkConfigFromOptions reads the WITH options of a CSV or JSON-lines sink; path is the 'path' option, already
// resolved by the engine.
//
//	'format'      'csv' or 'json' (JSON lines), required
//	'csv.header'  'true': every CSV file starts with the column names (default 'false')
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
		case "format":
			cfg.Format = strings.ToLower(val)
			if cfg.Format != "csv" && cfg.Format != "json" {
				return cfg, connectors.OptionError(key, "file sink: format '%s' is not supported (csv or json)", val)
			}
		case "csv.header":
			b, err := connectors.ParseBool(val)
			if err != nil {
				return cfg, connectors.OptionError(key, "file sink: option '%s' = '%s': %v", key, val, err)
			}
			cfg.CSVHeader = b
		default:
			return cfg, connectors.OptionError(key, "unknown option '%s' for connector 'file'", key)
		}
	}
	if cfg.Format == "" {
		return cfg, connectors.OptionError("", "connector 'file' needs 'format' = 'csv' or 'json'")
	}
	if _, ok := opts["csv.header"]; ok && cfg.Format != "csv" {
		return cfg, connectors.OptionError("csv.header", "file sink: option 'csv.header' does not apply to format '%s'", cfg.Format)
	}
	return cfg, nil
}
