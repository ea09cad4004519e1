// Package enginetest opens engines for the tests of the packages above the engine (web, web/console): on a
// checked allocator, closed when the test ends, with the close's error and any Arrow allocation left over
// reported as the test's failures.
package enginetest

import (
	"context"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clinksql/clinksql/engine"
)

// Open opens an engine on dir with a checked allocator; the test's cleanup closes it (a minute at most) and checks
// that the close succeeded and freed every allocation.
func Open(t testing.TB, dir string) *engine.Engine {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	e, err := engine.Open(engine.Config{DataDir: dir, Alloc: mem})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := e.Close(ctx); err != nil {
			t.Errorf("close: %v", err)
		}
		mem.AssertSize(t, 0)
	})
	return e
}
