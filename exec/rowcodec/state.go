package rowcodec

import "encoding/binary"

// Varint helpers of the state format: each reads one field from the front of src and returns the rest, or fails
// with ErrState on a truncated value.

// GetVarint reads a varint.
func GetVarint(src []byte) (int64, []byte, error) {
	v, n := binary.Varint(src)
	if n <= 0 {
		return 0, nil, ErrState
	}
	return v, src[n:], nil
}

// GetUvarint reads a uvarint.
func GetUvarint(src []byte) (uint64, []byte, error) {
	v, n := binary.Uvarint(src)
	if n <= 0 {
		return 0, nil, ErrState
	}
	return v, src[n:], nil
}

// GetString reads a length-prefixed string (AppendLenPrefixed).
func GetString(src []byte) (string, []byte, error) {
	n, rest, err := GetUvarint(src)
	if err != nil || uint64(len(rest)) < n {
		return "", nil, ErrState
	}
	return string(rest[:n]), rest[n:], nil
}

// GetU64 reads 8 bytes big endian.
func GetU64(src []byte) (uint64, []byte, error) {
	if len(src) < 8 {
		return 0, nil, ErrState
	}
	return binary.BigEndian.Uint64(src), src[8:], nil
}

// GetFlag reads a flag (AppendFlag).
func GetFlag(src []byte) (bool, []byte, error) {
	if len(src) < 1 {
		return false, nil, ErrState
	}
	return src[0] != 0, src[1:], nil
}

// AppendFlag appends b as one byte, 1 or 0.
func AppendFlag(dst []byte, b bool) []byte {
	if b {
		return append(dst, 1)
	}
	return append(dst, 0)
}
