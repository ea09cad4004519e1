package main

import (
	"io"

	"github.com/clinksql/clinksql/catalog"
	"github.com/clinksql/clinksql/engine"
)

// How the REPL shows SUBSCRIBE (Flink's changelog result mode): the header at once, then each change as it
// arrives, its first column op ("+" for mz_diff +1, "-" for -1) followed by mz_timestamp and the row, until
// Ctrl-C. WITH (PROGRESS) shows the subscription's own columns, progress rows included. COPY (...) TO STDOUT
// prints its lines as they come, as psql does.

// liveResult reports columns of a SUBSCRIBE: rows that trickle in for ever, to print one at a time.
func liveResult(cols []engine.Column) bool {
	return len(cols) >= 2 && cols[0].Name == "mz_timestamp" && (cols[1].Name == "mz_diff" || cols[1].Name == "mz_progressed")
}

// changelogPrinter is the REPL's RowWriter: an engine.Printer that shows a SUBSCRIBE as a changelog, and takes
// COPY ... TO STDOUT's lines.
type changelogPrinter struct {
	p   *engine.Printer
	out io.Writer
	// changes: a SUBSCRIBE without progress, shown with its op column in place of mz_diff.
	changes bool
}

func newChangelogPrinter(out io.Writer) *changelogPrinter {
	return &changelogPrinter{p: engine.NewPrinter(out, "table"), out: out}
}

var _ engine.CopyWriter = (*changelogPrinter)(nil)

func (c *changelogPrinter) Columns(cols []engine.Column) error {
	c.changes = liveResult(cols) && cols[1].Name == "mz_diff"
	if c.changes {
		cols = append([]engine.Column{{Name: "op", OID: catalog.OIDText}, cols[0]}, cols[2:]...)
	}
	return c.p.Columns(cols)
}

func (c *changelogPrinter) Rows(rows [][]*string) error {
	if c.changes {
		shown := make([][]*string, len(rows))
		for i, r := range rows {
			op := "+"
			if r[1] != nil && len(*r[1]) > 0 && (*r[1])[0] == '-' {
				op = "-"
			}
			shown[i] = append([]*string{&op, r[0]}, r[2:]...)
		}
		rows = shown
	}
	return c.p.Rows(rows)
}

// Result ends a statement (engine.Printer.Result).
func (c *changelogPrinter) Result(r *engine.Result) { c.p.Result(r) }

// CopyOut starts COPY ... TO STDOUT: nothing to print before the lines.
func (c *changelogPrinter) CopyOut([]engine.Column) error { return nil }

// CopyData prints COPY lines as they come.
func (c *changelogPrinter) CopyData(lines [][]byte) error {
	for _, l := range lines {
		if _, err := c.out.Write(l); err != nil {
			return err
		}
	}
	return nil
}
