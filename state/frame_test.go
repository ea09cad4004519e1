package state

import (
	"bytes"
	"errors"
	"io/fs"
	"path/filepath"
	"testing"
)

// Pins the shared framing: every truncation and every single flipped bit of a framed file is refused with a
// *CorruptError naming the file, and the streamed form (FrameWriter) is byte for byte the one-shot form.
func TestFrameRefusesEveryTruncationAndFlip(t *testing.T) {
	payload := []byte("clinksql durable payload\x00\x01\x02")
	framed := Frame(payload)
	var streamed bytes.Buffer
	w, err := NewFrameWriter(&streamed)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(payload[:5])
	w.Write(payload[5:])
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(streamed.Bytes(), framed) {
		t.Fatalf("FrameWriter wrote %x, Frame %x", streamed.Bytes(), framed)
	}
	got, err := Unframe("f", framed)
	if err != nil || !bytes.Equal(got, payload) {
		t.Fatalf("Unframe = %q, %v", got, err)
	}
	check := func(what string, data []byte) {
		t.Helper()
		_, err := Unframe("/x/f", data)
		if c, ok := IsCorrupt(err); !ok || c.Path != "/x/f" {
			t.Fatalf("%s: %v, want a CorruptError naming /x/f", what, err)
		}
	}
	for n := 0; n < len(framed); n++ {
		check("truncated", framed[:n])
	}
	check("extended", append(append([]byte(nil), framed...), 0))
	for i := range framed {
		for bit := 0; bit < 8; bit++ {
			d := append([]byte(nil), framed...)
			d[i] ^= 1 << bit
			check("flipped", d)
		}
	}
}

// Pins: MustReadFramed reports a missing file as damage, ReadFramed leaves that call to its caller.
func TestReadFramedMissing(t *testing.T) {
	p := filepath.Join(t.TempDir(), "gone")
	if _, err := ReadFramed(OS, p); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("ReadFramed: %v", err)
	}
	if _, err := MustReadFramed(OS, p); err == nil {
		t.Fatal("MustReadFramed of a missing file succeeded")
	} else if c, ok := IsCorrupt(err); !ok || c.Path != p {
		t.Fatalf("MustReadFramed: %v", err)
	}
	if err := WriteFramed(OS, p, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if b, err := MustReadFramed(OS, p); err != nil || string(b) != "x" {
		t.Fatalf("round trip: %q, %v", b, err)
	}
}
