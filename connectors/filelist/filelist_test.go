package filelist

import "testing"

// A corrupt offset (a string length past the bytes left) is refused, not a panic.
func TestOffsetReaderRefusesOverlongString(t *testing.T) {
	for _, b := range [][]byte{{2, 'a'}, {5, 'a', 'b'}, {1}, {0x80}} {
		r := NewOffsetReader(b)
		if s := r.Str(); r.ok || s != "" {
			t.Fatalf("%v: read %q, ok=%v", b, s, r.ok)
		}
	}
	r := OffsetReader{b: []byte{2, 'o', 'k'}, ok: true}
	if s := r.Str(); s != "ok" || !r.Done() {
		t.Fatalf("read %q, done=%v", s, r.Done())
	}
}
