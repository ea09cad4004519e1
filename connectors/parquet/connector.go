package parquet

import (
	"errors"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/clinksql/clinksql/connectors"
	"github.com/clinksql/clinksql/connectors/filelist"
	"github.com/clinksql/clinksql/connectors/txnfile"
	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/expr"
	"github.com/clinksql/clinksql/sqlerr"
	"github.com/clinksql/clinksql/state"
)

func init() {
	connectors.RegisterSource(sourceConnector{})
	connectors.RegisterSink(sinkConnector{})
}

// sourceConnector is connector = 'parquet' in CREATE STREAM: the files present when a job starts, read once.
type sourceConnector struct{}

func (sourceConnector) Name() string { return "parquet" }

func (sourceConnector) Options() connectors.OptionNames {
	return connectors.OptionNames{Names: []string{"path"}}
}

func (sourceConnector) Capabilities(map[string]string) connectors.SourceCapabilities {
	return connectors.SourceCapabilities{Bounded: true, Parallel: true, Replayable: true}
}

func (sourceConnector) Validate(spec connectors.Spec, opts map[string]string, env connectors.Env) error {
	cfg, err := sourceConfig(spec, opts, env)
	if err != nil {
		return err
	}
	return ValidateSource(cfg)
}

func (sourceConnector) Build(spec connectors.Spec, opts map[string]string, env connectors.Env) (connectors.SourcePlan, error) {
	cfg, err := sourceConfig(spec, opts, env)
	if err == nil && !env.Restoring {
		err = ValidateSource(cfg)
	}
	if err != nil {
		return connectors.SourcePlan{}, err
	}
	return connectors.SourcePlan{New: func(int) exec.Source { return NewSource(cfg) }, Parallelism: env.Parallelism,
		Bounded: true, Label: "Source: parquet " + spec.Object,
		Details: []string{"path: " + opts["path"], "reads: the files present when the job starts"}}, nil
}

func sourceConfig(spec connectors.Spec, opts map[string]string, env connectors.Env) (SourceConfig, error) {
	path, err := env.PathOption("parquet", opts, "a directory or a glob")
	return SourceConfig{Path: path, Schema: spec.Schema, Guard: env.Confine}, err
}

// ValidateSource is what the options alone cannot tell: every column's type must be readable from Parquet, the
// path must exist, every file it names must pass the guard, and every file must hold each column in a type that
// converts to the declared one (42804 naming the file, the column and both types).
func ValidateSource(cfg SourceConfig) error {
	for _, f := range cfg.Schema.Fields() {
		if !pqSourceType(f.Type) {
			return connectors.ColumnError(f.Name, "parquet source: column %s: type %s cannot be read from Parquet", f.Name, expr.TypeName(f.Type))
		}
	}
	files, err := filelist.List(state.OS, cfg.Path, ".parquet")
	if err == nil {
		err = filelist.Guard(cfg.Guard, files)
	}
	if err != nil {
		return connectors.PathError("parquet source", cfg.Path, err)
	}
	s := &parquetSource{cfg: cfg, fsys: state.OS}
	for _, f := range files {
		if _, err := s.checkFile(f); err != nil {
			var pe *pqPlanError
			if errors.As(err, &pe) {
				return connectors.ColumnError(pe.col, "%v", err)
			}
			return &connectors.ConfigError{Code: sqlerr.IOError, Option: "path", Msg: err.Error(), Err: err}
		}
	}
	return nil
}

// sinkConnector is connector = 'parquet' in CREATE SINK: two-phase commit, one file per subtask and checkpoint.
type sinkConnector struct{}

func (sinkConnector) Name() string { return "parquet" }

func (sinkConnector) Options() connectors.OptionNames {
	return connectors.OptionNames{Names: append([]string{"path", "parquet.compression"}, txnfile.PartitionOptionNames...),
		Unsupported: txnfile.PartitionUnsupported}
}

func (sinkConnector) Capabilities(map[string]string) connectors.SinkCapabilities {
	return connectors.SinkCapabilities{Transactional: true, CommitRecoverable: true, Partitioned: true}
}

func (sinkConnector) Validate(spec connectors.Spec, opts map[string]string, env connectors.Env) error {
	_, err := sinkConfig(spec, opts, env)
	return err
}

func (sinkConnector) Build(spec connectors.Spec, opts map[string]string, env connectors.Env) (connectors.SinkPlan, error) {
	cfg, err := sinkConfig(spec, opts, env)
	if err != nil {
		return connectors.SinkPlan{}, err
	}
	details := []string{"path: " + opts["path"], "commit: two-phase, files appear when the checkpoint completes"}
	if len(cfg.Partition.Keys) > 0 {
		details = append(details, cfg.Partition.Describe()...)
	}
	return connectors.SinkPlan{New: func(int) exec.Sink { return NewSink(cfg) }, Details: details}, nil
}

// sinkConfig reads and validates the options: what it refuses, no job could write.
func sinkConfig(spec connectors.Spec, opts map[string]string, env connectors.Env) (SinkConfig, error) {
	path, err := env.PathOption("parquet", opts, "")
	if err != nil {
		return SinkConfig{}, err
	}
	cfg, err := SinkConfigFromOptions(spec.Schema, path, opts)
	if err == nil {
		err = ValidateSink(cfg)
	}
	if err == nil {
		cfg.Partition, err = txnfile.PartitionConfigFromOptions(spec.Schema, spec.PartitionKeys, opts)
	}
	cfg.Guard = env.Confine
	return cfg, err
}

// ValidateSink checks that the compression codec is one the sink knows and that every column has a Parquet form.
func ValidateSink(cfg SinkConfig) error {
	if _, err := parquetCodec(cfg.Compression); err != nil {
		return connectors.OptionError("parquet.compression", "parquet sink: option 'parquet.compression' = '%s': %v", cfg.Compression, err)
	}
	return connectors.CheckSinkColumns("parquet", cfg.Schema, func(t arrow.DataType) error {
		switch t.ID() {
		case arrow.STRUCT, arrow.LIST, arrow.MAP:
			var leaves int
			_, _, err := nestedNode(t, true, &leaves, 0)
			return err
		}
		_, _, err := parquetNode(t)
		return err
	})
}
