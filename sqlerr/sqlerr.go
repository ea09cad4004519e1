// Package sqlerr is the one error type every user-facing failure becomes: a Postgres error with a SQLSTATE, a
// message, and for SQL text the byte offset it points at. The parser, the planner, the expression binder and the
// engine create them; pgwire, the REPL and `clinksql exec` render them. It is a leaf package: it imports nothing
// of ours, and must never grow logic beyond building, wrapping and reading these errors.
package sqlerr

import (
	"errors"
	"fmt"
	"syscall"
)

// SQLSTATE codes used across the engine (Postgres' appendix A).
const (
	SyntaxError            = "42601"
	UndefinedTable         = "42P01"
	UndefinedColumn        = "42703"
	UndefinedFunction      = "42883"
	UndefinedObject        = "42704"
	DuplicateObject        = "42710"
	DuplicateTable         = "42P07"
	AmbiguousColumn        = "42702"
	UndefinedParameter     = "42P02"
	DuplicateColumn        = "42701"
	InvalidColumnReference = "42P10"
	InvalidTableDefinition = "42P16" // two primary keys
	WrongObjectType        = "42809"
	DatatypeMismatch       = "42804"
	GroupingError          = "42803"
	WindowingError         = "42P20" // windowing_error: OVER w without a window w, a window named twice
	InvalidParameter       = "22023" // invalid_parameter_value: a bad option or SET value
	DependentObjects       = "2BP01" // dependent_objects_still_exist: DROP without CASCADE
	FeatureNotSupported    = "0A000"
	DataException          = "22000"
	DivisionByZero         = "22012"
	InvalidTextRep         = "22P02" // invalid_text_representation: '12x'::int
	NumericOutOfRange      = "22003"
	InvalidDatetime        = "22007" // invalid_datetime_format
	InvalidRegex           = "2201B"
	InvalidArgument        = "22023"
	StringTooLong          = "22001"
	InsufficientPriv       = "42501" // a connector path outside the allowed directories
	ObjectInUse            = "55006"
	InvalidJobState        = "55000" // object_not_in_prerequisite_state
	QueryCanceled          = "57014"
	InternalError          = "XX000"
	DataCorrupted          = "XX001" // data_corrupted: a durable file failed its checksum or is missing
	IOError                = "58030"
	UndefinedFile          = "58P01" // a connector path that does not exist
	DiskFull               = "53100" // disk_full: ENOSPC (or a quota) under a statement's or a job's write
	ProtocolViolation      = "08P01"
	InvalidSQLStatement    = "26000"
	InvalidCursorState     = "24000"
	ConfigurationLimit     = "53400"
	CardinalityViolation   = "21000"
	NotNullViolation       = "23502" // a NULL in a table's primary key column
	// InvalidFunctionDefinition (42P13) is a CREATE FUNCTION whose body or result type does not fit its declaration.
	InvalidFunctionDefinition = "42P13"
	DuplicateFunction         = "42723"
)

// SQLSTATE codes of the limits that keep one client from taking the server down.
const (
	OutOfMemory          = "53200" // a result kept until its end outgrew max_result_memory
	ProgramLimitExceeded = "54000" // a statement longer than max_statement_size
	ConnectionFailure    = "08006" // a client that went away while its rows were sent
)

// NoPos marks an error that points at no particular place of the text.
const NoPos = -1

// Error is a user-facing error.
type Error struct {
	Code string // SQLSTATE
	Msg  string
	// Pos is a byte offset into the statement text the error is about, or NoPos.
	Pos    int
	Detail string
	Hint   string
	// Err is the underlying cause, if any (kept for errors.Is/As; not shown to users beyond Msg).
	Err error
}

func (e *Error) Error() string { return e.Msg }

// Permanent reports whether the error is a data exception (class 22): evaluating the same rows again fails the
// same way, so a job hitting one fails instead of restarting (exec.Permanent).
func (e *Error) Permanent() bool { return len(e.Code) == 5 && e.Code[:2] == "22" }
func (e *Error) Unwrap() error   { return e.Err }

// New returns an error with code and message at pos (NoPos for none).
func New(code string, pos int, format string, args ...any) *Error {
	return &Error{Code: code, Pos: pos, Msg: fmt.Sprintf(format, args...)}
}

// Coded is implemented by errors of other packages that know their SQLSTATE (state.CorruptError is XX001), so
// that this leaf package need not import them.
type Coded interface {
	SQLState() string
}

// Wrap turns err into an Error with code unless it already is one; the message is err's. An err that wraps a
// Coded error takes that error's code instead of code (damage found under an I/O error is still XX001), and one
// that wraps ENOSPC or EDQUOT is 53100 disk_full.
func Wrap(code string, err error) *Error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	var c Coded
	if errors.As(err, &c) {
		code = c.SQLState()
	} else if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		code = DiskFull // whatever layer it came through: a full disk is the user's to fix, never XX000
	}
	return &Error{Code: code, Pos: NoPos, Msg: err.Error(), Err: err}
}

// As returns err as an Error: itself when it is one, otherwise an internal error (XX000) carrying its text.
func As(err error) *Error {
	if err == nil {
		return nil
	}
	return Wrap(InternalError, err)
}

// Code returns err's SQLSTATE, or "" when err is not an Error.
func Code(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// WithPos returns a copy of e pointing at pos, unless e already points somewhere.
func (e *Error) WithPos(pos int) *Error {
	if e.Pos != NoPos || pos == NoPos {
		return e
	}
	c := *e
	c.Pos = pos
	return &c
}

// Shift moves e's position by delta: a statement's error, reported against the whole script it came from.
func (e *Error) Shift(delta int) *Error {
	if e.Pos == NoPos || delta == 0 {
		return e
	}
	c := *e
	c.Pos += delta
	return &c
}
