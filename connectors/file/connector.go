package file

import (
	"github.com/clinksql/clinksql/connectors"
	"github.com/clinksql/clinksql/connectors/filelist"
	"github.com/clinksql/clinksql/connectors/txnfile"
	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/textform"
	"github.com/clinksql/clinksql/sqlerr"
	"github.com/clinksql/clinksql/state"
)

func init() {
	connectors.RegisterSource(sourceConnector{})
	connectors.RegisterSink(sinkConnector{})
}

// sourceConnector is connector = 'file' in CREATE STREAM: CSV or JSON-lines files, read once or followed.
type sourceConnector struct{}

func (sourceConnector) Name() string { return "file" }

func (sourceConnector) Options() connectors.OptionNames {
	return connectors.OptionNames{Names: []string{"path", "format", "csv.header", "source.monitor-interval",
		"errors.bad-rows", "csv.ignore-parse-errors", "json.ignore-parse-errors"}}
}

func (sourceConnector) Capabilities(opts map[string]string) connectors.SourceCapabilities {
	_, follow := opts["source.monitor-interval"]
	return connectors.SourceCapabilities{Bounded: !follow, Parallel: true, Replayable: true}
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
	p := connectors.SourcePlan{New: NewSource(cfg), Parallelism: env.Parallelism, Bounded: !cfg.Follow,
		Label: "Source: file " + spec.Object, Details: []string{"path: " + opts["path"], "format: " + cfg.Format}}
	if cfg.Follow {
		p.Details = append(p.Details, "reads: the files present, then new files as they appear")
	} else {
		p.Details = append(p.Details, "reads: the files present when the job starts")
	}
	return p, nil
}

func sourceConfig(spec connectors.Spec, opts map[string]string, env connectors.Env) (SourceConfig, error) {
	path, err := env.PathOption("file", opts, "a file, a directory or a glob")
	if err != nil {
		return SourceConfig{}, err
	}
	cfg, err := SourceConfigFromOptions(spec.Schema, path, opts)
	cfg.Guard = env.Confine
	return cfg, err
}

// ValidateSource is what SourceConfigFromOptions cannot see from the options alone. The path must exist (a
// directory, a file, or a glob whose fixed directories exist) and every file it names now must pass the guard; a
// following source checks the files that appear later as it lists them.
func ValidateSource(cfg SourceConfig) error {
	if err := checkSourceSchema(cfg.Schema); err != nil {
		return &connectors.ConfigError{Code: sqlerr.DatatypeMismatch, Msg: err.Error(), Err: err}
	}
	files, err := filelist.List(state.OS, cfg.Path, "")
	if err == nil {
		err = filelist.Guard(cfg.Guard, files)
	}
	if err != nil {
		return connectors.PathError("file source", cfg.Path, err)
	}
	return nil
}

// sinkConnector is connector = 'file' in CREATE SINK: CSV or JSON lines, two-phase commit, one file per subtask
// and checkpoint.
type sinkConnector struct{}

func (sinkConnector) Name() string { return "file" }

func (sinkConnector) Options() connectors.OptionNames {
	return connectors.OptionNames{Names: append([]string{"path", "format", "csv.header"}, txnfile.PartitionOptionNames...),
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
	details := []string{"path: " + opts["path"], "commit: two-phase, files appear when the checkpoint completes",
		"format: " + cfg.Format}
	if len(cfg.Partition.Keys) > 0 {
		details = append(details, cfg.Partition.Describe()...)
	}
	return connectors.SinkPlan{New: func(int) exec.Sink { return NewSink(cfg) }, Details: details}, nil
}

// sinkConfig reads and validates the options: what it refuses, no job could write.
func sinkConfig(spec connectors.Spec, opts map[string]string, env connectors.Env) (SinkConfig, error) {
	path, err := env.PathOption("file", opts, "")
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

// ValidateSink checks a known format and columns with a text form.
func ValidateSink(cfg SinkConfig) error {
	switch cfg.Format {
	case "csv", "json":
	default:
		return connectors.OptionError("format", "file sink: format '%s' is not supported (csv or json)", cfg.Format)
	}
	return connectors.CheckSinkColumns("file", cfg.Schema, textform.CheckType)
}
