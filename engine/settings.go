package engine

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/clinksql/clinksql/checkpoint"
	"github.com/clinksql/clinksql/exec/expr"
	"github.com/clinksql/clinksql/sql/planner"
	"github.com/clinksql/clinksql/sqlerr"
)

// The job settings a session carries into the jobs it starts, and their defaults (DESIGN.md: a checkpoint every
// second, so views are readable soon after data arrives).
var jobSettingDefaults = map[string]string{
	"checkpoint.interval": "1s",
	"checkpoint.mode":     "aligned",
	"checkpoint.history":  "100",
	"parallelism":         "1",
	"errors.mode":         "null",
	"state.ttl":           "0",
	// The in-memory budget of each keyed-state store (one per keyed operator subtask): its write-back cache of
	// recent changes and reads, and its key filter; "auto" sizes it from the machine (state.DefaultCacheBytes).
	"state.cache_size": "auto",
	// How often every source subtask of a job emits a latency marker, whose age the sinks record in
	// clinksql_sink_latency_seconds (Flink's metrics.latency.interval); 0: off, or the server's default
	// (engine.Config.LatencyMarkerInterval).
	"metrics.latency.interval": "0",
	// How far in event time a source subtask may run ahead of the slowest source subtask of its job (of those with
	// a watermark) before it waits for that one to catch up (Flink's watermark alignment; exec.JobConfig.
	// WatermarkMaxDrift); 0: sources are never held.
	"watermark.alignment.max_drift": "1s",
	// The session's time zone (Postgres' TimeZone, Flink's table.local-time-zone): how a TIMESTAMP WITH TIME ZONE
	// prints, casts to and from TIMESTAMP, DATE and text, and windows over one are laid out. A job keeps the zone it
	// was started with.
	"timezone": "UTC",
}

// settingAliases are other names of settings: Flink's, and Postgres' SET TIME ZONE.
var settingAliases = map[string]string{"time zone": "timezone", "table.local-time-zone": "timezone"}

// pgSettings are the Postgres parameters clients read or set at connect time; they are accepted and shown, and
// change nothing (text is always UTF-8).
var pgSettings = map[string]string{
	"server_version":                      "16.0",
	"server_version_num":                  "160000",
	"server_encoding":                     "UTF8",
	"client_encoding":                     "UTF8",
	"datestyle":                           "ISO, MDY",
	"intervalstyle":                       "postgres",
	"integer_datetimes":                   "on",
	"standard_conforming_strings":         "on",
	"application_name":                    "",
	"transaction_isolation":               "read committed",
	"transaction isolation level":         "read committed",
	"default_transaction_isolation":       "read committed",
	"search_path":                         "public",
	"extra_float_digits":                  "1",
	"statement_timeout":                   "0",
	"lock_timeout":                        "0",
	"idle_in_transaction_session_timeout": "0",
	"client_min_messages":                 "notice",
	"bytea_output":                        "hex",
	"is_superuser":                        "on",
	"max_identifier_length":               "63",
}

// limitSettings bound what one statement may take, so that no single client takes the server down; they apply
// to the session's own statements.
var limitSettings = map[string]string{
	// The longest statement text accepted (the REPL's and exec's statements, a pgwire Query or Parse), checked
	// before parsing: parsing takes several times a statement's size. Postgres' only limit is its 1 GB message.
	"max_statement_size": "4MB",
	// The most memory a SELECT may keep for rows it can only return at its end (ORDER BY, an updating result).
	"max_result_memory": "256MB",
	// How far a SUBSCRIBE may fall behind the changelog it reads (bytes committed that its client has not taken
	// yet) before it is cut off with 53400 (subscribe.go).
	"max_subscribe_lag": "256MB",
}

// jobSettings are the parsed job settings.
type jobSettings struct {
	interval    time.Duration
	mode        checkpoint.Mode
	adaptive    bool
	parallelism int
	errors      expr.ErrorMode
	stateTTL    int64         // microseconds; 0 keeps join state forever
	history     int           // checkpoint records a job keeps (SHOW CHECKPOINTS, clink_catalog.checkpoints)
	stateCache  int64         // bytes per keyed-state store (state.Options.CacheBytes); 0: state.DefaultCacheBytes
	latency     time.Duration // latency marker interval; 0: the engine's default (off unless configured)
	maxDrift    time.Duration // watermark alignment; 0: off
	zone        *time.Location
}

func (s jobSettings) planner() planner.Settings {
	return planner.Settings{Parallelism: s.parallelism, Errors: s.errors, StateTTL: s.stateTTL, CheckpointInterval: s.interval,
		TimeZone: s.zone}
}

// settingsFrom parses job settings (missing ones take their defaults).
func settingsFrom(m map[string]string) (jobSettings, error) {
	var s jobSettings
	get := func(k string) string {
		if v, ok := m[k]; ok {
			return v
		}
		return jobSettingDefaults[k]
	}
	for _, k := range []string{"checkpoint.interval", "checkpoint.mode", "checkpoint.history", "parallelism", "errors.mode", "state.ttl", "state.cache_size", "metrics.latency.interval", "watermark.alignment.max_drift", "timezone"} {
		if err := applySetting(&s, k, get(k)); err != nil {
			return s, err
		}
	}
	return s, nil
}

// applySetting checks and applies one job setting.
func applySetting(s *jobSettings, name, value string) error {
	v := strings.ToLower(strings.TrimSpace(value))
	switch name {
	case "checkpoint.interval":
		us, err := intervalSetting(name, value, "e.g. '10s', '500 ms', '0' for off")
		if err != nil {
			return err
		}
		s.interval = time.Duration(us) * time.Microsecond
	case "checkpoint.mode":
		switch v {
		case "aligned":
			s.mode, s.adaptive = checkpoint.Aligned, false
		case "unaligned":
			s.mode, s.adaptive = checkpoint.Unaligned, false
		case "adaptive":
			s.mode, s.adaptive = checkpoint.Aligned, true
		default:
			return sqlerr.New(sqlerr.InvalidParameter, sqlerr.NoPos, "invalid value for checkpoint.mode: %q (aligned, unaligned or adaptive)", value)
		}
	case "checkpoint.history":
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 10000 {
			return sqlerr.New(sqlerr.InvalidParameter, sqlerr.NoPos, "invalid value for checkpoint.history: %q (the checkpoints a job's history keeps, 1 to 10000)", value)
		}
		s.history = n
	case "state.ttl":
		us, err := intervalSetting(name, value, "e.g. '1h', '30 min', '0' for no expiry")
		if err != nil {
			return err
		}
		s.stateTTL = us
	case "state.cache_size":
		if v == "auto" {
			s.stateCache = 0
			break
		}
		n, err := parseBytes(name, value)
		if err != nil || n < 1<<20 {
			return sqlerr.New(sqlerr.InvalidParameter, sqlerr.NoPos, "invalid value for state.cache_size: %q (e.g. '256MB', '2GB', at least 1MB; 'auto' sizes it from the machine's memory)", value)
		}
		s.stateCache = n
	case "metrics.latency.interval":
		us, err := intervalSetting(name, value, "e.g. '200 ms', at least 1 ms; '0' for off")
		if err != nil {
			return err
		}
		if us > 0 && us < 1000 {
			return sqlerr.New(sqlerr.InvalidParameter, sqlerr.NoPos, "invalid value for metrics.latency.interval: %q (e.g. '200 ms', at least 1 ms; '0' for off)", value)
		}
		s.latency = time.Duration(us) * time.Microsecond
	case "watermark.alignment.max_drift":
		us, err := intervalSetting(name, value, "e.g. '1s', '500 ms', '0' for off")
		if err != nil {
			return err
		}
		s.maxDrift = time.Duration(us) * time.Microsecond
	case "timezone":
		loc, err := expr.LoadZone(value)
		if err != nil {
			return err
		}
		s.zone = loc
	case "parallelism":
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 256 {
			return sqlerr.New(sqlerr.InvalidParameter, sqlerr.NoPos, "invalid value for parallelism: %q (1 to 256)", value)
		}
		s.parallelism = n
	case "errors.mode":
		switch v {
		case "null":
			s.errors = expr.ErrorsNull
		case "fail":
			s.errors = expr.ErrorsFail
		default:
			return sqlerr.New(sqlerr.InvalidParameter, sqlerr.NoPos, "invalid value for errors.mode: %q (null or fail)", value)
		}
	default:
		return fmt.Errorf("unknown job setting %s", name)
	}
	return nil
}

// intervalSetting parses the interval value of setting name in microseconds, as planner.ParseInterval reads it, or
// 'off' for 0; a bad or negative value is 22023 with hint.
func intervalSetting(name, value, hint string) (int64, error) {
	v := strings.ToLower(strings.TrimSpace(value))
	if v == "off" {
		v = "0"
	}
	us, err := planner.ParseInterval(v, "")
	if err != nil || us < 0 {
		return 0, sqlerr.New(sqlerr.InvalidParameter, sqlerr.NoPos, "invalid value for %s: %q (%s)", name, value, hint)
	}
	return us, nil
}

// vars is a session's variables: job settings and Postgres parameters.
type vars map[string]string

func newVars() vars {
	v := vars{}
	maps.Copy(v, pgSettings)
	maps.Copy(v, jobSettingDefaults)
	maps.Copy(v, limitSettings)
	return v
}

// set checks and sets a variable; DEFAULT (value "", def) restores the default.
func (v vars) set(name, value string, def bool) error {
	name = strings.ToLower(name)
	if a, ok := settingAliases[name]; ok {
		name = a
	}
	if name == "timezone" && (strings.EqualFold(value, "local") || strings.EqualFold(value, "default")) {
		def = true // SET TIME ZONE LOCAL: the server's zone, UTC
	}
	dflt, isJob := jobSettingDefaults[name]
	pgDefault, isPG := pgSettings[name]
	limitDefault, isLimit := limitSettings[name]
	switch {
	case isLimit:
		if def {
			value = limitDefault
		}
		n, err := parseBytes(name, value)
		if err != nil {
			return err
		}
		value = formatBytes(n)
	case isJob:
		if def {
			value = dflt
		}
		var s jobSettings
		if err := applySetting(&s, name, value); err != nil {
			return err
		}
	case isPG:
		if def {
			value = pgDefault
		}
		if name == "client_encoding" && !strings.EqualFold(strings.ReplaceAll(value, "-", ""), "utf8") {
			return sqlerr.New(sqlerr.InvalidParameter, sqlerr.NoPos, "client_encoding %q is not supported: only UTF8", value)
		}
		if name == "statement_timeout" {
			ms, err := parseMillis(name, value)
			if err != nil {
				return err
			}
			value = formatMillis(ms) // as Postgres shows it: 5000 is 5s
		}
	default:
		return sqlerr.New(sqlerr.UndefinedObject, sqlerr.NoPos, "unrecognized configuration parameter %q", name)
	}
	v[name] = value
	return nil
}

// jobSettings returns the job settings in force, for a job started now.
func (v vars) jobSettings() map[string]string {
	out := map[string]string{}
	for k := range jobSettingDefaults {
		out[k] = v[k]
	}
	return out
}

func (v vars) sortedNames() []string {
	var names []string
	for k := range v {
		if k == "transaction isolation level" {
			continue
		}
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// zone is the session's time zone (UTC if the setting cannot be read: set checked it).
func (v vars) zone() *time.Location {
	loc, err := expr.LoadZone(v["timezone"])
	if err != nil {
		return time.UTC
	}
	return loc
}

// statementTimeout is statement_timeout as a duration; 0 is no timeout.
func (v vars) statementTimeout() time.Duration {
	ms, err := parseMillis("statement_timeout", v["statement_timeout"])
	if err != nil {
		return 0 // set checked it
	}
	return time.Duration(ms) * time.Millisecond
}

type timeUnit struct {
	name string
	ms   float64
}

// timeUnits are Postgres' units of a time setting, in milliseconds.
var timeUnits = []timeUnit{{"us", 0.001}, {"ms", 1}, {"s", 1000}, {"min", 60_000}, {"h", 3_600_000}, {"d", 86_400_000}}

// parseMillis reads a time setting as Postgres does: a number of milliseconds, or a number and a unit (us, ms, s,
// min, h, d; spaces allowed between), rounded to whole milliseconds, from 0 to 2147483647.
func parseMillis(name, value string) (int64, error) {
	v := strings.TrimSpace(value)
	num := strings.TrimRight(v, "abcdefghijklmnopqrstuvwxyz")
	unit := strings.TrimSpace(v[len(num):])
	bad := func(hint string) error {
		e := sqlerr.New(sqlerr.InvalidParameter, sqlerr.NoPos, "invalid value for parameter %q: %q", name, value)
		e.Hint = hint
		return e
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, bad("")
	}
	scale := 1.0
	if unit != "" {
		i := slices.IndexFunc(timeUnits, func(u timeUnit) bool { return u.name == unit })
		if i < 0 {
			return 0, bad(`Valid units for this parameter are "us", "ms", "s", "min", "h", and "d".`)
		}
		scale = timeUnits[i].ms
	}
	ms := math.Round(f * scale)
	if ms < 0 || ms > math.MaxInt32 {
		e := sqlerr.New(sqlerr.InvalidParameter, sqlerr.NoPos, "%s ms is outside the valid range for parameter %q (0 .. 2147483647)", strconv.FormatFloat(ms, 'f', -1, 64), name)
		return 0, e
	}
	return int64(ms), nil
}

// formatMillis prints milliseconds in the largest unit that divides them, as Postgres' SHOW does.
func formatMillis(ms int64) string {
	if ms == 0 {
		return "0"
	}
	for i := len(timeUnits) - 1; i >= 1; i-- {
		u := int64(timeUnits[i].ms)
		if ms%u == 0 {
			return strconv.FormatInt(ms/u, 10) + timeUnits[i].name
		}
	}
	return strconv.FormatInt(ms, 10) + "ms"
}

// limit returns a size setting in bytes.
func (v vars) limit(name string) int64 {
	n, err := parseBytes(name, v[name])
	if err != nil {
		n, _ = parseBytes(name, limitSettings[name]) // set checked it
	}
	return n
}

type byteUnit struct {
	name string
	n    int64
}

// byteUnits are Postgres' memory units.
var byteUnits = []byteUnit{{"B", 1}, {"kB", 1 << 10}, {"MB", 1 << 20}, {"GB", 1 << 30}, {"TB", 1 << 40}}

// parseBytes reads a size setting: a number of bytes, or a whole number and one of Postgres' memory units (B, kB,
// MB, GB, TB; spaces allowed between), from 1 kB to 1 TB.
func parseBytes(name, value string) (int64, error) {
	v := strings.TrimSpace(value)
	num := strings.TrimRightFunc(v, unicode.IsLetter)
	unit := strings.TrimSpace(v[len(num):])
	e := sqlerr.New(sqlerr.InvalidParameter, sqlerr.NoPos, "invalid value for parameter %q: %q", name, value)
	n, err := strconv.ParseInt(strings.TrimSpace(num), 10, 64)
	if err != nil {
		return 0, e
	}
	scale := int64(1)
	if unit != "" {
		i := slices.IndexFunc(byteUnits, func(u byteUnit) bool { return u.name == unit })
		if i < 0 {
			e.Hint = `Valid units for this parameter are "B", "kB", "MB", "GB", and "TB".`
			return 0, e
		}
		scale = byteUnits[i].n
	}
	if n < 1 || n > (1<<40)/scale || n*scale < 1<<10 {
		return 0, sqlerr.New(sqlerr.InvalidParameter, sqlerr.NoPos, "%q is outside the valid range for parameter %q (1kB .. 1TB)", value, name)
	}
	return n * scale, nil
}

// formatBytes prints a size in the largest unit that divides it, as Postgres' SHOW does.
func formatBytes(n int64) string {
	for i := len(byteUnits) - 1; i > 0; i-- {
		if n%byteUnits[i].n == 0 {
			return strconv.FormatInt(n/byteUnits[i].n, 10) + byteUnits[i].name
		}
	}
	return strconv.FormatInt(n, 10) + "B"
}
