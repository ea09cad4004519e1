package state

import (
	"bytes"
	"maps"
	"testing"
)

// Pins: a keyed-key layout other than key group (big endian), state id, key, or keyed keys colliding with operator keys.
func TestKeyLayout(t *testing.T) {
	if got, want := KeyedKey(0x0102, 7, []byte("u")), []byte{1, 2, 7, 'u'}; !bytes.Equal(got, want) {
		t.Fatalf("KeyedKey = %x, want %x", got, want)
	}
	if got, want := OperatorKey("off"), []byte{0xFF, 0xFF, 'o', 'f', 'f'}; !bytes.Equal(got, want) {
		t.Fatalf("OperatorKey = %x, want %x", got, want)
	}
	if !bytes.HasPrefix(KeyedKey(9, 1, []byte("x")), KeyGroupPrefix(9)) {
		t.Fatal("KeyGroupPrefix is not a prefix of the group's keys")
	}
	defer func() {
		if recover() == nil {
			t.Fatal("KeyedKey accepted key group 0xFFFF, which would collide with operator keys")
		}
	}()
	KeyedKey(0xFFFF, 0, nil)
}

// Pins: MapState fields of key "a" showing up under key "ab", and typed state bypassing the backend.
func TestValueAndMapState(t *testing.T) {
	b, _ := OpenMemory(Options{})
	vs := ValueState{Backend: b, ID: 1}
	vs.Put(3, []byte("k"), []byte("v"))
	if v, ok, _ := vs.Get(3, []byte("k")); !ok || string(v) != "v" {
		t.Fatalf("ValueState.Get = %q,%v", v, ok)
	}
	if _, ok, _ := vs.Get(4, []byte("k")); ok {
		t.Fatal("ValueState value visible in another key group")
	}
	vs.Delete(3, []byte("k"))
	if _, ok, _ := vs.Get(3, []byte("k")); ok {
		t.Fatal("ValueState.Delete left the value")
	}

	ms := MapState{Backend: b, ID: 2}
	ms.Put(1, []byte("a"), []byte("f2"), []byte("x2"))
	ms.Put(1, []byte("a"), []byte("f1"), []byte("x1"))
	ms.Put(1, []byte("ab"), []byte("f1"), []byte("y"))
	ms.Put(1, []byte("a"), []byte("gone"), []byte("z"))
	ms.Delete(1, []byte("a"), []byte("gone"))
	var order []string
	got := map[string]string{}
	if err := ms.Scan(1, []byte("a"), func(f, v []byte) error {
		order = append(order, string(f))
		got[string(f)] = string(v)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"f1": "x1", "f2": "x2"}; !maps.Equal(got, want) || order[0] != "f1" {
		t.Fatalf("MapState.Scan(a) = %v (order %v), want %v in field order", got, order, want)
	}
	if v, ok, _ := ms.Get(1, []byte("ab"), []byte("f1")); !ok || string(v) != "y" {
		t.Fatalf("MapState.Get(ab,f1) = %q,%v", v, ok)
	}
	if err := ms.Clear(1, []byte("a")); err != nil {
		t.Fatal(err)
	}
	n := 0
	ms.Scan(1, []byte("a"), func(_, _ []byte) error { n++; return nil })
	if _, ok, _ := ms.Get(1, []byte("ab"), []byte("f1")); n != 0 || !ok {
		t.Fatalf("Clear(a) left %d fields or removed key ab's (ok=%v)", n, ok)
	}
}
