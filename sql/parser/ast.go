package parser

// The AST the planner reads. Parse builds it from the TiDB parser's tree (for standard SQL) and from our own
// grammar (for the extensions), so the planner never sees TiDB types. Every node carries P, the byte offset of its
// first character in the text given to Parse, which errors point at (Postgres reports the first character of the
// offending name or literal; for an operator, the operator).
//
// Conventions: unquoted identifiers are folded to lower case, quoted ones keep their case; keywords and function
// names are lower case; a nil Expr means "absent".

// Stmt is one statement.
type Stmt interface {
	// Span is where the statement starts and ends in the text given to Parse.
	Span() (start, end int)
	// SQL is the statement's own original text.
	SQL() string
	stmtNode()
}

// StmtBase holds a statement's span. Text is the statement's own original text.
type StmtBase struct {
	Start, End int
	Text       string
}

func (s *StmtBase) Span() (int, int) { return s.Start, s.End }
func (s *StmtBase) SQL() string      { return s.Text }
func (*StmtBase) stmtNode()          {}

// TypeName is a SQL type as written: Name is the canonical upper-case name (BOOLEAN, SMALLINT, INT, BIGINT, REAL,
// DOUBLE, DECIMAL, VARCHAR, TEXT, DATE, TIMESTAMP, INTERVAL, BYTEA); synonyms fold to it (INTEGER and INT4 to
// INT, INT8 to BIGINT, FLOAT8 and DOUBLE PRECISION to DOUBLE, FLOAT4 to REAL, NUMERIC to DECIMAL, STRING and
// CHARACTER VARYING to VARCHAR, BOOL to BOOLEAN). Precision and Scale are -1 when not given (VARCHAR without a
// length, TIMESTAMP without a precision).
type TypeName struct {
	P         int
	Name      string
	Precision int
	Scale     int
	// The nested types (Name ROW, ARRAY or MAP): ROW<a INT, b VARCHAR> (also ROW(a INT, ...)), ARRAY<INT> (also
	// INT ARRAY and INT[]), MAP<VARCHAR, INT>.
	Fields     []TypeField
	Elem       *TypeName
	Key, Value *TypeName
}

// TypeField is one field of a ROW type.
type TypeField struct {
	P    int
	Name string
	Type TypeName
}

// ColumnDef is a column of CREATE STREAM / CREATE SINK; Metadata is set for a metadata column.
type ColumnDef struct {
	P        int
	Name     string
	Type     TypeName
	NotNull  bool
	Metadata *Metadata
	// Computed is a computed column's expression (Flink's `name AS expr`, over the stream's other columns); its
	// Type is then the zero TypeName, the planner derives it.
	Computed Expr
}

// Metadata is Flink's `METADATA [FROM 'key'] [VIRTUAL]` after a column's type (P is where METADATA is): the column
// carries what the connector knows of a record (its timestamp, partition, offset) rather than a field of the
// data. Key is the FROM key, "" when the column's name is the key; Virtual marks a read-only column.
type Metadata struct {
	P       int
	Key     string
	Virtual bool
}

// PrimaryKey is `PRIMARY KEY (cols) [NOT ENFORCED]`, declared after the columns (optionally as `CONSTRAINT name
// PRIMARY KEY ...`) or on one column (`id INT PRIMARY KEY NOT ENFORCED`). P is where PRIMARY is. A connector
// takes it only NOT ENFORCED (Flink's rule: nothing checks it; upsert-kafka's message key); a stream without a
// connector that has one is a table (the planner's rule), whose key its INSERTs upsert by, in either form.
// Enforced is set when NOT ENFORCED was not written.
type PrimaryKey struct {
	P        int
	Columns  []string
	ColumnsP []int
	Enforced bool
}

// Watermark is `WATERMARK FOR col AS expr`.
type Watermark struct {
	P      int
	Column string
	ColP   int
	Expr   Expr
}

// PartitionedBy is `PARTITIONED BY (col, ...)` after the columns of a sink (Flink's filesystem sink): the
// columns whose values name the Hive-style directory (col=value/...) each row is written into. P is where
// PARTITIONED is.
type PartitionedBy struct {
	P        int
	Columns  []string
	ColumnsP []int
}

// Option is one `key = 'value'` of a WITH (...) list. Keys are as written, unquoted (`connector`, `'fields.id.kind'`);
// values are the string (or number, or identifier) text.
type Option struct {
	P     int
	Key   string
	Value string
}

// CreateStream is CREATE STREAM (or CREATE TABLE, Flink's word for the same thing).
type CreateStream struct {
	StmtBase
	Name        string
	NameP       int
	IfNotExists bool
	Columns     []ColumnDef
	Watermark   *Watermark
	PrimaryKey  *PrimaryKey
	// PartitionedBy is parsed so that Flink's CREATE TABLE ... PARTITIONED BY form gets a clear refusal (a
	// partitioned table is a sink there; here it is CREATE SINK).
	PartitionedBy *PartitionedBy
	Options       []Option
}

// CreateSink is CREATE SINK name (cols) [PARTITIONED BY (cols)] WITH (...).
type CreateSink struct {
	StmtBase
	Name          string
	NameP         int
	IfNotExists   bool
	Columns       []ColumnDef
	PrimaryKey    *PrimaryKey
	PartitionedBy *PartitionedBy
	Options       []Option
}

// CreateView is CREATE [OR REPLACE] [MATERIALIZED] VIEW name [(cols)] AS query.
type CreateView struct {
	StmtBase
	Name         string
	NameP        int
	Materialized bool
	IfNotExists  bool
	OrReplace    bool
	Columns      []string
	Query        *Query
	// QueryText is the original text of the query, which the catalog keeps and re-parses.
	QueryText string
}

// Insert is INSERT INTO target [(cols)] query; VALUES is a Query whose Body is *Values.
type Insert struct {
	StmtBase
	Target   string
	TargetP  int
	Columns  []string
	ColumnsP []int
	Query    *Query
}

// Select is a query run for its rows.
type Select struct {
	StmtBase
	Query *Query
}

// Flush is FLUSH.
type Flush struct{ StmtBase }

// Set is SET name = value | SET name TO value | SET name = DEFAULT | SET LOCAL/SESSION ... . Name is lower case
// and may be dotted (checkpoint.interval); Value is the unquoted text, Default is set for DEFAULT.
type Set struct {
	StmtBase
	Name    string
	NameP   int
	Value   string
	ValueP  int
	Default bool
}

// Reset is RESET name | RESET ALL (Name "all").
type Reset struct {
	StmtBase
	Name string
}

// Show is SHOW what. What is lower case with single spaces: "streams", "sinks", "views", "materialized views",
// "jobs", "checkpoints", "tables", or any other name, which is a session variable ("server_version",
// "transaction isolation level", "checkpoint.interval", "all").
type Show struct {
	StmtBase
	What string
	// For is the object of `SHOW CHECKPOINTS FOR <job>`, "" otherwise; ForP its position.
	For  string
	ForP int
}

// Describe is DESCRIBE name (also DESC name).
type Describe struct {
	StmtBase
	Name  string
	NameP int
}

// Explain is EXPLAIN stmt.
type Explain struct {
	StmtBase
	Stmt Stmt
	// Analyze is EXPLAIN ANALYZE <job id>: the plan of running job Job (at JobP) with its live figures; Stmt is nil.
	Analyze bool
	Job     string
	JobP    int
}

// Drop is DROP STREAM|TABLE|SINK|VIEW|MATERIALIZED VIEW|FUNCTION [IF EXISTS] name [, ...] [CASCADE|RESTRICT]. Kind
// is upper case with single spaces.
type Drop struct {
	StmtBase
	Kind     string
	Names    []string
	NamesP   []int
	IfExists bool
	Cascade  bool
	// Args are DROP FUNCTION's argument types, one entry per name: nil when no list was written (function.go).
	Args [][]TypeName
}

// DropJob is DROP JOB id.
type DropJob struct {
	StmtBase
	ID  string
	IDP int
}

// AlterJob is ALTER JOB id RESUME: restart a FAILED job from its last completed checkpoint.
type AlterJob struct {
	StmtBase
	ID     string
	IDP    int
	Resume bool
}

// Txn is BEGIN / START TRANSACTION / COMMIT / END / ROLLBACK / ABORT (Op: "begin", "commit", "rollback"); the
// engine accepts and ignores them (autocommit).
type Txn struct {
	StmtBase
	Op string
	// StatementSet marks BEGIN STATEMENT SET (Flink's SQL client): the INSERTs up to END run as one job.
	// Inline marks its one-statement form, EXECUTE STATEMENT SET BEGIN, whose first INSERT follows without a
	// semicolon.
	StatementSet, Inline bool
}

// Query is a query expression: WITH ... body ORDER BY ... LIMIT ... OFFSET ... .
type Query struct {
	P       int
	With    []CTE
	Body    QueryBody
	OrderBy []OrderItem
	Limit   Expr
	Offset  Expr
}

// CTE is one WITH entry.
type CTE struct {
	P       int
	Name    string
	Columns []string
	Query   *Query
}

// QueryBody is *SelectCore, *SetOp, *Values or *Query (a parenthesized query with its own ORDER BY / LIMIT).
type QueryBody interface{ queryBody() }

// SelectCore is SELECT ... FROM ... WHERE ... GROUP BY ... HAVING ... .
type SelectCore struct {
	P        int
	Distinct bool
	Items    []SelectItem
	// From is the comma-separated FROM list; empty for SELECT without FROM.
	From    []TableExpr
	Where   Expr
	GroupBy []Expr
	Having  Expr
}

// SelectItem is one output column: Expr [AS Alias]. `*` and `t.*` are a *Star Expr.
type SelectItem struct {
	P     int
	Expr  Expr
	Alias string
}

// SetOp is L UNION|INTERSECT|EXCEPT [ALL] R. Op is lower case.
type SetOp struct {
	P    int
	Op   string
	All  bool
	L, R QueryBody
}

// Values is VALUES (...), (...).
type Values struct {
	P    int
	Rows [][]Expr
}

func (*SelectCore) queryBody() {}
func (*SetOp) queryBody()      {}
func (*Values) queryBody()     {}
func (*Query) queryBody()      {}

// OrderItem is one ORDER BY entry. NullsFirst is nil when not given (Postgres: NULLS LAST for ASC, FIRST for DESC).
type OrderItem struct {
	P          int
	Expr       Expr
	Desc       bool
	NullsFirst *bool
}

// TableExpr is a FROM item: *TableName, *DerivedTable, *Join or *WindowTVF.
type TableExpr interface{ tableExpr() }

// TableName is a named stream, sink, view or CTE, with an optional alias. Schema is the qualifier of
// schema.name (psql's pg_catalog.pg_class), "" when not written.
type TableName struct {
	P      int
	Schema string
	Name   string
	Alias  string
	// AsOf is Flink's `name FOR SYSTEM_TIME AS OF col` (a temporal or lookup join's right side), a column
	// reference; nil when not written.
	AsOf *ColumnRef
}

// DerivedTable is (query) [AS] alias [(cols)].
type DerivedTable struct {
	P       int
	Query   *Query
	Alias   string
	Columns []string
}

// Join is L [INNER|LEFT|RIGHT|FULL|CROSS] JOIN R [ON cond | USING (cols)]. Kind is lower case ("inner", "left",
// "right", "full", "cross").
type Join struct {
	P     int
	Kind  string
	L, R  TableExpr
	On    Expr
	Using []string
}

// WindowTVF is a windowing table function: the Flink form TABLE(TUMBLE(TABLE t, DESCRIPTOR(c), size)) and the short
// form TUMBLE(t, c, size). Kind is "tumble", "hop", "session" or "cumulate". Args are the interval arguments in
// the order written: tumble (size), hop (slide, size), session (gap), cumulate (step, size). PartitionBy is
// SESSION's `TABLE t PARTITION BY k, ...`.
type WindowTVF struct {
	P           int
	Kind        string
	Input       TableExpr // *TableName or *DerivedTable
	TimeCol     string
	TimeColP    int
	PartitionBy []Expr
	Args        []Expr
	Alias       string
}

// Unnest is UNNEST(array) [WITH ORDINALITY] [AS alias [(cols)]] in FROM: a row per element (a MAP's entries as key,
// value; a ROW element's fields as columns), and with ORDINALITY its 1-based position as a last column. After a
// comma or a JOIN it reads the columns of the FROM items before it (Flink's CROSS JOIN UNNEST, Postgres' LATERAL).
type Unnest struct {
	P          int
	Args       []Expr
	Ordinality bool
	Alias      string
	Columns    []string
}

func (*Unnest) tableExpr() {}

func (*TableName) tableExpr()    {}
func (*DerivedTable) tableExpr() {}
func (*Join) tableExpr()         {}
func (*WindowTVF) tableExpr()    {}

// Expr is an expression.
type Expr interface {
	Pos() int
	exprNode()
}

// ColumnRef is [table.]column.
type ColumnRef struct {
	P     int
	Table string
	Name  string
}

// Star is * or table.* (in a select list; COUNT(*) is Func.Star).
type Star struct {
	P     int
	Table string
}

// LitKind says what a Literal is.
type LitKind uint8

const (
	LitNull LitKind = iota
	LitBool
	LitInt     // 42 (Text is the digits; may overflow int64, then it is NUMERIC)
	LitDecimal // 4.2, 1e3 is LitFloat
	LitFloat
	LitString    // 'abc' (Text is the value, quotes removed)
	LitTimestamp // TIMESTAMP '2026-01-01 00:00:01' (Text is the quoted value)
	LitDate      // DATE '2026-01-01'
	// LitTimestampTZ is TIMESTAMPTZ '2026-01-01 00:00:01+02' or TIMESTAMP WITH TIME ZONE '...' (Text the quoted
	// value; without an offset it is a wall clock in the session's time zone).
	LitTimestampTZ
)

// Literal is a constant. Text is its value as written (see LitKind), "true"/"false" for LitBool.
type Literal struct {
	P    int
	Kind LitKind
	Text string
}

// Interval is INTERVAL '10' SECOND, INTERVAL 10 SECOND, INTERVAL '1:30' MINUTE TO SECOND or INTERVAL '10 seconds'.
// Value is the quoted (or numeric) text; Unit is the lower-case unit ("second", "minute", "hour", "day",
// "millisecond", "microsecond", "week", "month", "year", or "minute to second" and the like), "" when the unit is
// inside Value. A leading minus sign is part of Value.
type Interval struct {
	P     int
	Value string
	Unit  string
}

// ParamRef is $n.
type ParamRef struct {
	P int
	N int
}

// Unary is -x, +x, NOT x. Op is "-", "+", "not".
type Unary struct {
	P  int
	Op string
	X  Expr
}

// Binary is L op R. Op is one of + - * / % || = <> < > <= >= and or (<> also for !=). P is the operator's offset.
type Binary struct {
	P    int
	Op   string
	L, R Expr
}

// IsNull is x IS [NOT] NULL.
type IsNull struct {
	P   int
	X   Expr
	Not bool
}

// IsBool is x IS [NOT] TRUE|FALSE.
type IsBool struct {
	P     int
	X     Expr
	Value bool
	Not   bool
}

// Between is x [NOT] BETWEEN lo AND hi.
type Between struct {
	P      int
	X      Expr
	Lo, Hi Expr
	Not    bool
}

// InList is x [NOT] IN (list) or x [NOT] IN (subquery) (then Sub is set and List empty).
type InList struct {
	P    int
	X    Expr
	List []Expr
	Sub  *Query
	Not  bool
}

// Like is x [NOT] LIKE|ILIKE pattern [ESCAPE e], and the regular-expression matches x ~ p, x ~* p, x !~ p, x REGEXP p
// (Regexp set; CaseInsensitive for ~* and ILIKE).
type Like struct {
	P               int
	X, Pattern      Expr
	Escape          Expr
	Not             bool
	CaseInsensitive bool
	Regexp          bool
}

// Case is CASE [operand] WHEN ... THEN ... [ELSE ...] END.
type Case struct {
	P       int
	Operand Expr
	Whens   []When
	Else    Expr
}

// When is one WHEN cond THEN result arm.
type When struct {
	Cond, Result Expr
}

// Cast is CAST(x AS type) or x::type. TRY_CAST is Try.
type Cast struct {
	P    int
	X    Expr
	Type TypeName
	Try  bool
}

// Extract is EXTRACT(field FROM x). Field is lower case (year, month, day, hour, minute, second, millisecond,
// microsecond, dow, doy, epoch, week, quarter).
type Extract struct {
	P     int
	Field string
	X     Expr
}

// Func is a function call, including aggregates: name(args), COUNT(*) (Star), COUNT(DISTINCT x) (Distinct),
// agg(...) FILTER (WHERE cond) (Filter), and f(...) OVER (...) (Over). Name is lower case. Keyword-shaped calls
// fold to calls: SUBSTRING(s FROM a FOR b) is substring(s, a, b), POSITION(a IN b) is position(a, b), TRIM(BOTH x
// FROM s) is btrim(s, x) (LEADING ltrim, TRAILING rtrim), CURRENT_TIMESTAMP is current_timestamp().
type Func struct {
	P        int
	Name     string
	Args     []Expr
	Star     bool
	Distinct bool
	Filter   Expr
	Over     *WindowSpec
}

// WindowSpec is OVER (PARTITION BY ... ORDER BY ... [frame]).
type WindowSpec struct {
	P int
	// Ref is the name of a window of the query's WINDOW clause (OVER w) while the query is converted; it is
	// resolved into that window's definition before Parse returns, so a parsed statement never has one.
	Ref         string
	PartitionBy []Expr
	OrderBy     []OrderItem
	// Frame is nil when not written (SQL's default: RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW with ORDER
	// BY, the whole partition without).
	Frame *Frame
}

// Frame is ROWS|RANGE BETWEEN Start AND End (or ROWS|RANGE Start, End CURRENT ROW).
type Frame struct {
	P          int
	Range      bool
	Start, End FrameBound
}

// BoundKind is the kind of a frame bound.
type BoundKind uint8

const (
	BoundUnboundedPreceding BoundKind = iota
	BoundPreceding                    // Offset PRECEDING
	BoundCurrentRow
	BoundFollowing // Offset FOLLOWING
	BoundUnboundedFollowing
)

// FrameBound is one end of a frame; Offset is a number (ROWS) or an *Interval or number (RANGE).
type FrameBound struct {
	P      int
	Kind   BoundKind
	Offset Expr
}

// Subquery is a scalar subquery (query) or EXISTS (query) (Exists set).
type Subquery struct {
	P      int
	Query  *Query
	Exists bool
}

func (e *ColumnRef) Pos() int { return e.P }
func (e *Star) Pos() int      { return e.P }
func (e *Literal) Pos() int   { return e.P }
func (e *Interval) Pos() int  { return e.P }
func (e *ParamRef) Pos() int  { return e.P }
func (e *Unary) Pos() int     { return e.P }
func (e *Binary) Pos() int    { return e.P }
func (e *IsNull) Pos() int    { return e.P }
func (e *IsBool) Pos() int    { return e.P }
func (e *Between) Pos() int   { return e.P }
func (e *InList) Pos() int    { return e.P }
func (e *Like) Pos() int      { return e.P }
func (e *Case) Pos() int      { return e.P }
func (e *Cast) Pos() int      { return e.P }
func (e *Extract) Pos() int   { return e.P }
func (e *Func) Pos() int      { return e.P }
func (e *Subquery) Pos() int  { return e.P }

func (*ColumnRef) exprNode() {}
func (*Star) exprNode()      {}
func (*Literal) exprNode()   {}
func (*Interval) exprNode()  {}
func (*ParamRef) exprNode()  {}
func (*Unary) exprNode()     {}
func (*Binary) exprNode()    {}
func (*IsNull) exprNode()    {}
func (*IsBool) exprNode()    {}
func (*Between) exprNode()   {}
func (*InList) exprNode()    {}
func (*Like) exprNode()      {}
func (*Case) exprNode()      {}
func (*Cast) exprNode()      {}
func (*Extract) exprNode()   {}
func (*Func) exprNode()      {}
func (*Subquery) exprNode()  {}
