package txnfile

import (
	"bufio"

	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/state"
)

// What the protocol's tests (package txnfile_test, which drives it through the real sinks) reach inside a sink:
// the open transaction of a process that dies.

// Buffer is the sink's write buffer in front of its in-progress file.
func Buffer(s exec.Sink) *bufio.Writer { return s.(*Sink).buf }

// File is the sink's in-progress file.
func File(s exec.Sink) state.File { return s.(*Sink).file }
