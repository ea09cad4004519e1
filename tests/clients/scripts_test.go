package clients

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// runClient runs a client program with a deadline and fails the test with its output unless it exits 0.
func runClient(t *testing.T, timeout time.Duration, dir string, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PGCONNECT_TIMEOUT=10")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%s %v: no exit within %v:\n%s", name, args, timeout, out.String())
	}
	if err != nil {
		t.Fatalf("%s %v: %v:\n%s", name, args, err, out.String())
	}
	// The log names the client and its time; long outputs (psql's) show their first line only.
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	summary := lines[0]
	if len(lines) > 1 {
		summary += fmt.Sprintf(" ... (%d lines)", len(lines))
	}
	t.Logf("%s (%v): %s", filepath.Base(name), time.Since(start).Round(time.Millisecond), summary)
	return out.String()
}

// pythonWithPsycopg2 finds an interpreter that can import psycopg2: CLINKSQL_PYTHON, else Debian's
// /usr/bin/python3 (which Debian's python3-psycopg2 serves), else the python3 first on PATH.
func pythonWithPsycopg2(t *testing.T) string {
	t.Helper()
	candidates := []string{"/usr/bin/python3", "python3"}
	if p := os.Getenv("CLINKSQL_PYTHON"); p != "" {
		candidates = []string{p}
	}
	var tried []string
	for _, c := range candidates {
		p, err := exec.LookPath(c)
		if err != nil {
			tried = append(tried, c+" (not found)")
			continue
		}
		if err := exec.Command(p, "-c", "import psycopg2").Run(); err != nil {
			tried = append(tried, p+" (cannot import psycopg2)")
			continue
		}
		return p
	}
	missingTool(t, "no Python interpreter with psycopg2 (Debian package python3-psycopg2): tried %v", tried)
	return ""
}

// pins: psycopg2 binds %s parameters (int, str, Decimal, datetime) into the INSERT, in a transaction and with
// executemany, flushes, and reads the view back as str, datetime (naive), int and Decimal with the scale kept.
func TestPsycopg2(t *testing.T) {
	py := pythonWithPsycopg2(t)
	srv := startServer(t)
	script, err := filepath.Abs("testdata/client.py")
	if err != nil {
		t.Fatal(err)
	}
	runClient(t, 60*time.Second, t.TempDir(), py, script, srv.Host, strconv.Itoa(srv.Port))
}

// jdbcJar is pgjdbc: CLINKSQL_JDBC_JAR, else Debian's libpostgresql-jdbc-java.
func jdbcJar(t *testing.T) string {
	t.Helper()
	jar := "/usr/share/java/postgresql.jar"
	if p := os.Getenv("CLINKSQL_JDBC_JAR"); p != "" {
		jar = p
	}
	if _, err := os.Stat(jar); err != nil {
		missingTool(t, "JDBC driver %s not found (Debian package libpostgresql-jdbc-java)", jar)
	}
	return jar
}

// pins: pgjdbc's PreparedStatement with setLong/setString/setBigDecimal/setTimestamp inserts (its parameter
// metadata inferred by the server), and the view reads back through getLong/getTimestamp/getBigDecimal/getString
// with ResultSetMetaData types BIGINT, TIMESTAMP, NUMERIC, VARCHAR.
func TestJDBC(t *testing.T) {
	javac := lookTool(t, "javac", "default-jdk-headless")
	java := lookTool(t, "java", "default-jdk-headless")
	jar := jdbcJar(t)
	src, err := filepath.Abs("testdata/ClientTest.java")
	if err != nil {
		t.Fatal(err)
	}
	classes := t.TempDir()
	// Compiled while nothing else runs yet; the JVM flags keep the start short (no JIT beyond C1, serial GC).
	runClient(t, 60*time.Second, classes, javac, "-J-XX:TieredStopAtLevel=1", "-J-XX:+UseSerialGC",
		"-nowarn", "-d", classes, "-cp", jar, src)
	srv := startServer(t)
	runClient(t, 60*time.Second, classes, java, "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
		"-Duser.timezone=UTC", "-cp", classes+string(os.PathListSeparator)+jar, "ClientTest",
		srv.Host, strconv.Itoa(srv.Port))
}
