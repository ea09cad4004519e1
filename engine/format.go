package engine

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/clinksql/clinksql/catalog"
	"github.com/clinksql/clinksql/sql/parser"
	"github.com/clinksql/clinksql/sqlerr"
)

// FormatError renders a statement error as psql does: the message with its SQLSTATE, and for an error with a
// position, the line of the source with a caret under the offending character. source names where text came
// from (a file name, or "-c").
func FormatError(source, text string, err error) string {
	e := sqlerr.As(err)
	var sb strings.Builder
	if e.Pos != sqlerr.NoPos {
		p := parser.PositionOf(text, e.Pos)
		fmt.Fprintf(&sb, "%s:%d:%d: ERROR:  %s (SQLSTATE %s)\n", source, p.Line, p.Col, e.Msg, e.Code)
		lines := strings.Split(text, "\n")
		if p.Line-1 < len(lines) {
			line := strings.TrimRight(lines[p.Line-1], "\r")
			prefix := fmt.Sprintf("LINE %d: ", p.Line)
			fmt.Fprintf(&sb, "%s%s\n%s^\n", prefix, line, strings.Repeat(" ", len(prefix)+p.Col-1))
		}
	} else {
		fmt.Fprintf(&sb, "%s: ERROR:  %s (SQLSTATE %s)\n", source, e.Msg, e.Code)
	}
	if e.Detail != "" {
		fmt.Fprintf(&sb, "DETAIL:  %s\n", e.Detail)
	}
	if e.Hint != "" {
		fmt.Fprintf(&sb, "HINT:  %s\n", e.Hint)
	}
	return sb.String()
}

// WriteCSV writes a result set as CSV: a header line, then the rows in Postgres text form; NULL is an empty field
// and an empty string is "".
func WriteCSV(w io.Writer, r *Result) {
	p := &Printer{w: w, csv: true}
	p.print(r)
}

func writeCSVField(sb *strings.Builder, v *string) {
	if v == nil {
		return
	}
	s := *v
	if s == "" || strings.ContainsAny(s, ",\"\n\r") || s[0] == ' ' || s[len(s)-1] == ' ' {
		sb.WriteByte('"')
		sb.WriteString(strings.ReplaceAll(s, `"`, `""`))
		sb.WriteByte('"')
		return
	}
	sb.WriteString(s)
}

// WriteTable writes a result as psql's aligned format: a header, a rule, the rows (numbers right-aligned) and a
// row count; a statement without rows prints its command tag.
func WriteTable(w io.Writer, r *Result) {
	p := &Printer{w: w}
	p.print(r)
}

// Printer prints results as the REPL and `clinksql exec` show them, rows as they arrive: it is the RowWriter of
// a streaming SELECT (Session.Run), and Result ends each statement. As psql's aligned format with FETCH_COUNT,
// the table's widths come from the header and the first batch and widen for later rows that need it.
type Printer struct {
	w   io.Writer
	csv bool
	// CSV: result sets are separated by one empty line; statements without rows print nothing.
	any bool

	cols   []Column
	widths []int
	right  []bool
	rows   int
	header bool // the header is out (table), or owed with the first rows
}

// NewPrinter prints to w in format "table" or "csv".
func NewPrinter(w io.Writer, format string) *Printer { return &Printer{w: w, csv: format == "csv"} }

// Columns starts a streamed result set.
func (p *Printer) Columns(cols []Column) error {
	p.cols, p.widths, p.right, p.rows, p.header = cols, nil, nil, 0, false
	if p.csv {
		p.csvHeader()
	}
	return nil
}

// Rows prints a batch of a streamed result set.
func (p *Printer) Rows(rows [][]*string) error {
	var sb strings.Builder
	if p.csv {
		for _, row := range rows {
			for i, v := range row {
				if i > 0 {
					sb.WriteByte(',')
				}
				writeCSVField(&sb, v)
			}
			sb.WriteByte('\n')
		}
	} else {
		p.tableRows(&sb, rows)
	}
	p.rows += len(rows)
	_, err := io.WriteString(p.w, sb.String())
	return err
}

// Result ends a statement: a streamed result set's footer, or the whole of any other result.
func (p *Printer) Result(r *Result) {
	if !r.Streamed {
		p.print(r)
		return
	}
	if p.csv {
		return
	}
	var sb strings.Builder
	if !p.header {
		p.tableRows(&sb, nil)
	}
	if p.rows == 1 {
		sb.WriteString("(1 row)\n\n")
	} else {
		fmt.Fprintf(&sb, "(%d rows)\n\n", p.rows)
	}
	io.WriteString(p.w, sb.String())
}

// print prints a whole result.
func (p *Printer) print(r *Result) {
	if r.Columns == nil {
		if !p.csv {
			fmt.Fprintln(p.w, r.Tag)
		}
		return
	}
	p.Columns(r.Columns)
	p.Rows(r.Rows)
	p.Result(&Result{Streamed: true})
}

func (p *Printer) csvHeader() {
	var sb strings.Builder
	if p.any {
		sb.WriteByte('\n')
	}
	p.any = true
	for i, c := range p.cols {
		if i > 0 {
			sb.WriteByte(',')
		}
		writeCSVField(&sb, &c.Name)
	}
	sb.WriteByte('\n')
	io.WriteString(p.w, sb.String())
}

// tableRows writes rows in the aligned format, after the header when it is not out yet.
func (p *Printer) tableRows(sb *strings.Builder, rows [][]*string) {
	if p.widths == nil {
		p.widths = make([]int, len(p.cols))
		p.right = make([]bool, len(p.cols))
		for i, c := range p.cols {
			p.widths[i] = utf8.RuneCountInString(c.Name)
			switch c.OID {
			case catalog.OIDInt2, catalog.OIDInt4, catalog.OIDInt8, catalog.OIDFloat4, catalog.OIDFloat8, catalog.OIDNumeric:
				p.right[i] = true
			}
		}
	}
	for _, row := range rows {
		for i, v := range row {
			if v != nil {
				p.widths[i] = max(p.widths[i], utf8.RuneCountInString(*v))
			}
		}
	}
	if !p.header {
		p.header = true
		for i, c := range p.cols {
			if i > 0 {
				sb.WriteString("|")
			}
			n := utf8.RuneCountInString(c.Name)
			left := (p.widths[i] - n) / 2
			sb.WriteString(" " + strings.Repeat(" ", left) + c.Name + strings.Repeat(" ", p.widths[i]-n-left) + " ")
		}
		sb.WriteString("\n")
		for i := range p.cols {
			if i > 0 {
				sb.WriteString("+")
			}
			sb.WriteString(strings.Repeat("-", p.widths[i]+2))
		}
		sb.WriteString("\n")
	}
	for _, row := range rows {
		for i, v := range row {
			if i > 0 {
				sb.WriteString("|")
			}
			s := ""
			if v != nil {
				s = *v
			}
			pad := strings.Repeat(" ", p.widths[i]-utf8.RuneCountInString(s))
			if p.right[i] {
				sb.WriteString(" " + pad + s + " ")
			} else {
				sb.WriteString(" " + s + pad + " ")
			}
		}
		sb.WriteString("\n")
	}
}

// WriteNotices writes a result's notices as psql prints them ("NOTICE:  started job job-3"), one a line.
func WriteNotices(w io.Writer, res *Result) {
	for _, n := range res.Notices {
		WriteNotice(w, n)
	}
}

// WriteNotice writes one notice as psql prints it.
func WriteNotice(w io.Writer, msg string) { fmt.Fprintf(w, "NOTICE:  %s\n", msg) }
