package operators

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/expr"
	"github.com/clinksql/clinksql/sqlerr"
	"github.com/clinksql/clinksql/state"
)

// PathGuard confines the files of a file or Parquet connector: it returns nil for a path the connector may read
// or write, and an error (SQLSTATE 42501) for one it may not, resolving symbolic links first. A connector calls it
// on every file a directory or glob listing names, and again right before it opens a file or creates a directory,
// so a link swapped after the statement was checked leads nowhere either. nil allows every path.
type PathGuard func(path string) error

func (g PathGuard) check(path string) error {
	if g == nil {
		return nil
	}
	return g(path)
}

// ConfigError is a connector configuration no job could run with, found by a connector's validation hook
// (ValidateFileSource, ValidateParquetSource, ValidateParquetSink, ValidateFileSink) or its options reader, before
// any job runs. The planner reports it with Code at the WITH option Option names, or at the definition of Column.
type ConfigError struct {
	// Code is the SQLSTATE: 22023 a value an option cannot take, 42804 a column type the connector cannot carry
	// or that does not match the files, 58P01 a path that does not exist, 42501 a path outside the allowed ones.
	Code   string
	Option string // the WITH option at fault, or ""
	Column string // the column at fault, or ""
	Msg    string
	Err    error
}

func (e *ConfigError) Error() string { return e.Msg }
func (e *ConfigError) Unwrap() error { return e.Err }

func optionError(option, format string, args ...any) *ConfigError {
	return &ConfigError{Code: sqlerr.InvalidParameter, Option: option, Msg: fmt.Sprintf(format, args...)}
}

func columnError(column, format string, args ...any) *ConfigError {
	return &ConfigError{Code: sqlerr.DatatypeMismatch, Column: column, Msg: fmt.Sprintf(format, args...)}
}

// pathError is a listing's error as the 'path' option's: a path that does not exist is 58P01, a refusal of the
// guard keeps its code.
func pathError(who, path string, err error) *ConfigError {
	code := sqlerr.IOError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		code = sqlerr.UndefinedFile
	case sqlerr.Code(err) != "":
		code = sqlerr.Code(err)
	}
	return &ConfigError{Code: code, Option: "path", Msg: fmt.Sprintf("%s: %s: %v", who, path, err), Err: err}
}

// guardFiles checks every listed file against the guard.
func guardFiles(g PathGuard, files []pqSrcFile) error {
	for _, f := range files {
		if err := g.check(f.name); err != nil {
			return err
		}
	}
	return nil
}

// ValidateGenerator is the datagen source's validation hook: the columns checked against their options (ranges,
// types), which the generator does when it opens.
func ValidateGenerator(cfg GeneratorConfig) error {
	g := NewGenerator(cfg)
	if err := g.Open(&exec.TaskContext{Parallelism: 1, Alloc: memory.DefaultAllocator}); err != nil {
		return err
	}
	return g.Close()
}

// ValidateFileSource is the file source's validation hook: what FileSourceConfigFromOptions cannot see from the
// options alone. The path must exist (a directory, a file, or a glob whose fixed directories exist) and every file
// it names now must pass the guard; a following source checks the files that appear later as it lists them.
func ValidateFileSource(cfg FileSourceConfig) error {
	if err := checkFileSourceSchema(cfg.Schema); err != nil {
		return &ConfigError{Code: sqlerr.DatatypeMismatch, Msg: err.Error(), Err: err}
	}
	files, err := listSourceFiles(state.OS, cfg.Path)
	if err == nil {
		err = guardFiles(cfg.Guard, files)
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
	files, err := listParquetFiles(state.OS, cfg.Path)
	if err == nil {
		err = guardFiles(cfg.Guard, files)
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
	return checkSinkColumns("parquet", cfg.Schema, func(t arrow.DataType) error {
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
	return checkSinkColumns("file", cfg.Schema, checkTextType)
}

func checkSinkColumns(kind string, schema *arrow.Schema, check func(arrow.DataType) error) error {
	if schema == nil {
		return fmt.Errorf("%s sink: no schema", kind)
	}
	for _, f := range schema.Fields() {
		if err := check(f.Type); err != nil {
			return columnError(f.Name, "%s sink: column %s: %v", kind, f.Name, err)
		}
	}
	return nil
}
