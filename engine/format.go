package engine

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/clinksql/clinksql/catalog"
	"github.com/clinksql/clinksql/sql/parser"
	"github.com/clinksql/clinksql/sql/sqlerr"
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
	var sb strings.Builder
	for i, c := range r.Columns {
		if i > 0 {
			sb.WriteByte(',')
		}
		writeCSVField(&sb, &c.Name)
	}
	sb.WriteByte('\n')
	for _, row := range r.Rows {
		for i, v := range row {
			if i > 0 {
				sb.WriteByte(',')
			}
			writeCSVField(&sb, v)
		}
		sb.WriteByte('\n')
	}
	io.WriteString(w, sb.String())
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
	if r.Columns == nil {
		fmt.Fprintln(w, r.Tag)
		return
	}
	widths := make([]int, len(r.Columns))
	right := make([]bool, len(r.Columns))
	for i, c := range r.Columns {
		widths[i] = utf8.RuneCountInString(c.Name)
		switch c.OID {
		case catalog.OIDInt2, catalog.OIDInt4, catalog.OIDInt8, catalog.OIDFloat4, catalog.OIDFloat8, catalog.OIDNumeric:
			right[i] = true
		}
	}
	for _, row := range r.Rows {
		for i, v := range row {
			if v != nil {
				widths[i] = max(widths[i], utf8.RuneCountInString(*v))
			}
		}
	}
	var sb strings.Builder
	for i, c := range r.Columns {
		if i > 0 {
			sb.WriteString("|")
		}
		n := utf8.RuneCountInString(c.Name)
		left := (widths[i] - n) / 2
		sb.WriteString(" " + strings.Repeat(" ", left) + c.Name + strings.Repeat(" ", widths[i]-n-left) + " ")
	}
	sb.WriteString("\n")
	for i := range r.Columns {
		if i > 0 {
			sb.WriteString("+")
		}
		sb.WriteString(strings.Repeat("-", widths[i]+2))
	}
	sb.WriteString("\n")
	for _, row := range r.Rows {
		for i, v := range row {
			if i > 0 {
				sb.WriteString("|")
			}
			s := ""
			if v != nil {
				s = *v
			}
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(s))
			if right[i] {
				sb.WriteString(" " + pad + s + " ")
			} else {
				sb.WriteString(" " + s + pad + " ")
			}
		}
		sb.WriteString("\n")
	}
	if len(r.Rows) == 1 {
		sb.WriteString("(1 row)\n\n")
	} else {
		fmt.Fprintf(&sb, "(%d rows)\n\n", len(r.Rows))
	}
	io.WriteString(w, sb.String())
}

// WriteNotices writes a result's notices as psql prints them ("NOTICE:  started job job-3"), one a line.
func WriteNotices(w io.Writer, res *Result) {
	for _, n := range res.Notices {
		fmt.Fprintf(w, "NOTICE:  %s\n", n)
	}
}
