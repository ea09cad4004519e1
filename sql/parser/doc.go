// Package parser will own the clinksql dialect: the TiDB parser for standard SQL plus a token-level layer for our
// extensions (CREATE STREAM with WATERMARK FOR and WITH options, window table functions, INTERVAL arguments,
// x::type, ...), keeping a map back to the user's text so every error carries its line and column. Not built
// yet (the SQL issue); DESIGN.md's "The dialect" is its contract.
package parser
