package agg

import (
	"fmt"
	"math"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/rowcodec"
	"github.com/clinksql/clinksql/exec/textform"
)

// Decoding keyed state for readers outside the job (exec.StateDecoder, clinksql state-cat): an entry is read back
// by the operator's own restore code into a fresh, unopened operator, and its result is rendered the way the
// operator would emit it, so what a reader sees is what a restore would rebuild.

var (
	_ exec.StateDecoder = (*groupAgg)(nil)
	_ exec.StateDecoder = (*windowAgg)(nil)
)

// DecodeState decodes one group: its key columns, its row count and each aggregate's current result.
func (a *groupAgg) DecodeState(id byte, key, value []byte) (exec.StateEntry, error) {
	if id != groupStateID {
		return exec.StateEntry{}, fmt.Errorf("group aggregate: unknown state id %d", id)
	}
	g := a.allocGroup()
	defer a.freeKey(g)
	a.gFlag[g], a.gCount[g] = 0, 0
	for _, ag := range a.aggs {
		ag.reset(g)
	}
	if err := a.restoreGroup(g, value); err != nil {
		return exec.StateEntry{}, err
	}
	res, err := a.result(nil, g)
	if err != nil {
		return exec.StateEntry{}, err
	}
	nk := len(a.p.cfg.Keys)
	b := array.NewRecordBuilder(memory.DefaultAllocator, a.p.out)
	defer b.Release()
	if err := a.p.keyEnc.DecodeKey(b.Fields()[:nk], key); err != nil {
		return exec.StateEntry{}, err
	}
	if err := a.p.resEnc.DecodeKey(b.Fields()[nk:], res); err != nil {
		return exec.StateEntry{}, err
	}
	row, err := oneRow(b)
	if err != nil {
		return exec.StateEntry{}, err
	}
	count := strconv.FormatInt(a.gCount[g], 10)
	e := exec.StateEntry{Kind: "group", Key: fields(a.p.out, row, 0, nk)}
	e.Value = append([]exec.StateField{{Name: "rows", Value: &count}}, fields(a.p.out, row, nk, len(row))...)
	return e, nil
}

// DecodeState decodes one (window, key) group: its key columns and window bounds, and each aggregate's result
// as the window would emit it if it fired now.
func (w *windowAgg) DecodeState(id byte, key, value []byte) (exec.StateEntry, error) {
	if id != windowStateID {
		return exec.StateEntry{}, fmt.Errorf("window aggregate: unknown state id %d", id)
	}
	// The parts of Open that restoreGroup needs, without a backend.
	w.wm, w.nextFire = exec.MinWatermark, math.MaxInt64
	w.panes = map[exec.WindowID]*pane{}
	w.sessInt, w.sessStr, w.sessNull = map[int64][]int32{}, map[string][]int32{}, nil
	w.forward = map[int32]int32{}
	w.groupKeys = groupKeys{mode: w.p.keyEnc.Mode}
	w.gStart, w.gEnd, w.gStoredStart, w.gStoredEnd, w.gFlag = nil, nil, nil, nil, nil
	w.aggs = w.aggs[:0]
	for _, k := range w.p.aggs {
		w.aggs = append(w.aggs, newWindowAccumulator(k, &w.ov))
	}
	if err := w.restoreGroup(0, key, value); err != nil {
		return exec.StateEntry{}, err
	}
	w.out = array.NewRecordBuilder(memory.DefaultAllocator, w.p.out)
	defer func() { w.out.Release(); w.out = nil }()
	if err := w.emitGroup(0, nil); err != nil {
		return exec.StateEntry{}, err
	}
	row, err := oneRow(w.out)
	if err != nil {
		return exec.StateEntry{}, err
	}
	nk := len(w.p.cfg.Keys) + 2 // the keys, window_start, window_end
	return exec.StateEntry{Kind: "window group", Key: fields(w.p.out, row, 0, nk), Value: fields(w.p.out, row, nk, len(row))}, nil
}

// oneRow renders the one row b holds in Postgres text form.
func oneRow(b *array.RecordBuilder) ([]*string, error) {
	rec := b.NewRecordBatch()
	defer rec.Release()
	rows, err := textform.Rows(rec)
	if err != nil {
		return nil, err
	}
	if len(rows) != 1 {
		return nil, fmt.Errorf("decoded %d rows from one state entry", len(rows))
	}
	return rows[0], nil
}

func fields(sc *arrow.Schema, row []*string, from, to int) []exec.StateField {
	out := make([]exec.StateField, 0, to-from)
	for i := from; i < to; i++ {
		out = append(out, exec.StateField{Name: sc.Field(i).Name, Value: row[i]})
	}
	return out
}

var _ exec.StateDecoder = (*topN)(nil)

// DecodeState decodes one distinct row of a Top-N partition: the partition columns, then the row's columns and
// its copies. (Its rank is not stored: it is the row's place among its partition's entries.)
//
// A partition in the compact layout (an append-only Top-N, topn_op.go) is one entry "top-n partition": the
// partition columns, then per distinct row in rank order its columns and copies, named "<i>.<column>" and
// "<i>.copies" for the i-th row (1-based).
func (o *topN) DecodeState(id byte, key, value []byte) (exec.StateEntry, error) {
	if id == topNPartID {
		return o.decodePartState(key, value)
	}
	if id != topNStateID {
		return exec.StateEntry{}, fmt.Errorf("top-n: unknown state id %d", id)
	}
	pl, rest, err := rowcodec.GetUvarint(key)
	if err != nil || uint64(len(rest)) < pl {
		return exec.StateEntry{}, rowcodec.ErrState
	}
	part, entry := rest[:pl], rest[pl:]
	copies, v, err := rowcodec.GetUvarint(value)
	if err != nil {
		return exec.StateEntry{}, err
	}
	orderLen, v, err := rowcodec.GetUvarint(v)
	if err != nil || len(v) != 0 || orderLen > uint64(len(entry)) {
		return exec.StateEntry{}, rowcodec.ErrState
	}
	in := o.p.in
	names := func(cols []int) []string {
		out := make([]string, len(cols))
		for i, c := range cols {
			out[i] = in.Field(c).Name
		}
		return out
	}
	e := exec.StateEntry{Kind: "top-n row"}
	if e.Key, err = o.p.partEnc.AppendFields(nil, names(o.p.cfg.Partition), part); err != nil {
		return exec.StateEntry{}, err
	}
	if e.Value, err = o.p.rowEnc.AppendFields(nil, names(o.p.allCols), entry[orderLen:]); err != nil {
		return exec.StateEntry{}, err
	}
	e.Value = append(e.Value, exec.Field("copies", copies))
	return e, nil
}

func (o *topN) decodePartState(key, value []byte) (exec.StateEntry, error) {
	in := o.p.in
	var partNames []string
	for _, c := range o.p.cfg.Partition {
		partNames = append(partNames, in.Field(c).Name)
	}
	e := exec.StateEntry{Kind: "top-n partition"}
	var err error
	if e.Key, err = o.p.partEnc.AppendFields(nil, partNames, key); err != nil {
		return exec.StateEntry{}, err
	}
	i := 0
	err = decodePart(value, func(se sortEntry) {
		if err != nil {
			return
		}
		i++
		names := make([]string, len(o.p.allCols))
		for k, c := range o.p.allCols {
			names[k] = strconv.Itoa(i) + "." + in.Field(c).Name
		}
		if e.Value, err = o.p.rowEnc.AppendFields(e.Value, names, []byte(se.key[se.off:])); err != nil {
			return
		}
		e.Value = append(e.Value, exec.Field(strconv.Itoa(i)+".copies", uint64(se.n)))
	})
	if err != nil {
		return exec.StateEntry{}, err
	}
	return e, nil
}
