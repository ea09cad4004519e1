package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clinksql/clinksql/sqlerr"
)

// pins (issue 11, item 3): connector paths are confined after glob expansion and with every symbolic link
// resolved, for sources and sinks alike; the data directory's own entries are never readable.
func TestConnectorPathsConfined(t *testing.T) {
	root := t.TempDir()
	data, allowed, outside := filepath.Join(root, "data"), filepath.Join(root, "allowed"), filepath.Join(root, "outside")
	for _, d := range []string{data, allowed, outside, filepath.Join(allowed, "in"), filepath.Join(data, "mine")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p, s string) {
		t.Helper()
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, name string) {
		t.Helper()
		if err := os.Symlink(target, name); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(outside, "secret.csv"), "42\n")
	write(filepath.Join(allowed, "in", "a.csv"), "1\n")
	write(filepath.Join(data, "mine", "b.csv"), "2\n")
	link(outside, filepath.Join(data, "out"))                                         // a directory link out of the data directory
	link(outside, filepath.Join(allowed, "out"))                                      // and out of an allowed one
	link(filepath.Join(outside, "secret.csv"), filepath.Join(allowed, "in", "s.csv")) // a file link a glob lists
	link(filepath.Join(outside, "new"), filepath.Join(data, "dangling"))              // a sink would create its target
	link(filepath.Join(data, "catalog"), filepath.Join(allowed, "cat"))               // back into the engine's own files
	link(filepath.Join(allowed, "in"), filepath.Join(data, "via"))                    // a link into an allowed directory

	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	e, err := Open(Config{DataDir: data, AllowPaths: []string{allowed}, Alloc: mem})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		closeEngine(t, e)
		mem.AssertSize(t, 0)
	}()
	s := e.NewSession()
	mustExec(t, s, `CREATE STREAM fed (x BIGINT)`)
	mustExec(t, s, `INSERT INTO fed VALUES (1)`) // the streams directory has files now

	refused := [][2]string{
		{"glob into catalog", `CREATE STREAM r (x VARCHAR) WITH (connector = 'file', format = 'csv', path = '*/catalog.json')`},
		{"class glob into catalog", `CREATE STREAM r (x VARCHAR) WITH (connector = 'file', format = 'csv', path = '[c]atalog/*')`},
		{"glob of every dir", `CREATE STREAM r (x VARCHAR) WITH (connector = 'file', format = 'csv', path = '*/*')`},
		{"parquet glob", `CREATE STREAM r (x BIGINT) WITH (connector = 'parquet', path = '*/*')`},
		{"dir link", `CREATE STREAM r (x BIGINT) WITH (connector = 'file', format = 'csv', path = 'out')`},
		{"file under a dir link", `CREATE STREAM r (x BIGINT) WITH (connector = 'file', format = 'csv', path = 'out/secret.csv')`},
		{"allowed dir link", `CREATE STREAM r (x BIGINT) WITH (connector = 'file', format = 'csv', path = '` + filepath.Join(allowed, "out", "secret.csv") + `')`},
		{"file link a glob lists", `CREATE STREAM r (x BIGINT) WITH (connector = 'file', format = 'csv', path = '` + filepath.Join(allowed, "in", "*.csv") + `')`},
		{"file link a dir lists", `CREATE STREAM r (x BIGINT) WITH (connector = 'file', format = 'csv', path = '` + filepath.Join(allowed, "in") + `')`},
		{"link back into catalog", `CREATE STREAM r (x VARCHAR) WITH (connector = 'file', format = 'csv', path = '` + filepath.Join(allowed, "cat") + `')`},
		{"sink under a dir link", `CREATE SINK r (x BIGINT) WITH (connector = 'file', format = 'csv', path = 'out/new')`},
		{"parquet sink dir link", `CREATE SINK r (x BIGINT) WITH (connector = 'parquet', path = '` + filepath.Join(allowed, "out") + `')`},
		{"sink through dangling", `CREATE SINK r (x BIGINT) WITH (connector = 'file', format = 'csv', path = 'dangling/x')`},
	}
	for i, c := range refused {
		name, sql := c[0], strings.Replace(c[1], " r (", fmt.Sprintf(" r%d (", i), 1)
		_, err := s.Execute(context.Background(), sql)
		if sqlerr.Code(err) != sqlerr.InsufficientPriv {
			t.Errorf("%s: %s: got %v (%s), want 42501", name, sql, err, sqlerr.Code(err))
		}
	}
	if _, err := os.Stat(filepath.Join(outside, "new")); err == nil {
		t.Error("a refused sink created a directory outside")
	}

	// Links that stay inside are followed; the data directory is a glob's base.
	mustExec(t, s, `CREATE STREAM ok1 (x BIGINT) WITH (connector = 'file', format = 'csv', path = 'via/a.csv')`)
	mustExec(t, s, `CREATE STREAM ok2 (x BIGINT) WITH (connector = 'file', format = 'csv', path = 'm*/*.csv')`)
	equalLines(t, "ok1", rows(t, s, `SELECT x FROM ok1`), []string{"1"})
	equalLines(t, "ok2", rows(t, s, `SELECT x FROM ok2`), []string{"2"})

	// A link swapped in after CREATE is refused when the files are listed again.
	if err := os.Remove(filepath.Join(data, "mine", "b.csv")); err != nil {
		t.Fatal(err)
	}
	link(filepath.Join(outside, "secret.csv"), filepath.Join(data, "mine", "b.csv"))
	if _, err := s.Execute(context.Background(), `SELECT x FROM ok2`); sqlerr.Code(err) != sqlerr.InsufficientPriv {
		t.Errorf("SELECT after the swap: %v, want 42501", err)
	}
}
