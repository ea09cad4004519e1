package connectors

import (
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"maps"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/clinksql/clinksql/exec/expr"
	"github.com/clinksql/clinksql/sqlerr"
)

// PathGuard confines the files of a file or Parquet connector: it returns nil for a path the connector may read
// or write, and an error (SQLSTATE 42501) for one it may not, resolving symbolic links first. A connector calls it
// on every file a directory or glob listing names, and again right before it opens a file or creates a directory,
// so a link swapped after the statement was checked leads nowhere either. nil allows every path.
type PathGuard func(path string) error

// Check calls the guard; a nil guard allows every path.
func (g PathGuard) Check(path string) error {
	if g == nil {
		return nil
	}
	return g(path)
}

// ConfigError is a connector configuration no job could run with, found by a connector's Validate or its options
// reader, before any job runs. The planner reports it with Code at the WITH option Option names, or at the
// definition of Column.
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

// OptionError is a value the WITH option cannot take (22023 at the option).
func OptionError(option, format string, args ...any) *ConfigError {
	return &ConfigError{Code: sqlerr.InvalidParameter, Option: option, Msg: fmt.Sprintf(format, args...)}
}

// DurationOption reads an option's duration in Flink's forms ('30 s', '5 min', '100ms') or ours ('10 seconds');
// zero is allowed (meaning off) only where zeroOK. A bad value is 22023 at the option.
func DurationOption(key, v string, zeroOK bool) (time.Duration, error) {
	us, err := expr.ParseInterval(flinkDuration(v))
	if err != nil || us < 0 || us == 0 && !zeroOK {
		return 0, OptionError(key, "option '%s' = '%s': want a duration such as '30 s', '5 min' or '100 ms'", key, v)
	}
	return time.Duration(us) * time.Microsecond, nil
}

// flinkDuration spells Flink's unit abbreviations the way our interval parser reads them.
func flinkDuration(v string) string {
	v = strings.TrimSpace(v)
	i := strings.IndexFunc(v, func(r rune) bool { return !(r >= '0' && r <= '9' || r == '.') })
	if i <= 0 {
		return v
	}
	unit := strings.ToLower(strings.TrimSpace(v[i:]))
	switch unit {
	case "ms", "milli", "millis", "millisecond", "milliseconds":
		unit = "milliseconds"
	case "s", "sec", "secs", "second", "seconds":
		unit = "seconds"
	case "min", "mins", "minute", "minutes", "m":
		unit = "minutes"
	case "h", "hour", "hours":
		unit = "hours"
	case "d", "day", "days":
		unit = "days"
	}
	return v[:i] + " " + unit
}

// sensitiveKeys are the parts of option names whose values are secrets (Flink hides the same ones).
var sensitiveKeys = []string{"password", "secret", "token", "apikey", "api-key", "auth-params", "service-key",
	"basic-auth", "jaas.config", "account.key", "http-headers"}

// Masked is an option's value as the catalog shows it (SHOW STREAMS, SHOW SINKS, psql's \d+): the value of an
// option that names a secret (a password, a token, a JAAS configuration) as ******, and a URL's password
// (postgres://user:pw@host) as ******; every other value as it is. The catalog keeps the real value.
func Masked(key, value string) string {
	k := strings.ToLower(key)
	for _, s := range sensitiveKeys {
		if strings.Contains(k, s) {
			return "******"
		}
	}
	if strings.Contains(value, "://") && strings.Contains(value, "@") {
		if u, err := url.Parse(strings.TrimPrefix(value, "jdbc:")); err == nil && u.User != nil {
			if _, has := u.User.Password(); has {
				u.User = url.UserPassword(u.User.Username(), "xxxxxx")
				masked := strings.Replace(u.String(), ":xxxxxx@", ":******@", 1)
				if strings.HasPrefix(value, "jdbc:") {
					masked = "jdbc:" + masked
				}
				return masked
			}
		}
	}
	return value
}

// ColumnError is a column the connector cannot carry (42804 at the column's type).
func ColumnError(column, format string, args ...any) *ConfigError {
	return &ConfigError{Code: sqlerr.DatatypeMismatch, Column: column, Msg: fmt.Sprintf(format, args...)}
}

// PathError is a listing's error as the 'path' option's: a path that does not exist is 58P01, a refusal of the
// guard keeps its code.
func PathError(who, path string, err error) *ConfigError {
	code := sqlerr.IOError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		code = sqlerr.UndefinedFile
	case sqlerr.Code(err) != "":
		code = sqlerr.Code(err)
	}
	return &ConfigError{Code: code, Option: "path", Msg: fmt.Sprintf("%s: %s: %v", who, path, err), Err: err}
}

// CheckSinkColumns refuses the first column whose type check refuses (42804 at the column).
func CheckSinkColumns(kind string, schema *arrow.Schema, check func(arrow.DataType) error) error {
	if schema == nil {
		return fmt.Errorf("%s sink: no schema", kind)
	}
	for _, f := range schema.Fields() {
		if err := check(f.Type); err != nil {
			return ColumnError(f.Name, "%s sink: column %s: %v", kind, f.Name, err)
		}
	}
	return nil
}

// SortedOptions yields a connector's options in key order (so that the first bad one named is always the same),
// their values trimmed of white space.
func SortedOptions(opts map[string]string) iter.Seq2[string, string] {
	return func(yield func(string, string) bool) {
		for _, key := range slices.Sorted(maps.Keys(opts)) {
			if !yield(key, strings.TrimSpace(opts[key])) {
				return
			}
		}
	}
}

// ParseBool reads a boolean option: 'true' or 'false', in any case.
func ParseBool(val string) (bool, error) {
	switch strings.ToLower(val) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, errors.New("want 'true' or 'false'")
}
