package exec

import "unsafe"

// unsafeBytes views a string's bytes without copying; the result must not be modified or retained.
func unsafeBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }
