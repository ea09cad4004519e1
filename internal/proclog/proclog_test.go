package proclog

import (
	"io"
	"strings"
	"testing"
	"time"
)

// A line longer than the scanner takes does not stop Read from draining the pipe: the writer is never blocked.
func TestReadDrainsAfterALongLine(t *testing.T) {
	r, w := io.Pipe()
	l := New("ready", 10)
	go l.Read(r)
	written := make(chan struct{})
	go func() {
		defer close(written)
		io.WriteString(w, "ready\n"+strings.Repeat("x", 1<<17)+"\n")
		for range 100 {
			io.WriteString(w, "more\n")
		}
		w.Close()
	}()
	select {
	case <-written:
	case <-time.After(10 * time.Second):
		r.Close() // unblock the writer
		t.Fatal("Read stopped draining after a long line: the writer is blocked")
	}
	<-l.Ready()
	if got := l.String(); got != "ready" {
		t.Errorf("kept %q", got)
	}
}
