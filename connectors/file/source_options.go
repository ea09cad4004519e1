package file

import (
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/clinksql/clinksql/connectors"
	"github.com/clinksql/clinksql/exec/expr"
	"github.com/clinksql/clinksql/sqlerr"
)

// SourceConfigFromOptions reads the WITH options of a CSV or JSON-lines file source (connector = 'file' or
// 'filesystem'); path is the 'path' option, already checked against the allowed directories and made absolute.
//
//	'format'                   'csv' or 'json' (JSON lines), required
//	'csv.header'               'true': the first line of every file is a header and is skipped (default 'false')
//	'source.monitor-interval'  follow the path: list it again every interval ('10s', '1 min', '500 ms') and read
//	                           the files that appeared; absent: bounded, the files present at the start are read
//	'errors.bad-rows'          'skip' (default): a row that cannot be read is counted in the job's errors, logged
//	                           once per file and skipped; 'fail': it fails the job, naming file, line and column
//	'csv.ignore-parse-errors'  Flink's spelling ('json.ignore-parse-errors' for JSON): 'true' is 'skip', 'false'
//	                           is 'fail'; it must agree with 'errors.bad-rows' when both are given
//
// 'connector' and 'path' are accepted and ignored (path comes as the argument); any other key is an error, so a
// misspelt option does not silently change what is read.
func SourceConfigFromOptions(schema *arrow.Schema, path string, opts map[string]string) (SourceConfig, error) {
	cfg := SourceConfig{Path: path, Schema: schema, BadRows: BadRowsSkip}
	badRows, flinkIgnore := "", ""
	for key, val := range connectors.SortedOptions(opts) {
		switch strings.ToLower(key) {
		case "connector", "path":
		case "format":
			switch f := strings.ToLower(val); f {
			case "csv", "json":
				cfg.Format = f
			default:
				return cfg, connectors.OptionError(key, "file source: option 'format' = '%s': want 'csv' or 'json'", val)
			}
		case "csv.header":
			b, err := connectors.ParseBool(val)
			if err != nil {
				return cfg, connectors.OptionError(key, "file source: option '%s' = '%s': %v", key, val, err)
			}
			cfg.CSVHeader = b
		case "source.monitor-interval":
			us, err := expr.ParseInterval(val)
			if err != nil || us <= 0 {
				return cfg, connectors.OptionError(key, "file source: option '%s' = '%s': want a positive interval such as '10s' or '1 min'", key, val)
			}
			cfg.Follow, cfg.MonitorInterval = true, time.Duration(us)*time.Microsecond
		case "errors.bad-rows":
			switch v := strings.ToLower(val); v {
			case BadRowsSkip, BadRowsFail:
				badRows = v
			default:
				return cfg, connectors.OptionError(key, "file source: option '%s' = '%s': want 'skip' or 'fail'", key, val)
			}
		case "csv.ignore-parse-errors", "json.ignore-parse-errors":
			b, err := connectors.ParseBool(val)
			if err != nil {
				return cfg, connectors.OptionError(key, "file source: option '%s' = '%s': %v", key, val, err)
			}
			flinkIgnore = BadRowsFail
			if b {
				flinkIgnore = BadRowsSkip
			}
		default:
			return cfg, connectors.OptionError(key, "file source: unknown option '%s' (known: format, csv.header, source.monitor-interval, errors.bad-rows)", key)
		}
	}
	if cfg.Format == "" {
		return cfg, connectors.OptionError("", "file source: option 'format' is required ('csv' or 'json')")
	}
	for key := range connectors.SortedOptions(opts) {
		k := strings.ToLower(key)
		if strings.HasPrefix(k, "csv.") && cfg.Format != "csv" || strings.HasPrefix(k, "json.") && cfg.Format != "json" {
			return cfg, connectors.OptionError(key, "file source: option '%s' does not apply to format '%s'", key, cfg.Format)
		}
	}
	switch {
	case badRows != "" && flinkIgnore != "" && badRows != flinkIgnore:
		return cfg, connectors.OptionError("errors.bad-rows", "file source: options 'errors.bad-rows' and '%s.ignore-parse-errors' disagree", cfg.Format)
	case badRows != "":
		cfg.BadRows = badRows
	case flinkIgnore != "":
		cfg.BadRows = flinkIgnore
	}
	if err := checkSourceSchema(schema); err != nil {
		return cfg, &connectors.ConfigError{Code: sqlerr.DatatypeMismatch, Msg: err.Error(), Err: err}
	}
	return cfg, nil
}
