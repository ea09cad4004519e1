// Package wasmtest builds the Go-written wasm modules of exec/wasm/testdata (countchar, misbehave) for tests and
// benchmarks: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared, with the go command that runs the tests.
package wasmtest

import (
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// Source is the directory of module name's source (exec/wasm/testdata/<name>).
func Source(name string) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "testdata", name)
}

// BuildModule builds module name into the file out.
func BuildModule(name, out string) error {
	goCmd := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goCmd); err != nil {
		goCmd = "go"
	}
	abs, err := filepath.Abs(out)
	if err != nil {
		return err
	}
	cmd := exec.Command(goCmd, "build", "-buildmode=c-shared", "-o", abs, ".")
	cmd.Dir = Source(name)
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "GOFLAGS=", "GOWORK=off", "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build of %s for wasip1: %v\n%s", name, err, strings.TrimSpace(string(b)))
	}
	return nil
}

var (
	mu    sync.Mutex
	built = map[string]string{}
)

// Build returns the path of module name. Builds are kept in the system's temporary directory under a name made
// of the source's and the toolchain's digest, so test processes share them and a changed source builds anew.
// When the toolchain cannot build it, the test is skipped with the reason, or fails when CI=true.
func Build(t testing.TB, name string) string {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	if p, ok := built[name]; ok {
		return p
	}
	p, err := Cached(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("building the wasm test module: %v", err)
		}
		t.Skipf("cannot build the wasm test module (GOOS=wasip1 GOARCH=wasm -buildmode=c-shared needs Go 1.24 or later): %v", err)
	}
	built[name] = p
	return p
}

// Cached returns the path of module name's build in the shared cache (the system's temporary directory, by the
// digest of its source and toolchain), building it when it is not there.
func Cached(name string) (string, error) {
	h := sha256.New()
	h.Write([]byte(runtime.Version()))
	for _, f := range []string{"main.go", "go.mod"} {
		b, err := os.ReadFile(filepath.Join(Source(name), f))
		if err != nil {
			return "", err
		}
		h.Write(b)
	}
	dir := filepath.Join(os.TempDir(), "clinksql-wasmtest")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	p := filepath.Join(dir, fmt.Sprintf("%s-%x.wasm", name, h.Sum(nil)[:8]))
	if _, err := os.Stat(p); err == nil {
		return p, nil
	}
	tmp, err := os.CreateTemp(dir, name+"-*.tmp")
	if err != nil {
		return "", err
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	if err := BuildModule(name, tmp.Name()); err != nil {
		return "", err
	}
	return p, os.Rename(tmp.Name(), p)
}

// Bytes is Build's module read into memory.
func Bytes(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(Build(t, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
