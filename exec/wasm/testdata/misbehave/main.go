// Command misbehave is a wasm module of functions for clinksql's tests: well-behaved ones over each kind of value,
// and ones that loop, panic, run out of memory or return what is not a value.
package main

import (
	"math"
	"unsafe"
)

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

// out holds the last string result until the next call.
var out []byte

func result(b []byte) int64 {
	out = b
	if len(b) == 0 {
		return 0
	}
	return int64(uintptr(unsafe.Pointer(unsafe.SliceData(b))))<<32 | int64(len(b))
}

// reverse(s VARCHAR) RETURNS VARCHAR: s with its characters in reverse order.
//
//go:wasmexport reverse
func reverse(s unsafe.Pointer, n int32) int64 {
	r := []rune(unsafe.String((*byte)(s), n))
	for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
		r[i], r[j] = r[j], r[i]
	}
	return result([]byte(string(r)))
}

// hypot(a DOUBLE, b DOUBLE) RETURNS DOUBLE
//
//go:wasmexport hypot
func hypot(a, b float64) float64 { return math.Hypot(a, b) }

// is_even(x BIGINT) RETURNS BOOLEAN
//
//go:wasmexport is_even
func isEven(x int64) int32 {
	if x%2 == 0 {
		return 1
	}
	return 0
}

// half(x REAL) RETURNS REAL
//
//go:wasmexport half
func half(x float32) float32 { return x / 2 }

// next_day(d DATE) RETURNS DATE; plus_hour(ts TIMESTAMP) RETURNS TIMESTAMP; small(x INT) RETURNS SMALLINT
//
//go:wasmexport next_day
func nextDay(d int32) int32 { return d + 1 }

//go:wasmexport plus_hour
func plusHour(ts int64) int64 { return ts + 3600_000_000 }

//go:wasmexport small
func small(x int32) int32 { return x }

// byte_sum(b BYTEA) RETURNS BIGINT
//
//go:wasmexport byte_sum
func byteSum(p unsafe.Pointer, n int32) int64 {
	s := int64(0)
	for _, c := range unsafe.Slice((*byte)(p), n) {
		s += int64(c)
	}
	return s
}

// spin(x BIGINT) RETURNS BIGINT loops forever when x < 0.
//
//go:wasmexport spin
func spin(x int64) int64 {
	for x < 0 {
		x--
		if x == 0 {
			x = -1
		}
	}
	return x
}

// boom(x BIGINT) RETURNS BIGINT panics when x < 0 (the Go runtime then exits with code 2).
//
//go:wasmexport boom
func boom(x int64) int64 {
	if x < 0 {
		panic("boom: negative")
	}
	return x
}

var hogged [][]byte

// hog(mb BIGINT) RETURNS BIGINT keeps mb more MiB of memory.
//
//go:wasmexport hog
func hog(mb int64) int64 {
	b := make([]byte, mb<<20)
	for i := range b {
		b[i] = 1
	}
	hogged = append(hogged, b)
	return int64(len(hogged))
}

// bad_ptr(x BIGINT) RETURNS VARCHAR returns a string outside its memory; bad_utf8 one that is not UTF-8.
//
//go:wasmexport bad_ptr
func badPtr(x int64) int64 { return int64(0x7ffffff0)<<32 | 100 }

//go:wasmexport bad_utf8
func badUTF8(x int64) int64 { return result([]byte{0xff, 0xfe, byte(x)}) }

func main() {}
