package inspect

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clinksql/clinksql/catalog"
	"github.com/clinksql/clinksql/checkpoint"
	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/expr"
	"github.com/clinksql/clinksql/exec/textform"
	"github.com/clinksql/clinksql/state"
)

// The state package's timers (state/timers.go); the runtime's own keys are exec's StateKey names.
const (
	timerName   = "\x00timers/"
	chainHeader = "clinksql-chain 1\n" // state/chain.go: a keyed snapshot's listing
)

// operatorWatermarks are operator keys holding one watermark (8 bytes big endian).
var operatorWatermarks = []string{"window/wm"}

// participant is one subtask whose snapshot is read.
type participant struct {
	pid   string
	node  *exec.Node // nil without a plan
	op    string
	sub   int
	keyed bool
	known bool // keyed is known from the plan
}

func readCheckpoint(dir, job, cp string, id uint64, g *exec.Graph, operator string) (*CheckpointSnapshot, []OperatorReceipts, error) {
	if err := checkpoint.VerifyMarker(state.OS, cp, id); err != nil {
		return nil, nil, err
	}
	if exists(checkpoint.ConfirmedPath(cp, id)) {
		if err := checkpoint.VerifyConfirmed(state.OS, cp, id); err != nil {
			return nil, nil, err
		}
	}
	snap := &CheckpointSnapshot{ID: id, Marker: checkpoint.MarkerPath(cp, id)}
	parts, err := participants(cp, id, g)
	if err != nil {
		return nil, nil, err
	}
	scratch, err := os.MkdirTemp("", "clinksql-state-cat-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(scratch)
	rofs := readOnlyFS{scratch: scratch}
	var sinkDirs []string
	if g != nil {
		sinkDirs = sinkPaths(dir)
	}
	for _, p := range parts {
		if operator != "" && p.op != operator {
			continue
		}
		st, err := readSubtask(rofs, cp, id, p, g)
		if err != nil {
			return nil, nil, err
		}
		if p.node != nil && p.node.Kind == exec.SinkNode {
			if st.Transactions, err = transactions(sinkDirs, job, p.op, p.sub); err != nil {
				return nil, nil, err
			}
		}
		snap.Subtasks = append(snap.Subtasks, st)
	}
	receipts, err := readReceipts(cp, operator)
	if err != nil {
		return nil, nil, err
	}
	return snap, receipts, nil
}

// participants lists the subtasks of checkpoint id: from the plan, every subtask of every node, each of which
// must have a snapshot (a missing one is damage, as a restore finds it); without a plan, the snapshot files.
func participants(cp string, id uint64, g *exec.Graph) ([]participant, error) {
	var out []participant
	if g != nil {
		for _, n := range g.Nodes {
			for sub := 0; sub < n.Parallelism; sub++ {
				out = append(out, participant{pid: n.ID + "-" + strconv.Itoa(sub), node: n, op: n.ID, sub: sub,
					keyed: n.State == exec.KeyedState, known: true})
			}
		}
		return out, nil
	}
	chk := filepath.Dir(checkpoint.SubtaskDir(cp, id, "x"))
	entries, err := os.ReadDir(chk)
	if err != nil {
		return nil, state.Corrupt(chk, err, "the directory of a completed checkpoint is unreadable")
	}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") || strings.HasSuffix(name, ".inflight") || strings.HasSuffix(name, ".handle") {
			continue
		}
		i := strings.LastIndexByte(name, '-')
		sub, err := strconv.Atoi(name[i+1:])
		if i <= 0 || err != nil {
			continue
		}
		out = append(out, participant{pid: name, op: name[:i], sub: sub})
	}
	return out, nil
}

func readSubtask(rofs readOnlyFS, cp string, id uint64, p participant, g *exec.Graph) (Subtask, error) {
	path := checkpoint.SubtaskDir(cp, id, checkpoint.ParticipantID(p.pid))
	st := Subtask{Participant: p.pid, Operator: p.op, Subtask: p.sub, File: path}
	payload, err := state.MustReadFramed(rofs, path)
	if err != nil {
		return st, err
	}
	st.Bytes = int64(len(payload))
	keyed := p.keyed
	if !p.known {
		keyed = bytes.HasPrefix(payload, []byte(chainHeader))
	}
	st.Keyed = keyed
	var dec exec.StateDecoder
	if p.node != nil {
		st.Label = p.node.Label
		if keyed {
			r := state.RangeOf(p.sub, g.KeyGroups, p.node.Parallelism)
			st.KeyGroups = &[2]int{r.Start, r.End}
		}
		dec = p.node.StateDecoder()
	}
	opts := state.Options{FS: rofs, RestorePath: path}
	var b state.Backend
	if keyed {
		opts.Dir = filepath.Join(rofs.scratch, p.pid)
		opts.SharedDir = filepath.Join(rofs.scratch, p.pid+".shared")
		b, err = state.OpenPebble(opts)
	} else {
		b, err = state.OpenMemory(opts)
	}
	if err != nil {
		return st, err
	}
	defer b.Close()
	groups := map[int]*KeyGroupState{}
	err = b.Scan(nil, func(k, v []byte) error {
		if len(k) >= 2 && k[0] == 0xFF && k[1] == 0xFF {
			return st.operatorEntry(path, string(k[2:]), v)
		}
		if len(k) < 3 {
			return state.Corrupt(path, nil, "a state key of %d bytes", len(k))
		}
		kg := int(binary.BigEndian.Uint16(k))
		e := KeyedEntry{StateID: k[2]}
		var derr error
		if dec != nil {
			var d exec.StateEntry
			if d, derr = dec.DecodeState(k[2], k[3:], v); derr == nil {
				e.Kind, e.Key, e.Value = d.Kind, d.Key, d.Value
			}
		}
		if dec == nil || derr != nil {
			rk, rv := bytesOf(k[3:]), bytesOf(v)
			e.RawKey, e.RawValue = &rk, &rv
			if derr != nil {
				e.Error = derr.Error()
			}
		}
		kgs := groups[kg]
		if kgs == nil {
			kgs = &KeyGroupState{KeyGroup: kg}
			groups[kg] = kgs
		}
		kgs.Entries = append(kgs.Entries, e)
		st.KeyedEntries++
		return nil
	})
	if err != nil {
		return st, err
	}
	if st.Source != nil && p.node != nil {
		if d := p.node.OffsetDecoder(); d != nil {
			off, _ := hex.DecodeString(st.Source.Offset.Hex)
			if st.Source.Position, err = d.DecodeOffset(off); err != nil {
				st.Source.DecodeError = err.Error()
			}
		}
	}
	for _, kgs := range groups {
		st.KeyedState = append(st.KeyedState, *kgs)
	}
	slices.SortFunc(st.KeyedState, func(a, b KeyGroupState) int { return a.KeyGroup - b.KeyGroup })
	if st.Inflight, err = readInflight(rofs, path+".inflight"); err != nil {
		return st, err
	}
	if hp := checkpoint.HandlePath(cp, id, checkpoint.ParticipantID(p.pid)); exists(hp) {
		h, err := checkpoint.ReadStagedHandle(rofs, hp, id, checkpoint.ParticipantID(p.pid))
		if err != nil {
			return st, err
		}
		st.Handle = &Handle{File: hp, Horizon: watermark(h.Horizon), Handle: bytesOf(h.Handle)}
		if printable(h.Handle) {
			st.Handle.Text = string(h.Handle)
		}
	}
	return st, nil
}

// printable reports whether b is UTF-8 text without control characters.
func printable(b []byte) bool {
	if len(b) == 0 || !utf8.Valid(b) {
		return false
	}
	for _, r := range string(b) {
		if !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// operatorEntry decodes one key of the subtask's operator state.
func (st *Subtask) operatorEntry(path, name string, v []byte) error {
	source := func() *SourceState {
		if st.Source == nil {
			st.Source = &SourceState{Watermark: watermark(exec.MinWatermark)}
		}
		return st.Source
	}
	bad := func() error { return state.Corrupt(path, nil, "%s holds %d bytes", name, len(v)) }
	switch {
	case strings.HasPrefix(name, timerName):
		r := []byte(name[len(timerName):])
		if len(r) < 10 {
			return state.Corrupt(path, nil, "a timer key of %d bytes", len(r))
		}
		st.Timers = append(st.Timers, Timer{KeyGroup: int(binary.BigEndian.Uint16(r)),
			Timestamp: watermark(int64(binary.BigEndian.Uint64(r[2:]) ^ (1 << 63))), Key: bytesOf(r[10:])})
	case name == exec.StateKeySourceOffset:
		source().Offset = bytesOf(v)
	case name == exec.StateKeySourceWatermark:
		if len(v) != 8 {
			return bad()
		}
		source().Watermark = watermark(int64(binary.BigEndian.Uint64(v)))
	case name == exec.StateKeyCounts:
		c, err := exec.DecodeCounts(v)
		if err != nil {
			return bad()
		}
		st.Counts = &Counts{RowsIn: c.RowsIn, Rows: c.RowsOut, LateRows: c.Late, BadValues: c.BadValues}
	case name == exec.StateKeyInputWatermarks:
		combined, inputs, err := exec.DecodeInputWatermarks(v)
		if err != nil {
			return bad()
		}
		w := &InputWatermarks{Combined: watermark(combined), Inputs: []Watermark{}}
		for _, in := range inputs {
			w.Inputs = append(w.Inputs, watermark(in))
		}
		st.InputWatermarks = w
	case name == exec.StateKeyInflight:
		// Says that the checkpoint has an in-flight log here: readInflight reads it.
	case slices.Contains(operatorWatermarks, name) && len(v) == 8:
		w := watermark(int64(binary.BigEndian.Uint64(v)))
		st.OperatorState = append(st.OperatorState, OperatorEntry{Name: name, Watermark: &w})
	default:
		b := bytesOf(v)
		st.OperatorState = append(st.OperatorState, OperatorEntry{Name: strconv.QuoteToASCII(name), Value: &b})
	}
	return nil
}

func watermark(us int64) Watermark {
	switch us {
	case exec.MinWatermark:
		return Watermark{Micros: us, Text: "-infinity"}
	case exec.MaxWatermark:
		return Watermark{Micros: us, Text: "infinity"}
	}
	return Watermark{Micros: us, Text: string(expr.AppendTimestamp(nil, us, false))}
}

// readInflight decodes an in-flight log with the runtime's reader (nil when the subtask has none).
func readInflight(rofs readOnlyFS, path string) (*Inflight, error) {
	data, err := state.ReadFramed(rofs, path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	elems, err := exec.DecodeInflightLog(data, memory.DefaultAllocator)
	if err != nil {
		return nil, state.Corrupt(path, err, "%v", err)
	}
	defer func() {
		for _, e := range elems {
			if e.Batch != nil {
				e.Batch.Release()
			}
		}
	}()
	in := &Inflight{File: path, Bytes: int64(len(data)), Channels: []InflightChannel{}}
	channel := func(input int) *InflightChannel {
		for i := range in.Channels {
			if in.Channels[i].Input == input {
				return &in.Channels[i]
			}
		}
		in.Channels = append(in.Channels, InflightChannel{Input: input})
		return &in.Channels[len(in.Channels)-1]
	}
	for _, e := range elems {
		c := channel(e.Input)
		var r InflightRecord
		if e.Watermark != nil {
			w := watermark(*e.Watermark)
			r.Watermark = &w
		} else {
			for _, f := range e.Batch.Schema().Fields() {
				r.Columns = append(r.Columns, f.Name)
			}
			if r.Rows, err = textform.Rows(e.Batch); err != nil {
				return nil, err
			}
			for _, k := range e.Kinds {
				r.Kinds = append(r.Kinds, k.String())
			}
			c.Rows += len(r.Rows)
		}
		c.Elements = append(c.Elements, r)
	}
	slices.SortFunc(in.Channels, func(a, b InflightChannel) int { return a.Input - b.Input })
	return in, nil
}

// sinkPaths are the paths of the catalog's objects that a two-phase file sink writes (their 'path' option).
func sinkPaths(dir string) []string {
	cat, err := openCatalog(dir)
	if err != nil || cat == nil {
		return nil
	}
	var out []string
	for _, o := range cat.Objects(catalog.Sink, catalog.Stream) {
		p := o.Options["path"]
		if p == "" {
			continue
		}
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// transactions lists the files of sink subtask sub of op (txnfile's layout): <path>/_staging/<job>/ holds the
// staged ones, <path> the committed ones, both named <job>-<op>-<sub>-<checkpoint>.<ext>.
func transactions(paths []string, job, op string, sub int) ([]Transaction, error) {
	prefix := job + "-" + op + "-" + strconv.Itoa(sub) + "-"
	var out []Transaction
	for _, p := range paths {
		for _, d := range []struct{ dir, state string }{{filepath.Join(p, "_staging", job), "staged"}, {p, "committed"}} {
			entries, err := os.ReadDir(d.dir)
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrInvalid) {
					continue
				}
				if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
					continue // a path that is a file (a single-file source's definition), or unreadable
				}
				return nil, err
			}
			for _, e := range entries {
				rest, ok := strings.CutPrefix(e.Name(), prefix)
				if !ok || e.IsDir() {
					continue
				}
				idText, _, _ := strings.Cut(rest, ".")
				id, err := strconv.ParseUint(idText, 10, 64)
				if err != nil {
					continue
				}
				fi, err := e.Info()
				if err != nil {
					continue
				}
				out = append(out, Transaction{Checkpoint: id, State: d.state, File: filepath.Join(d.dir, e.Name()), Bytes: fi.Size()})
			}
		}
	}
	slices.SortFunc(out, func(a, b Transaction) int {
		if a.Checkpoint != b.Checkpoint {
			if a.Checkpoint < b.Checkpoint {
				return -1
			}
			return 1
		}
		return strings.Compare(a.State, b.State)
	})
	return out, nil
}

// readReceipts lists the commit receipts and unresolved markers under receipts/<operator>/.
func readReceipts(cp, operator string) ([]OperatorReceipts, error) {
	ops, err := os.ReadDir(filepath.Join(cp, "receipts"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []OperatorReceipts
	for _, op := range ops {
		if !op.IsDir() || (operator != "" && op.Name() != operator) {
			continue
		}
		entries, err := os.ReadDir(filepath.Join(cp, "receipts", op.Name()))
		if err != nil {
			return nil, err
		}
		var subs []int
		for _, e := range entries {
			s, _, ok := strings.Cut(strings.TrimPrefix(e.Name(), "sub"), "-")
			if n, err := strconv.Atoi(s); ok && err == nil && strings.HasPrefix(e.Name(), "sub") && !slices.Contains(subs, n) {
				subs = append(subs, n)
			}
		}
		slices.Sort(subs)
		for _, sub := range subs {
			r, err := checkpoint.ListReceipts(state.OS, cp, op.Name(), sub)
			if err != nil {
				return nil, err
			}
			out = append(out, OperatorReceipts{Operator: op.Name(), Subtask: sub, Receipts: r.Receipts, Unresolved: r.Unresolved})
		}
	}
	return out, nil
}
