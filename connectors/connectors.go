package connectors

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/sqlerr"
)

// Source is a connector that a stream reads from (CREATE STREAM ... WITH (connector = Name())). The planner calls
// Validate once at CREATE and Build for every job or SELECT that reads the stream; both take the options without
// 'connector', already checked against Options() (CheckOptions).
type Source interface {
	// Name is the value of the 'connector' option, lower case.
	Name() string
	// Options are the WITH options it knows.
	Options() OptionNames
	// Capabilities says what its sources do with these options (validated ones: a bad value may read as false).
	Capabilities(opts map[string]string) SourceCapabilities
	// Validate refuses, with a *ConfigError, options no job could run with: bad values (22023 at the option),
	// columns it cannot carry (42804 at the column), paths that do not exist or are not allowed.
	Validate(spec Spec, opts map[string]string, env Env) error
	// Build makes the source node. It refuses what Validate refuses (a stream's files may have changed since its
	// CREATE), except what env.Restoring leaves to the job's own restore.
	Build(spec Spec, opts map[string]string, env Env) (SourcePlan, error)
}

// Sink is a connector that a sink writes to (CREATE SINK ... WITH (connector = Name())). Its options never
// include 'connector', 'type' or 'primary_key': an upsert sink's row kind column is the planner's.
type Sink interface {
	Name() string
	Options() OptionNames
	Capabilities(opts map[string]string) SinkCapabilities
	Validate(spec Spec, opts map[string]string, env Env) error
	Build(spec Spec, opts map[string]string, env Env) (SinkPlan, error)
}

// SourceCapabilities are what a source connector's sources do.
type SourceCapabilities struct {
	// Bounded sources finish by themselves: a SELECT over them ends, a job over them finishes.
	Bounded bool
	// Parallel sources split their input over the node's subtasks (Build gives the node Env.Parallelism);
	// otherwise Build gives it one subtask.
	Parallel bool
	// Replayable sources restore from a checkpoint's offset and reproduce exactly what followed it; a job reading
	// one that is not is at-least-once (the planner says so in a NOTICE).
	Replayable bool
	// Changelog sources yield updates and deletes, not only inserts.
	Changelog bool
	// Metadata are the record attributes its streams' metadata columns may carry (METADATA FROM 'key'); none:
	// the planner refuses metadata columns.
	Metadata []MetadataKey
	// PrimaryKey sources use a PRIMARY KEY ... NOT ENFORCED (upsert-kafka's message key); the planner refuses one
	// for the others.
	PrimaryKey bool
	// Watermarks sources evaluate the stream's WATERMARK expression themselves, per split (Spec.Watermark), and
	// report the minimum over their splits; the planner then does not wrap them in a source-wide watermark.
	Watermarks bool
	// SingleReader, when not "", is the option naming an external resource that one reader at a time may use (a
	// replication slot: 'slot.name'; a durable consumer: 'nats.consumer'): the engine refuses (55006) a second job
	// over a stream that a live job reads, and a statement that reads it twice, with a hint to give a second stream
	// its own value of that option.
	SingleReader string
	// ColumnSubset sources build exactly the columns of the schema they are given, matched by name, and produce
	// the same values for a column whatever other columns are asked for: a narrower schema is a projection of the
	// full one, and a checkpoint's offsets mean the same rows. The planner then asks them for only the columns a
	// query uses (the Nexmark generator skips the strings nobody reads).
	ColumnSubset bool
}

// SourceReleaser is implemented by a Source connector whose sources hold external resources beyond a job's life (a
// replication slot that keeps WAL in someone else's server until it is dropped). The engine calls Release, with no
// job of the stream running (each stopped and its sources closed), when they are no longer needed:
// ReleaseStream after DROP STREAM removed the stream, ReleaseJob after the last live job reading the stream was
// dropped (the next job starts afresh anyway). Release must be idempotent (a resource already gone is not an
// error) and must never drop what it did not create. An error says what was left behind and how to remove it by
// hand: the engine reports it as a notice, and the DROP stands.
type SourceReleaser interface {
	Release(ctx context.Context, spec Spec, opts map[string]string, env Env, what Releasing) error
}

// Releasing says why a SourceReleaser is called.
type Releasing uint8

const (
	// ReleaseJob: no job reads the stream any more; the stream stays (a resource its definition names, such as a
	// publication other streams may share, stays too).
	ReleaseJob Releasing = iota + 1
	// ReleaseStream: the stream was dropped; everything it created goes.
	ReleaseStream
)

// MetadataKey is an attribute of a connector's records that a metadata column can carry.
type MetadataKey struct {
	Name string
	// Types are the SQL types (catalog type names) a column of it may be declared with.
	Types []string
	// Writable keys are written by a sink from a non-VIRTUAL column; the others are read-only (VIRTUAL in a
	// stream, refused in a sink).
	Writable bool
}

// SinkCapabilities are what a sink connector's sinks do.
type SinkCapabilities struct {
	// Transactional sinks publish a checkpoint's rows only when it completes (two-phase commit); a sink that is
	// not (blackhole) publishes nothing anyone reads.
	Transactional bool
	// CommitRecoverable sinks can run Commit(N) again after a crash, from what PreCommit(N) staged. Every current
	// sink can; a sink whose commit a restart cannot redo (a Kafka transaction) needs CONFIRMED markers and
	// in-doubt resolution.
	CommitRecoverable bool
	// Changelog sinks take an updating result as it is (its row kinds), without an upsert sink's row kind column.
	Changelog bool
	// Metadata are the attributes a sink's metadata columns may write (only Writable ones); PrimaryKey sinks use
	// a PRIMARY KEY ... NOT ENFORCED.
	Metadata   []MetadataKey
	PrimaryKey bool
	// Partitioned sinks take PARTITIONED BY (Spec.PartitionKeys): the file and Parquet sinks write each row into
	// the Hive-style directory its partition columns name. The planner refuses PARTITIONED BY for the others.
	Partitioned bool
}

// Column is one column of a stream or sink definition.
type Column struct {
	Name string
	Type arrow.DataType
	// MetadataKey is the connector metadata a column reads (METADATA FROM 'key'); "" for a column of the data.
	MetadataKey string
	// Virtual marks a read-only metadata column, which a sink does not write.
	Virtual bool
}

// Spec is the catalog object a connector reads or writes.
type Spec struct {
	Object string        // the stream's or sink's name
	Schema *arrow.Schema // the columns as Arrow fields, in order
	// Columns are the column definitions, index for index with Schema.
	Columns []Column
	// PrimaryKey names the PRIMARY KEY columns.
	PrimaryKey []string
	// PartitionKeys name a sink's PARTITIONED BY columns, in order (only for a connector whose capabilities say
	// Partitioned; the planner checked that they are columns of a PartitionKeyType).
	PartitionKeys []string
	// Watermark is the stream's WATERMARK FOR expression as a function of a batch (the largest event time its rows
	// imply; ok false when none has one), given to sources whose capabilities say Watermarks; nil otherwise.
	Watermark func(ctx *exec.TaskContext, rec arrow.RecordBatch) (wm int64, ok bool, err error)
}

// Env is what a connector may use of the engine that runs it.
type Env struct {
	// Path resolves a path option: relative paths are under the data directory; a path outside the allowed
	// directories is refused (42501). nil takes a path as it is.
	Path func(string) (string, error)
	// Confine checks each file a connector lists, opens or creates (see PathGuard).
	Confine PathGuard
	// Restoring is set when a job is planned again to restore it: its sources' files are checked by the job's own
	// restore, which says what changed since its checkpoint, not by Build.
	Restoring bool
	// Parallelism is the session's: the subtasks of a Parallel source's node.
	Parallelism int
	// CheckpointInterval is the job's checkpoint interval when a job is planned (INSERT), 0 at CREATE and for
	// an ad-hoc SELECT: what a sink's transactions must outlive.
	CheckpointInterval time.Duration
}

// ResolvePath resolves the 'path' option through env.Path; a refusal is the option's.
func (env Env) ResolvePath(p string) (string, error) {
	if env.Path == nil {
		return p, nil
	}
	path, err := env.Path(p)
	if err != nil {
		return "", &ConfigError{Code: sqlerr.Code(err), Option: "path", Msg: err.Error(), Err: err}
	}
	return path, nil
}

// PathOption is connector's required 'path' option, resolved (ResolvePath). where, when not empty, says in the
// error of a missing path what it may name ("a directory or a glob").
func (env Env) PathOption(connector string, opts map[string]string, where string) (string, error) {
	if opts["path"] == "" {
		if where != "" {
			where = " (" + where + ")"
		}
		return "", OptionError("", "connector '%s' needs a 'path' option%s", connector, where)
	}
	return env.ResolvePath(opts["path"])
}

// SourcePlan is a built source node.
type SourcePlan struct {
	New         func(subtask int) exec.Source
	Parallelism int
	Bounded     bool
	// Label and Details are the node's EXPLAIN lines ("Source: datagen s", "rows: 10").
	Label   string
	Details []string
	// IdleTimeout: a subtask without data for this long stops holding the watermark back (0: never).
	IdleTimeout time.Duration
}

// SinkPlan is a built sink node. A sink runs at its input's parallelism.
type SinkPlan struct {
	New     func(subtask int) exec.Sink
	Details []string // the node's EXPLAIN details; its label is the sink's ("Sink: sink out")
	// Notices are warnings for the statement that plans the job (a transaction timeout that leaves little room).
	Notices []string
}

// OptionNames are the WITH options a connector knows, beside 'connector'.
type OptionNames struct {
	Names []string // exact names, lower case
	// Prefixes are families of names passed through to the connector, such as "fields." (datagen's per-column
	// options) or "properties."; the connector checks what follows.
	Prefixes []string
	// Unsupported are names of the system the connector follows (Flink's) that it refuses as not supported, so
	// that they are not reported as misspelt.
	Unsupported []string
}

// Known reports whether key (lower case) is one of the names or starts with one of the prefixes.
func (o OptionNames) Known(key string) bool {
	if slices.Contains(o.Names, key) {
		return true
	}
	for _, p := range o.Prefixes {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

// String lists the names, then the prefixes as 'prefix*'.
func (o OptionNames) String() string {
	all := slices.Clone(o.Names)
	for _, p := range o.Prefixes {
		all = append(all, p+"*")
	}
	return strings.Join(all, ", ")
}

// CheckOptions refuses the first option, in key order, that connector does not know (22023 at the option), with
// the list of the known ones.
func CheckOptions(connector string, known OptionNames, opts map[string]string) error {
	for key := range SortedOptions(opts) {
		if slices.Contains(known.Unsupported, key) {
			return OptionError(key, "%s: option '%s' is not supported", connector, key)
		}
		if !known.Known(key) && len(known.Names)+len(known.Prefixes) == 0 {
			return OptionError(key, "unknown option '%s': connector '%s' has no options", key, connector)
		}
		if !known.Known(key) {
			return OptionError(key, "unknown option '%s' for connector '%s' (known: %s)", key, connector, known)
		}
	}
	return nil
}

var registry = struct {
	sync.RWMutex
	sources map[string]Source
	sinks   map[string]Sink
}{sources: map[string]Source{}, sinks: map[string]Sink{}}

// RegisterSource makes a source connector known under its name; connector packages call it from init. A second
// registration of a name panics.
func RegisterSource(c Source) {
	registry.Lock()
	defer registry.Unlock()
	if _, dup := registry.sources[c.Name()]; dup {
		panic(fmt.Sprintf("connectors: source connector %q registered twice", c.Name()))
	}
	registry.sources[c.Name()] = c
}

// RegisterSink makes a sink connector known under its name; connector packages call it from init.
func RegisterSink(c Sink) {
	registry.Lock()
	defer registry.Unlock()
	if _, dup := registry.sinks[c.Name()]; dup {
		panic(fmt.Sprintf("connectors: sink connector %q registered twice", c.Name()))
	}
	registry.sinks[c.Name()] = c
}

// LookupSource returns the source connector called name.
func LookupSource(name string) (Source, bool) {
	registry.RLock()
	defer registry.RUnlock()
	c, ok := registry.sources[name]
	return c, ok
}

// LookupSink returns the sink connector called name.
func LookupSink(name string) (Sink, bool) {
	registry.RLock()
	defer registry.RUnlock()
	c, ok := registry.sinks[name]
	return c, ok
}

// SourceNames returns the registered source connectors' names, sorted.
func SourceNames() []string {
	registry.RLock()
	defer registry.RUnlock()
	return sortedNames(registry.sources)
}

// SinkNames returns the registered sink connectors' names, sorted.
func SinkNames() []string {
	registry.RLock()
	defer registry.RUnlock()
	return sortedNames(registry.sinks)
}

func sortedNames[C any](m map[string]C) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
