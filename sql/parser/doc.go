// Package parser owns the clinksql dialect: text in, the AST of ast.go out (Parse), and canonical SQL back out
// (Format). The planner reads only that AST; no TiDB type crosses this package's boundary.
//
// How a script is read:
//
//   - lexer.go: Postgres' lexical rules (standard strings without backslash escapes, E'...' strings with them,
//     "quoted identifiers", backticks, dollar quoting, nested block comments, $n parameters), byte offsets on
//     every token, the script splitter, and offset-to-line/column conversion (PositionOf, CharOffset).
//   - parse.go: the statement grammar, a small recursive descent over those tokens: CREATE STREAM/TABLE/SINK/VIEW,
//     INSERT, SELECT, FLUSH, SET/RESET/SHOW, DESCRIBE, EXPLAIN, DROP, DROP JOB, ALTER JOB ... RESUME, transaction
//     statements, column types (with Postgres' synonyms), WITH options. A job id is read one way everywhere
//     (jobID): quoted, or unquoted with its dashes (job-3).
//   - function.go: CREATE [OR REPLACE] FUNCTION (Postgres' clauses in any order, WITH options, RETURN expr) and
//     DROP FUNCTION's argument lists. A SQL function's body given as a string (AS 'SELECT expr', AS $$...$$) is
//     parsed from the string's value, and every position of its tree and of its errors is moved back into the
//     statement, inside the string (exact for standard and dollar-quoted strings); ParseExpr reads a stored body.
//   - rewrite.go: queries (VALUES lists included) and expressions are re-emitted token by token as text the TiDB
//     parser reads. What TiDB cannot read or would read with MySQL's meaning (INTERVAL, CAST to our types,
//     x::type, EXTRACT fields, FILTER, NULLS FIRST, window table functions, typed literals, $n, ~ and friends, IS
//     DISTINCT FROM, FULL JOIN, names TiDB reserves) is parsed here and stands in TiDB's text as a placeholder
//     (clink$N); VALUES (...) becomes TiDB's VALUES ROW(...), and the column list of a derived table's alias
//     (`AS v(a, b)`) rides on the alias token, and a table name's `FOR SYSTEM_TIME AS OF col` (temporal and lookup
//     joins; a column reference only) on the name's token. A VALUES list of plain literals only (a bulk INSERT) is read
//     straight from the tokens into the same tree (parse.go, literalValues): TiDB's tree of it is tens of times its
//     text. A TiDB parser that read more than 64 kB is not pooled, since it keeps its last tree.
//     InsertValuesPieces (pieces.go) lexes a lone INSERT ... VALUES one token at a time and splits it at its
//     tuples, so the engine parses a huge one piece by piece instead of holding every token at once.
//   - convert.go: TiDB's tree becomes ours. Positions come from TiDB's start offsets and from walking the
//     rewritten tokens in source order; every rewritten token knows the user's offset it stands for, so every
//     node position and every syntax error points into the user's text. Runs of + - * / % || are regrouped in
//     Postgres' precedence, which TiDB's differs from.
//   - dml.go: UPDATE name [[AS] alias] SET col = expr, ... [WHERE expr] and DELETE FROM name [[AS] alias]
//     [WHERE expr] (a table's statements; the planner checks the target).
//   - format.go: Format prints any node as canonical SQL that parses back to the same tree (positions aside).
//
// Errors are *sqlerr.Error: 42601 with Postgres' wording (`syntax error at or near "FROM"`, `syntax error at end of
// input`) at the offending token; 0A000 naming a construct we recognise but do not support; 42704 for an unknown
// type; 22021 and 22025 for a bad escape in an E'...' string. Whatever the input, Parse returns; it never panics
// (a panic inside TiDB becomes a 42601).
//
// Decisions (where Postgres, Flink and MySQL differ): unquoted names fold to lower case, quoted ones (also
// backticks) keep theirs; adjacent standard string constants join only across a newline (an E'...' string is
// continued the same way, escapes included); `a || b + c` is `a || (b + c)`, as in Postgres (|| binds looser than
// arithmetic, tighter than comparison); VALUES is a query wherever a query goes, but ORDER BY, LIMIT and OFFSET
// directly on a VALUES list are 0A000; a column list on an alias is accepted for derived tables (and CTEs), 0A000
// on a table or window table function; COLLATE is accepted only for the default/"C" collation (psql sends it);
// MySQL's operators (DIV, <=>, &&, XOR, string aliases) are errors.
//
// It must never evaluate anything or look at the catalog: it turns text into syntax, and errors into positions.
package parser
