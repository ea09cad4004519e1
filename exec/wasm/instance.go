package wasm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"

	"github.com/clinksql/clinksql/sqlerr"
)

// instance is one subtask's instance of a function: a module instance made at the first batch, kept across
// batches, and thrown away after a trap (the next row gets a new one).
type instance struct {
	f      *Function
	mod    api.Module
	fn     api.Function
	alloc  api.Function
	free   api.Function
	buf    uint32 // the argument buffer in the module's memory (clink_alloc'd), 0: none yet
	bufCap uint32
	stack  []uint64
	stderr head
}

// instantiate makes the module instance, its _initialize run within the timeout.
func (in *instance) instantiate() error {
	in.drop()
	ctx, cancel := context.WithTimeout(context.Background(), in.f.lim.Timeout)
	defer cancel()
	in.stderr.reset()
	cfg := wazero.NewModuleConfig().WithName("").WithStartFunctions("_initialize").WithStderr(&in.stderr)
	mod, err := in.f.rt.r.InstantiateModule(ctx, in.f.cm, cfg)
	if err != nil {
		if ctx.Err() != nil {
			return in.timeout("its _initialize")
		}
		return fmt.Errorf("%v%s", err, in.stderr.note())
	}
	in.mod = mod
	in.fn = mod.ExportedFunction(in.f.export)
	in.alloc = mod.ExportedFunction("clink_alloc")
	if in.f.free {
		in.free = mod.ExportedFunction("clink_free")
	}
	n := max(len(in.fn.Definition().ParamTypes()), 1)
	in.stack = make([]uint64, n)
	return nil
}

// drop closes the module instance, if any.
func (in *instance) drop() {
	if in.mod != nil {
		_ = in.mod.Close(context.Background())
	}
	in.mod, in.fn, in.alloc, in.free, in.buf, in.bufCap = nil, nil, nil, nil, 0, 0
}

func (in *instance) Close() error {
	in.drop()
	return nil
}

func (in *instance) timeout(what string) *sqlerr.Error {
	e := sqlerr.New(sqlerr.QueryCanceled, sqlerr.NoPos, "function %s: %s did not return within %s", in.f.name, what, in.f.lim.Timeout)
	e.Hint = "A function that runs longer needs a larger WITH (timeout = '...')."
	return e
}

// Eval calls the function for each row of the batch (expr.UserInstance).
func (in *instance) Eval(args []arrow.Array, n int, skip func(int) bool, out array.Builder, bad func(int, *sqlerr.Error) error) error {
	var d deadline
	defer d.stop()
	for i := range n {
		if skip(i) {
			out.AppendNull()
			continue
		}
		if in.mod == nil || in.mod.IsClosed() {
			if err := in.instantiate(); err != nil {
				var e *sqlerr.Error
				if errors.As(err, &e) {
					return e
				}
				return sqlerr.New(sqlerr.InternalError, sqlerr.NoPos, "function %s: the module does not instantiate: %v", in.f.name, err)
			}
		}
		if e := in.call(d.arm(in.f.lim.Timeout), args, i, out); e != nil {
			if e.Code == sqlerr.QueryCanceled {
				return e
			}
			if err := bad(i, e); err != nil {
				return err
			}
			out.AppendNull()
		}
	}
	return nil
}

// deadline is the context of a batch's calls: one timer, re-armed before each call, cancels it when a call runs
// past the timeout (and wazero then closes the module the call runs in).
type deadline struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	timer  *time.Timer
}

func (d *deadline) arm(timeout time.Duration) context.Context {
	if d.ctx != nil && d.ctx.Err() == nil && d.timer.Reset(timeout) {
		return d.ctx
	}
	// First call, or the timer fired after the last call returned: a fresh context.
	d.stop()
	ctx, cancel := context.WithCancelCause(context.Background())
	d.ctx, d.cancel = ctx, cancel
	d.timer = time.AfterFunc(timeout, func() { cancel(context.DeadlineExceeded) })
	return ctx
}

func (d *deadline) stop() {
	if d.timer != nil {
		d.timer.Stop()
		d.cancel(nil)
	}
}

// call evaluates row i and appends its value to out; a bad value (the instance is then dropped, unless only the
// result was bad) or a timeout is the error.
func (in *instance) call(ctx context.Context, args []arrow.Array, i int, out array.Builder) *sqlerr.Error {
	mem := in.mod.Memory()
	need := uint32(0)
	for _, a := range args {
		switch a := a.(type) {
		case *array.String:
			need += uint32(a.ValueLen(i))
		case *array.Binary:
			need += uint32(a.ValueLen(i))
		}
	}
	if need > 0 && need > in.bufCap {
		if e := in.grow(ctx, need); e != nil {
			return e
		}
		mem = in.mod.Memory()
	}
	k, off := 0, in.buf
	for _, a := range args {
		var b []byte
		var sv string
		str := false
		switch a := a.(type) {
		case *array.Boolean:
			v := uint64(0)
			if a.Value(i) {
				v = 1
			}
			in.stack[k] = v
		case *array.Int16:
			in.stack[k] = api.EncodeI32(int32(a.Value(i)))
		case *array.Int32:
			in.stack[k] = api.EncodeI32(a.Value(i))
		case *array.Date32:
			in.stack[k] = api.EncodeI32(int32(a.Value(i)))
		case *array.Int64:
			in.stack[k] = api.EncodeI64(a.Value(i))
		case *array.Timestamp:
			in.stack[k] = api.EncodeI64(int64(a.Value(i)))
		case *array.Duration:
			in.stack[k] = api.EncodeI64(int64(a.Value(i)))
		case *array.Float32:
			in.stack[k] = api.EncodeF32(a.Value(i))
		case *array.Float64:
			in.stack[k] = api.EncodeF64(a.Value(i))
		case *array.String:
			sv, str = a.Value(i), true
		case *array.Binary:
			b, str = a.Value(i), true
		default:
			return sqlerr.New(sqlerr.InternalError, sqlerr.NoPos, "function %s: argument of type %s", in.f.name, a.DataType())
		}
		if str {
			ok, size := true, len(b)
			if b != nil {
				ok = mem.Write(off, b)
			} else if sv != "" {
				ok, size = mem.WriteString(off, sv), len(sv)
			}
			if !ok {
				in.drop()
				return in.badf("clink_alloc gave a buffer outside the module's memory")
			}
			in.stack[k], in.stack[k+1] = uint64(off), uint64(size)
			off += uint32(size)
			k++
		}
		k++
	}
	in.stderr.reset()
	if err := in.fn.CallWithStack(ctx, in.stack); err != nil {
		return in.failed(ctx, err)
	}
	return in.result(in.stack[0], out)
}

// grow makes the argument buffer at least need bytes (clink_alloc; the old one clink_free'd).
func (in *instance) grow(ctx context.Context, need uint32) *sqlerr.Error {
	size := max(need, 2*in.bufCap, 256)
	if in.buf != 0 && in.free != nil {
		if err := in.free.CallWithStack(ctx, []uint64{uint64(in.buf)}); err != nil {
			return in.failed(ctx, err)
		}
	}
	in.buf, in.bufCap = 0, 0
	st := []uint64{uint64(size)}
	if err := in.alloc.CallWithStack(ctx, st); err != nil {
		return in.failed(ctx, err)
	}
	ptr := uint32(st[0])
	if ptr == 0 || uint64(ptr)+uint64(size) > uint64(in.mod.Memory().Size()) {
		in.drop()
		return in.badf("clink_alloc(%d) returned %d, not a buffer in the module's memory", size, ptr)
	}
	in.buf, in.bufCap = ptr, size
	return nil
}

// failed turns a failed call into its error: a timeout (57014) or a trap, a bad value (22000). Either way the
// instance is dropped.
func (in *instance) failed(ctx context.Context, err error) *sqlerr.Error {
	defer in.drop()
	if errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
		return in.timeout("a call")
	}
	var exit *sys.ExitError
	what := "trapped: " + strings.TrimPrefix(err.Error(), "wasm error: ")
	if errors.As(err, &exit) {
		what = fmt.Sprintf("exited with code %d", exit.ExitCode())
	}
	if i := strings.IndexByte(what, '\n'); i >= 0 {
		what = what[:i] // wazero appends the wasm stack trace
	}
	e := in.badf("%s", what)
	limit := uint64(in.f.lim.MemoryPages) * pageSize
	if note := in.stderr.text(); strings.Contains(note, "out of memory") ||
		in.mod != nil && uint64(in.mod.Memory().Size()) >= limit/4*3 {
		e.Hint = fmt.Sprintf("Its memory is near the limit of %d MiB (WITH (memory.limit = '...')).", limit>>20)
	}
	if note := in.stderr.text(); note != "" {
		e.Detail = "The module wrote to standard error: " + note
	}
	return e
}

func (in *instance) badf(format string, args ...any) *sqlerr.Error {
	return sqlerr.New(sqlerr.DataException, sqlerr.NoPos, "function %s %s", in.f.name, fmt.Sprintf(format, args...))
}

// result appends the call's return value r to out.
func (in *instance) result(r uint64, out array.Builder) *sqlerr.Error {
	switch b := out.(type) {
	case *array.BooleanBuilder:
		b.Append(uint32(r) != 0)
	case *array.Int16Builder:
		v := api.DecodeI32(r)
		if v < -1<<15 || v >= 1<<15 {
			return sqlerr.New(sqlerr.NumericOutOfRange, sqlerr.NoPos, "function %s returned %d, out of range for type smallint", in.f.name, v)
		}
		b.Append(int16(v))
	case *array.Int32Builder:
		b.Append(api.DecodeI32(r))
	case *array.Date32Builder:
		b.Append(arrow.Date32(api.DecodeI32(r)))
	case *array.Int64Builder:
		b.Append(int64(r))
	case *array.TimestampBuilder:
		b.Append(arrow.Timestamp(int64(r)))
	case *array.DurationBuilder:
		b.Append(arrow.Duration(int64(r)))
	case *array.Float32Builder:
		b.Append(api.DecodeF32(r))
	case *array.Float64Builder:
		b.Append(api.DecodeF64(r))
	case *array.StringBuilder, *array.BinaryBuilder:
		ptr, n := uint32(r>>32), uint32(r)
		v, ok := in.mod.Memory().Read(ptr, n)
		if !ok {
			return in.badf("returned a string at %d of %d bytes, outside its memory of %d bytes", ptr, n, in.mod.Memory().Size())
		}
		if sb, isStr := b.(*array.StringBuilder); isStr {
			if !utf8.Valid(v) {
				return sqlerr.New("22021", sqlerr.NoPos, "function %s returned text that is not valid UTF-8", in.f.name)
			}
			sb.BinaryBuilder.Append(v)
		} else {
			b.(*array.BinaryBuilder).Append(v)
		}
	default:
		return sqlerr.New(sqlerr.InternalError, sqlerr.NoPos, "function %s: result builder %T", in.f.name, out)
	}
	return nil
}

// head keeps the first bytes a module wrote to standard error during a call, for the message of a failed call
// (a Go module's panic message comes first, its goroutines' stacks after).
type head struct{ b []byte }

const headSize = 1024

func (t *head) Write(p []byte) (int, error) {
	if room := headSize - len(t.b); room > 0 {
		t.b = append(t.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (t *head) reset() { t.b = t.b[:0] }

// text is what was written, on one line.
func (t *head) text() string {
	s := strings.Join(strings.Fields(strings.ToValidUTF8(string(t.b), "?")), " ")
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return s
}

func (t *head) note() string {
	if s := t.text(); s != "" {
		return " (standard error: " + s + ")"
	}
	return ""
}
