// Package parser owns the clinksql dialect: the TiDB parser for standard SQL plus a token-level layer for our
// extensions (CREATE STREAM with WATERMARK FOR and WITH options, window table functions, INTERVAL arguments,
// x::type, ...), keeping a map back to the user's text so every error carries its line and column.
//
// Built so far: the lexer (lexer.go) with Postgres' lexical rules (standard strings without backslash escapes,
// "quoted identifiers", dollar quoting, nested block comments, $n parameters), byte offsets on every token, the
// script splitter the REPL and `clinksql exec -f` will use, and offset-to-line/column conversion. The statement
// grammar comes with the SQL issue; DESIGN.md's "The dialect" is its contract.
//
// It must never evaluate anything or look at the catalog: it turns text into syntax, and errors into positions.
package parser
