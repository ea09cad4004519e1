// Package wasm runs user-defined functions compiled to WebAssembly (CREATE FUNCTION ... LANGUAGE wasm), sandboxed
// in wazero (pure Go, no cgo). A Function is an expr.UserFunction: the planner binds a call to it with
// expr.UserCall, and every operator subtask that evaluates the call opens its own instance of the module at its
// first batch and keeps it for the batches after.
//
// # The ABI (docs/functions.md has a complete example)
//
// The module exports its linear memory as "memory", an allocator clink_alloc(size i32) -> ptr i32, optionally
// clink_free(ptr i32), and the function. A reactor's _initialize (what Go's -buildmode=c-shared and WASI SDK
// reactors export) runs once per instance; a command module (_start without _initialize) is refused, since its
// _start runs main and exits. The only imports a module may have are WASI preview 1's (wasi_snapshot_preview1):
// no files, no environment, no arguments, standard output and error discarded (the tail of standard error is
// kept for the message of a failed call), clocks and randomness deterministic (wazero's defaults), so a function's
// result depends only on its arguments.
//
// Arguments, in order, per SQL type:
//
//	BOOLEAN               i32 (0 or 1)
//	SMALLINT, INT, DATE   i32 (a DATE is days since 1970-01-01)
//	BIGINT                i64
//	TIMESTAMP, INTERVAL   i64 (microseconds: since the epoch, or of the interval)
//	REAL / DOUBLE         f32 / f64
//	VARCHAR, TEXT, BYTEA  two i32: ptr, len of a copy of the bytes (UTF-8 for text) in the module's memory
//
// Strings are copied into a buffer the host allocates with clink_alloc (and grows, freeing the old one with
// clink_free when the module has it); the function must not keep pointers into it after it returns. The result
// is the function's one return value: numbers as above (a SMALLINT result must fit in 16 bits, a BOOLEAN is any
// non-zero i32), strings as an i64 packing ptr<<32 | len of bytes in the module's memory, which the host copies
// out before the next call (the module may reuse that buffer). Functions are strict: a NULL argument gives NULL
// and the function is not called.
//
// Validation at CREATE (Compile): the module compiles, imports nothing but WASI, exports memory, clink_alloc
// with its signature, clink_free with its if present, and the function with exactly the wasm signature the
// declared SQL types need; it instantiates (its _initialize runs) within the time limit. Each failure names what
// is missing or wrong (42P13).
//
// # Limits and errors
//
// Memory: a module's linear memory is capped at Limits.MemoryPages (64 KiB pages; memory.limit, default 64 MiB),
// one wazero Runtime per limit, all sharing one compilation cache, so a module is compiled once per process and
// limit. Time: Limits.Timeout (timeout, default 10 s) bounds each call; the runtime closes a module whose context
// is done (WithCloseOnContextDone), so a function that loops forever fails its batch with 57014 instead of hanging
// the job. A trap (unreachable, an out-of-bounds access, a division by zero, proc_exit, running out of memory),
// a string result outside the module's memory or a VARCHAR result that is not UTF-8 is a bad value of that row
// (22000, 22021), which the expression error policy turns into NULL and counts, or a failure (errors.mode =
// 'fail', an ad-hoc SELECT); the instance is then thrown away and the next row gets a fresh one.
package wasm
