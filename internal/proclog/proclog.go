// Package proclog keeps the output of a server process a test harness started (PostgreSQL, nats-server) and tells
// when it printed its ready line, and finds a free loopback port for it. It is for test harnesses only; the engine
// never imports it.
package proclog

import (
	"bufio"
	"io"
	"net"
	"strings"
	"sync"
)

// Log keeps up to Max lines of a process's output and closes Ready at the first line containing the marker.
type Log struct {
	marker string
	max    int
	ready  chan struct{}

	mu    sync.Mutex
	lines []string
}

// New returns a log that is ready at the first line containing marker and keeps at most max lines.
func New(marker string, max int) *Log {
	return &Log{marker: marker, max: max, ready: make(chan struct{})}
}

// Ready is closed once the ready line was read.
func (l *Log) Ready() <-chan struct{} { return l.ready }

// Read reads r line by line until it ends (run it on a goroutine of its own). A line too long to keep (over
// bufio.MaxScanTokenSize) ends the keeping, not the reading: the rest is drained, so that the process never blocks
// writing to a full pipe.
func (l *Log) Read(r io.Reader) {
	defer io.Copy(io.Discard, r)
	sc := bufio.NewScanner(r)
	seen := false
	for sc.Scan() {
		line := sc.Text()
		l.mu.Lock()
		if len(l.lines) < l.max {
			l.lines = append(l.lines, line)
		}
		l.mu.Unlock()
		if !seen && strings.Contains(line, l.marker) {
			seen = true
			close(l.ready)
		}
	}
}

// String is the lines kept, joined.
func (l *Log) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// FreePort is a loopback TCP port nothing listened on a moment ago (a server started on it may still lose a race
// for it: a harness retries on "address already in use").
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
