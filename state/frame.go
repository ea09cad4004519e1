package state

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"io/fs"
)

// Every durable file the engine writes and later reads back (stream and view segments, checkpoint markers and
// the high-water mark, state snapshots and keyed-state listings, in-flight logs, the catalog) is framed the same
// way, so one reader checks them all:
//
//	"CLKF"          4 bytes, magic
//	version         1 byte (frameVersion)
//	payload         any length
//	payload length  8 bytes, little endian
//	CRC-32C         4 bytes, little endian, Castagnoli, of every byte before it (magic through length)
//
// The length and checksum trail the payload so a writer can stream it (FrameWriter) without knowing its size up
// front. A file that is missing its trailer (truncated), has a different length, a wrong checksum, or no magic
// (written by a clinksql from before this format, or not ours at all) is refused with a *CorruptError naming it.
// Pebble's own files (sstables, MANIFEST) carry Pebble's checksums instead; see CorruptPebble.
const (
	frameMagic   = "CLKF"
	frameVersion = 1
	frameHeader  = len(frameMagic) + 1
	frameTrailer = 8 + 4
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// CorruptError is a durable file that does not read back as it was written: missing, truncated, or failing its
// checksum. Its SQLSTATE is XX001 (data_corrupted) and it is permanent: a restart reads the same bytes, so a job
// that meets one fails at once instead of restarting.
type CorruptError struct {
	Path   string // the file (or directory, for a Pebble store) that is damaged
	Reason string
	Err    error // the underlying error, if any
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("data corrupted: %s: %s", e.Path, e.Reason)
}

func (e *CorruptError) Unwrap() error { return e.Err }

// SQLState is data_corrupted (sqlerr.Wrap and sqlerr.As read it).
func (e *CorruptError) SQLState() string { return "XX001" }

// Permanent reports true: reading the same file again fails the same way (exec.Permanent).
func (e *CorruptError) Permanent() bool { return true }

// Corrupt returns a *CorruptError for path.
func Corrupt(path string, err error, format string, args ...any) *CorruptError {
	return &CorruptError{Path: path, Reason: fmt.Sprintf(format, args...), Err: err}
}

// IsCorrupt reports whether err is, or wraps, a *CorruptError, and returns it.
func IsCorrupt(err error) (*CorruptError, bool) {
	var c *CorruptError
	ok := errors.As(err, &c)
	return c, ok
}

// Frame returns payload framed (see above).
func Frame(payload []byte) []byte {
	buf := make([]byte, 0, frameHeader+len(payload)+frameTrailer)
	buf = append(buf, frameMagic...)
	buf = append(buf, frameVersion)
	buf = append(buf, payload...)
	buf = binary.LittleEndian.AppendUint64(buf, uint64(len(payload)))
	return binary.LittleEndian.AppendUint32(buf, crc32.Checksum(buf, crcTable))
}

// Unframe checks a framed file's bytes and returns its payload (aliasing data). path only names the file in the
// error.
func Unframe(path string, data []byte) ([]byte, error) {
	if len(data) < frameHeader || string(data[:len(frameMagic)]) != frameMagic {
		return nil, Corrupt(path, nil, "not a checksummed clinksql file (no CLKF header: damaged, or written before clinksql checksummed its files)")
	}
	if v := data[len(frameMagic)]; v != frameVersion {
		return nil, Corrupt(path, nil, "file format version %d, this build reads %d", v, frameVersion)
	}
	if len(data) < frameHeader+frameTrailer {
		return nil, Corrupt(path, nil, "truncated: %d bytes", len(data))
	}
	end := len(data) - frameTrailer
	if n := binary.LittleEndian.Uint64(data[end:]); n != uint64(end-frameHeader) {
		return nil, Corrupt(path, nil, "length mismatch: the file says %d payload bytes, it has %d (truncated or extended)", n, end-frameHeader)
	}
	if crc32.Checksum(data[:len(data)-4], crcTable) != binary.LittleEndian.Uint32(data[len(data)-4:]) {
		return nil, Corrupt(path, nil, "checksum mismatch")
	}
	return data[frameHeader:end], nil
}

// WriteFramed frames payload and writes it durably at path (WriteFsyncRename).
func WriteFramed(fsys FS, path string, payload []byte) error {
	return WriteFsyncRename(fsys, path, Frame(payload))
}

// ReadFramed reads a framed file and returns its checked payload. A missing file is returned as the file system's
// error (errors.Is fs.ErrNotExist): whether absence is damage is the caller's call (MustReadFramed says it is).
func ReadFramed(fsys FS, path string) ([]byte, error) {
	data, err := orOS(fsys).ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Unframe(path, data)
}

// MustReadFramed is ReadFramed for a file whose absence is itself damage: a missing file is a *CorruptError.
func MustReadFramed(fsys FS, path string) ([]byte, error) {
	data, err := ReadFramed(fsys, path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, Corrupt(path, err, "missing")
	}
	return data, err
}

// FrameWriter streams a framed file into w: NewFrameWriter writes the header, Write the payload, Close the
// trailer (it does not close w).
type FrameWriter struct {
	w   io.Writer
	crc hash.Hash32
	n   uint64
}

// NewFrameWriter starts a framed file on w.
func NewFrameWriter(w io.Writer) (*FrameWriter, error) {
	f := &FrameWriter{w: w, crc: crc32.New(crcTable)}
	hdr := append([]byte(frameMagic), frameVersion)
	if _, err := w.Write(hdr); err != nil {
		return nil, err
	}
	f.crc.Write(hdr)
	return f, nil
}

func (f *FrameWriter) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	f.crc.Write(p[:n])
	f.n += uint64(n)
	return n, err
}

// Close writes the trailer.
func (f *FrameWriter) Close() error {
	tr := binary.LittleEndian.AppendUint64(nil, f.n)
	f.crc.Write(tr)
	tr = binary.LittleEndian.AppendUint32(tr, f.crc.Sum32())
	_, err := f.w.Write(tr)
	return err
}
