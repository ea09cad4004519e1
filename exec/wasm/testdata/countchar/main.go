// Command countchar is a clinksql wasm function: count_char(s VARCHAR, c VARCHAR) RETURNS BIGINT, the number of
// times the first character of c occurs in s (Nexmark q14's UDF, as Flink's CountChar). Build it as a reactor:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o count_char.wasm .
//
// The ABI (docs/functions.md): the module exports its memory, clink_alloc (the host copies string arguments
// into what it returns), clink_free, and the function; a VARCHAR argument is a (ptr, len) pair of i32.
package main

import (
	"unicode/utf8"
	"unsafe"
)

// pinned keeps the buffers clink_alloc handed out alive until clink_free: Go's collector does not move memory,
// so a pointer stays valid while a reference to its slice exists.
var pinned = map[unsafe.Pointer][]byte{}

//go:wasmexport clink_alloc
func clinkAlloc(size int32) unsafe.Pointer {
	b := make([]byte, max(size, 1))
	p := unsafe.Pointer(unsafe.SliceData(b))
	pinned[p] = b
	return p
}

//go:wasmexport clink_free
func clinkFree(p unsafe.Pointer) { delete(pinned, p) }

//go:wasmexport count_char
func countChar(s unsafe.Pointer, sLen int32, c unsafe.Pointer, cLen int32) int64 {
	str := unsafe.String((*byte)(s), sLen)
	char, _ := utf8.DecodeRuneInString(unsafe.String((*byte)(c), cLen))
	if cLen == 0 {
		return 0
	}
	n := int64(0)
	for _, r := range str {
		if r == char {
			n++
		}
	}
	return n
}

func main() {}
