package operators

import (
	"errors"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/clinksql/clinksql/connectors"
	"github.com/clinksql/clinksql/connectors/filelist"
	"github.com/clinksql/clinksql/exec/expr"
	"github.com/clinksql/clinksql/exec/textform"
	"github.com/clinksql/clinksql/sqlerr"
	"github.com/clinksql/clinksql/state"
)

// The connector configuration of the connectors not yet in their own packages (package connectors).
type (
	PathGuard   = connectors.PathGuard
	ConfigError = connectors.ConfigError
)

var (
	optionError     = connectors.OptionError
	columnError     = connectors.ColumnError
	pathError       = connectors.PathError
	sortedOptions   = connectors.SortedOptions
	parseBoolOption = connectors.ParseBool
)

// ValidateFileSource is the file source's validation hook: what FileSourceConfigFromOptions cannot see from the
// options alone. The path must exist (a directory, a file, or a glob whose fixed directories exist) and every file
// it names now must pass the guard; a following source checks the files that appear later as it lists them.
func ValidateFileSource(cfg FileSourceConfig) error {
	if err := checkFileSourceSchema(cfg.Schema); err != nil {
		return &ConfigError{Code: sqlerr.DatatypeMismatch, Msg: err.Error(), Err: err}
	}
	files, err := filelist.List(state.OS, cfg.Path, "")
	if err == nil {
		err = filelist.Guard(cfg.Guard, files)
	}
	if err != nil {
		return pathError("file source", cfg.Path, err)
	}
	return nil
}

// ValidateParquetSource is the Parquet source's validation hook: every column's type must be readable from
// Parquet, the path must exist, every file it names must pass the guard, and every file must hold each column in a
// type that converts to the declared one (42804 naming the file, the column and both types).
func ValidateParquetSource(cfg ParquetSourceConfig) error {
	for _, f := range cfg.Schema.Fields() {
		if !pqSourceType(f.Type) {
			return columnError(f.Name, "parquet source: column %s: type %s cannot be read from Parquet", f.Name, expr.TypeName(f.Type))
		}
	}
	files, err := filelist.List(state.OS, cfg.Path, ".parquet")
	if err == nil {
		err = filelist.Guard(cfg.Guard, files)
	}
	if err != nil {
		return pathError("parquet source", cfg.Path, err)
	}
	s := &parquetSource{cfg: cfg, fsys: state.OS}
	for _, f := range files {
		if err := s.checkFile(f); err != nil {
			var pe *pqPlanError
			if errors.As(err, &pe) {
				return columnError(pe.col, "%v", err)
			}
			return &ConfigError{Code: sqlerr.IOError, Option: "path", Msg: err.Error(), Err: err}
		}
	}
	return nil
}

// ValidateParquetSink is the Parquet sink's validation hook: the compression codec must be one the sink knows and
// every column must have a Parquet form.
func ValidateParquetSink(cfg ParquetSinkConfig) error {
	if _, err := parquetCodec(cfg.Compression); err != nil {
		return optionError("parquet.compression", "parquet sink: option 'parquet.compression' = '%s': %v", cfg.Compression, err)
	}
	return connectors.CheckSinkColumns("parquet", cfg.Schema, func(t arrow.DataType) error {
		_, _, err := parquetNode(t)
		return err
	})
}

// ValidateFileSink is the CSV and JSON-lines sink's validation hook: a known format and columns with a text form.
func ValidateFileSink(cfg FileSinkConfig) error {
	switch cfg.Format {
	case "csv", "json":
	default:
		return optionError("format", "file sink: format '%s' is not supported (csv or json)", cfg.Format)
	}
	return connectors.CheckSinkColumns("file", cfg.Schema, textform.CheckType)
}
