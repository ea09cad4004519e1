package sqllogic

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/clinksql/clinksql/exec/wasm/wasmtest"
)

var wasmFunction = regexp.MustCompile(`(?i)LANGUAGE\s+wasm`)

// putWasmModules puts the test modules of exec/wasm/testdata into the data directory dir as udf/<name>.wasm
// (countchar, misbehave) when the file at path creates wasm functions, so that it can name them by a path
// inside the data directory. Building them needs the Go toolchain (wasmtest skips the file without it, or fails
// under CI=true).
func putWasmModules(t *testing.T, path, dir string) {
	b, err := os.ReadFile(path)
	if err != nil || !wasmFunction.Match(b) {
		return
	}
	if err := os.MkdirAll(filepath.Join(dir, "udf"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"countchar", "misbehave"} {
		if err := os.WriteFile(filepath.Join(dir, "udf", name+".wasm"), wasmtest.Bytes(t, name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
