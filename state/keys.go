package state

import (
	"encoding/binary"
	"fmt"
)

// operatorPrefix starts every key of operator (non-keyed) state. Key group 0xFFFF is therefore not a valid key
// group, and OperatorKey names that start with 0x00 are reserved for this package (timers).
var operatorPrefix = [2]byte{0xFF, 0xFF}

// KeyedKey builds the backend key of keyed state: the key group (2 bytes, big endian) first, so a restore at another
// parallelism can take whole key-group ranges out of a store; then the state id, so an operator's states do not
// collide; then the user key.
func KeyedKey(keyGroup int, stateName byte, userKey []byte) []byte {
	if keyGroup < 0 || keyGroup >= 0xFFFF {
		panic(fmt.Sprintf("state: key group %d out of range", keyGroup))
	}
	k := make([]byte, 3+len(userKey))
	binary.BigEndian.PutUint16(k, uint16(keyGroup))
	k[2] = stateName
	copy(k[3:], userKey)
	return k
}

// KeyGroupPrefix is the prefix of all keyed state of one key group, for a Scan over it.
func KeyGroupPrefix(keyGroup int) []byte { return KeyedKey(keyGroup, 0, nil)[:2] }

// OperatorKey builds the backend key of state that belongs to the subtask as a whole (source offsets, watermarks,
// in-flight records): 0xFF 0xFF, then name.
func OperatorKey(name string) []byte {
	k := make([]byte, 2+len(name))
	copy(k, operatorPrefix[:])
	copy(k[2:], name)
	return k
}

// ValueState is keyed state with one value per key (an aggregate's accumulator, a join side's latest row).
type ValueState struct {
	Backend Backend
	ID      byte
}

func (s ValueState) Get(keyGroup int, key []byte) ([]byte, bool, error) {
	return s.Backend.Get(KeyedKey(keyGroup, s.ID, key))
}
func (s ValueState) Put(keyGroup int, key, value []byte) {
	s.Backend.Put(KeyedKey(keyGroup, s.ID, key), value)
}
func (s ValueState) Delete(keyGroup int, key []byte) { s.Backend.Delete(KeyedKey(keyGroup, s.ID, key)) }

// MapState is keyed state with a map of fields per key (the rows of a join key, the panes of a window). A field's
// backend key is KeyedKey(keyGroup, ID, uvarint(len(key)) + key + field): the length keeps key "a" from matching
// key "ab" in a prefix Scan.
//
// Scan costs O(entries changed since the last persisted checkpoint) to merge the in-memory layers plus the Pebble
// range, so it suits enumeration at timers and barriers better than a per-row loop over a very hot store.
type MapState struct {
	Backend Backend
	ID      byte
}

func (s MapState) prefix(keyGroup int, key []byte, extra int) []byte {
	p := make([]byte, 0, 3+binary.MaxVarintLen32+len(key)+extra)
	p = append(p, KeyedKey(keyGroup, s.ID, nil)...)
	p = binary.AppendUvarint(p, uint64(len(key)))
	return append(p, key...)
}

func (s MapState) fieldKey(keyGroup int, key, field []byte) []byte {
	return append(s.prefix(keyGroup, key, len(field)), field...)
}

func (s MapState) Get(keyGroup int, key, field []byte) ([]byte, bool, error) {
	return s.Backend.Get(s.fieldKey(keyGroup, key, field))
}
func (s MapState) Put(keyGroup int, key, field, value []byte) {
	s.Backend.Put(s.fieldKey(keyGroup, key, field), value)
}
func (s MapState) Delete(keyGroup int, key, field []byte) {
	s.Backend.Delete(s.fieldKey(keyGroup, key, field))
}

// Scan calls fn for each field of key in ascending field order; the slices are valid only during the call and fn
// must not change the state (collect, then change).
func (s MapState) Scan(keyGroup int, key []byte, fn func(field, value []byte) error) error {
	p := s.prefix(keyGroup, key, 0)
	return s.Backend.Scan(p, func(k, v []byte) error { return fn(k[len(p):], v) })
}

// Clear deletes every field of key.
func (s MapState) Clear(keyGroup int, key []byte) error {
	p := s.prefix(keyGroup, key, 0)
	var keys [][]byte
	if err := s.Backend.Scan(p, func(k, _ []byte) error {
		keys = append(keys, append([]byte(nil), k...))
		return nil
	}); err != nil {
		return err
	}
	for _, k := range keys {
		s.Backend.Delete(k)
	}
	return nil
}
