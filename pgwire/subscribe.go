package pgwire

import (
	"time"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/clinksql/clinksql/engine"
	"github.com/clinksql/clinksql/sqlerr"
)

// COPY (<query>) TO STDOUT and SUBSCRIBE's cut-off, on the rowStream a statement writes its rows to.

// abortGrace is how long a SUBSCRIBE cut off for lag (engine.RowAborter) still gives a client to take what was
// sent before a blocked write fails and the connection closes.
const abortGrace = 2 * time.Second

var (
	_ engine.CopyWriter = (*rowStream)(nil)
	_ engine.RowAborter = (*rowStream)(nil)
)

// CopyOut starts COPY ... TO STDOUT: CopyOutResponse, every column in text format.
func (s *rowStream) CopyOut(cols []engine.Column) error {
	s.copying = true
	s.c.be.Send(&pgproto3.CopyOutResponse{OverallFormat: 0, ColumnFormatCodes: make([]uint16, len(cols))})
	s.c.flush()
	return s.sendErr()
}

// CopyData sends a batch of COPY lines, one CopyData each, and flushes them: a SUBSCRIBE's changes reach the
// client as they come.
func (s *rowStream) CopyData(lines [][]byte) error {
	for _, l := range lines {
		s.c.send(&pgproto3.CopyData{Data: l}, len(l)+5)
	}
	s.c.flush()
	return s.sendErr()
}

func (s *rowStream) sendErr() error {
	if s.c.broken {
		return sqlerr.New(sqlerr.ConnectionFailure, sqlerr.NoPos, "could not send data to client")
	}
	return nil
}

// AbortRows is told that a SUBSCRIBE is cut off (max_subscribe_lag) while a write to the client may be blocked:
// a client that takes nothing within abortGrace is disconnected. It may be called from any goroutine.
func (s *rowStream) AbortRows() {
	s.c.mu.Lock()
	s.c.abortedWrite = true
	s.c.mu.Unlock()
	_ = s.c.nc.SetWriteDeadline(time.Now().Add(abortGrace))
}

// endStatement ends what a statement's rowStream began: COPY's CopyDone when it succeeded, and the write
// deadline of an AbortRows lifted (the connection is still usable if the client took everything in time).
func (s *rowStream) endStatement(ok bool) {
	if s.copying {
		if ok {
			s.c.be.Send(&pgproto3.CopyDone{})
		}
		s.copying = false
	}
	s.c.mu.Lock()
	aborted := s.c.abortedWrite
	s.c.abortedWrite = false
	s.c.mu.Unlock()
	if aborted && !s.c.broken {
		_ = s.c.nc.SetWriteDeadline(time.Time{})
	}
}
