package planner

import (
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/clinksql/clinksql/exec/operators"
	"github.com/clinksql/clinksql/sql/parser"
	"github.com/clinksql/clinksql/sqlerr"
)

// The file and Parquet connectors' configurations are read from a catalog object's options here, once for CREATE
// (which also runs the connector's validation hook, so a statement that says it worked can run) and once for each
// job or SELECT that uses them (which runs the hook again for the sources, whose files may have changed).

// connectorPath resolves the 'path' option; a refusal is the option's.
func connectorPath(env Env, opts map[string]string) (string, error) {
	path, err := env.Path(opts["path"])
	if err != nil {
		return "", &operators.ConfigError{Code: sqlerr.Code(err), Option: "path", Msg: err.Error(), Err: err}
	}
	return path, nil
}

func parquetSourceConfig(env Env, opts map[string]string, schema *arrow.Schema) (operators.ParquetSourceConfig, error) {
	path, err := connectorPath(env, opts)
	return operators.ParquetSourceConfig{Path: path, Schema: schema, Guard: env.Confine}, err
}

func fileSourceConfig(env Env, opts map[string]string, schema *arrow.Schema) (operators.FileSourceConfig, error) {
	path, err := connectorPath(env, opts)
	if err != nil {
		return operators.FileSourceConfig{}, err
	}
	cfg, err := operators.FileSourceConfigFromOptions(schema, path, opts)
	cfg.Guard = env.Confine
	return cfg, err
}

func parquetSinkConfig(env Env, opts map[string]string, schema *arrow.Schema) (operators.ParquetSinkConfig, error) {
	path, err := connectorPath(env, opts)
	if err != nil {
		return operators.ParquetSinkConfig{}, err
	}
	cfg, err := operators.ParquetSinkConfigFromOptions(schema, path, opts)
	if err == nil {
		err = operators.ValidateParquetSink(cfg)
	}
	cfg.Guard = env.Confine
	return cfg, err
}

func fileSinkConfig(env Env, opts map[string]string, schema *arrow.Schema) (operators.FileSinkConfig, error) {
	path, err := connectorPath(env, opts)
	if err != nil {
		return operators.FileSinkConfig{}, err
	}
	cfg, err := operators.FileSinkConfigFromOptions(schema, path, opts)
	if err == nil {
		err = operators.ValidateFileSink(cfg)
	}
	cfg.Guard = env.Confine
	return cfg, err
}

// configError turns a connector's configuration error into the statement's: its SQLSTATE (never XX000: what a
// connector refuses is the user's to fix), at the position at gives for the option or column it names. prefix
// (such as `stream "s": `) starts the message of an error found outside the CREATE statement.
func configError(err error, prefix string, at func(option, column string) int) error {
	var ce *operators.ConfigError
	if errors.As(err, &ce) {
		var se *sqlerr.Error
		if errors.As(ce.Err, &se) && se.Code == ce.Code {
			c := *se
			c.Msg, c.Pos = prefix+c.Msg, at(ce.Option, ce.Column)
			return &c
		}
		code := ce.Code
		if code == "" {
			code = sqlerr.InvalidParameter
		}
		return sqlerr.New(code, at(ce.Option, ce.Column), "%s%s", prefix, ce.Msg)
	}
	var se *sqlerr.Error
	if errors.As(err, &se) && se.Code != sqlerr.InternalError {
		return se.WithPos(at("", ""))
	}
	return sqlerr.New(sqlerr.InvalidParameter, at("", ""), "%s%v", prefix, err)
}

// definitionPos is configError's at for a CREATE statement: the option's key, the column's type, else the
// connector option.
func definitionPos(pos map[string]int, defs []parser.ColumnDef) func(option, column string) int {
	return func(option, column string) int {
		if column != "" {
			for _, d := range defs {
				if d.Name == column {
					return d.Type.P
				}
			}
		}
		if p, ok := pos[option]; ok && option != "" {
			return p
		}
		return pos["connector"]
	}
}

// noPos is configError's at for an object used by a later statement.
func noPos(string, string) int { return sqlerr.NoPos }

func objectPrefix(kind, name string) string { return fmt.Sprintf("%s %q: ", kind, name) }
