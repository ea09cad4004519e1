// Package textform renders Arrow values in the text forms Postgres prints (what psql, COPY and the pgwire text
// format show), so that the file sinks, the REPL, pgwire and the tests agree on every value: Rows for whole
// batches, Column for writers that embed the forms in CSV or JSON (AppendCSVField, AppendJSONString).
//
// It must never box values per row (one appender per column and batch, writing into a byte slice), nor format a
// value with code of its own where exec/expr has the formatter that CAST(x AS TEXT) uses (BOOLEAN alone differs:
// t/f here, true/false in a cast, as in Postgres).
package textform
