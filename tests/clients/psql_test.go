package clients

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// psqlMajor is the installed psql's major version (psql 16 brought \bind).
func psqlMajor(t *testing.T, psql string) int {
	t.Helper()
	out, err := exec.Command(psql, "--version").Output()
	if err != nil {
		t.Fatalf("psql --version: %v", err)
	}
	m := regexp.MustCompile(`\(PostgreSQL\) (\d+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("psql --version: %q", out)
	}
	v, _ := strconv.Atoi(string(m[1]))
	return v
}

// psql runs a script file with psql against srv: no psqlrc, stop at the first error.
func psql(t *testing.T, bin, host string, port int, script string, extra ...string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "script.sql")
	if err := os.WriteFile(file, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"-X", "-v", "ON_ERROR_STOP=1", "-h", host, "-p", strconv.Itoa(port), "-U", "clinksql",
		"-d", "clinksql"}, extra...)
	args = append(args, "-f", file)
	return runClient(t, 60*time.Second, "", bin, args...)
}

// pins: a psql script (the scenario, with \bind parameters where psql has them, psql 16 and later, else plain
// INSERTs: PREPARE is not in the dialect) prints what psql prints against Postgres: command tags, the view's rows
// in aligned form with the numeric columns right-aligned (int8 and numeric OIDs); \gdesc names the column types;
// \d lists the stream and the view, and \d clicks its columns with their Postgres types.
func TestPsql(t *testing.T) {
	bin := lookTool(t, "psql", "postgresql-client")
	bind := psqlMajor(t, bin) >= 16
	srv := startServer(t)
	host, port := srv.Host, srv.Port
	run := func(t *testing.T, script string, extra ...string) string {
		return psql(t, bin, host, port, script, extra...)
	}

	var script, want strings.Builder
	script.WriteString(createStream + ";\n" + createView + ";\n")
	want.WriteString("CREATE STREAM\n")
	want.WriteString("CREATE MATERIALIZED VIEW\n") // and the job's id as a notice, on stderr
	for _, c := range clicks {
		if bind {
			fmt.Fprintf(&script, "%s \\bind %s %s %s '%s' \\g\n", insertSQL, c.userID, c.url, c.amount, c.ts)
		} else {
			fmt.Fprintf(&script, "INSERT INTO clicks VALUES (%s, '%s', %s, '%s');\n", c.userID, c.url, c.amount, c.ts)
		}
		want.WriteString("INSERT 0 1\n")
	}
	script.WriteString("FLUSH;\n" + selectSQL + ";\n")
	want.WriteString("FLUSH\n")
	var rows [][]string
	for _, r := range perURL {
		rows = append(rows, r[:])
	}
	want.WriteString(psqlTable([]string{"url", "window_start", "window_end", "n", "total", "last_ts", "top_user"},
		[]bool{false, false, false, true, true, false, true}, rows))

	t.Run("script", func(t *testing.T) {
		if !bind {
			t.Logf("psql %d has no \\bind: the script inserts with plain INSERT ... VALUES", psqlMajor(t, bin))
		}
		got := run(t, script.String())
		notice := regexp.MustCompile(`(?m)^psql:[^\n]*: NOTICE:  started job job-1\n`)
		if n := len(notice.FindAllString(got, -1)); n != 1 {
			t.Errorf("%d notices of the started job in:\n%s", n, got)
		}
		got = notice.ReplaceAllString(got, "")
		if got != want.String() {
			t.Errorf("psql output:\n%s\nwant:\n%s\nscript:\n%s", got, want.String(), script.String())
		}
	})

	t.Run("gdesc", func(t *testing.T) {
		got := run(t, selectSQL+" \\gdesc\n", "-A", "-t")
		want := "url|character varying\n" +
			"window_start|timestamp without time zone\n" +
			"window_end|timestamp without time zone\n" +
			"n|bigint\n" +
			"total|numeric\n" +
			"last_ts|timestamp without time zone\n" +
			"top_user|bigint\n"
		// A typmod the server may send (timestamp(3), numeric(38,2)) is as good.
		norm := regexp.MustCompile(`(timestamp|numeric)\(\d+(,\d+)?\)`).ReplaceAllString(got, "$1")
		if norm != want {
			t.Errorf("\\gdesc:\n%s\nwant:\n%s", got, want)
		}
	})

	t.Run("d", func(t *testing.T) {
		got := run(t, "\\d\n")
		for _, name := range []string{"clicks", "per_url"} {
			if !regexp.MustCompile(`(?m)^ *\w+ *\| *` + name + ` *\|`).MatchString(got) {
				t.Errorf("\\d does not list %s:\n%s", name, got)
			}
		}
		got = run(t, "\\d clicks\n")
		for _, col := range [][2]string{
			{"user_id", "bigint"},
			{"url", "character varying"},
			{"amount", `numeric\(10,2\)`},
			{"ts", `timestamp\(3\) without time zone`},
		} {
			if !regexp.MustCompile(`(?m)^ *` + col[0] + ` *\| *` + col[1] + ` *\|`).MatchString(got) {
				t.Errorf("\\d clicks: no column %s of type %s:\n%s", col[0], col[1], got)
			}
		}
	})
}

// psqlTable is psql's aligned output (border 1) of one result: headers centred, each value padded to its column's
// width (right-aligned columns are the numeric types), the last column unpadded unless right-aligned, the row
// count, and an empty line.
func psqlTable(headers []string, right []bool, rows [][]string) string {
	widths := make([]int, len(headers))
	for i, h := range headers {
		widths[i] = len(h)
		for _, r := range rows {
			widths[i] = max(widths[i], len(r[i]))
		}
	}
	var b strings.Builder
	for i, h := range headers {
		if i > 0 {
			b.WriteString("|")
		}
		pad := widths[i] - len(h)
		b.WriteString(" " + strings.Repeat(" ", pad/2) + h + strings.Repeat(" ", pad-pad/2) + " ")
	}
	b.WriteString("\n")
	for i := range headers {
		if i > 0 {
			b.WriteString("+")
		}
		b.WriteString(strings.Repeat("-", widths[i]+2))
	}
	b.WriteString("\n")
	for _, r := range rows {
		for i, v := range r {
			if i > 0 {
				b.WriteString(" |")
			}
			b.WriteString(" ")
			pad := strings.Repeat(" ", widths[i]-len(v))
			switch {
			case right != nil && right[i]:
				b.WriteString(pad + v)
			case i < len(r)-1:
				b.WriteString(v + pad)
			default:
				b.WriteString(v)
			}
		}
		b.WriteString("\n")
	}
	if len(rows) == 1 {
		b.WriteString("(1 row)\n\n")
	} else {
		fmt.Fprintf(&b, "(%d rows)\n\n", len(rows))
	}
	return b.String()
}
