package join

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/rowcodec"
)

// Decoding keyed state for readers outside the job (exec.StateDecoder, clinksql state-cat), with the parsers the
// restores use: a kept row is shown as its side's columns, its key as the side's key columns.

var (
	_ exec.StateDecoder = (*intervalJoin)(nil)
	_ exec.StateDecoder = (*windowJoin)(nil)
	_ exec.StateDecoder = (*regularJoin)(nil)
	_ exec.StateDecoder = (*temporalJoin)(nil)
)

var sideNames = [2]string{"left row", "right row"}

// DecodeState decodes one kept row: its arrival number, key and row time, whether it matched, and its columns.
func (j *intervalJoin) DecodeState(id byte, uk, v []byte) (exec.StateEntry, error) {
	return j.p.decodeTimedRow(id, uk, v, sideNames, "matched", flagMatched)
}

// DecodeState decodes one kept row: a waiting left row or a version, its arrival number, key and time, whether it
// is a tombstone, and its columns.
func (j *temporalJoin) DecodeState(id byte, uk, v []byte) (exec.StateEntry, error) {
	return j.p.decodeTimedRow(id, uk, v, [2]string{"waiting left row", "version"}, "tombstone", flagTombstone)
}

// decodeTimedRow decodes one kept row of a join whose rows are kept by arrival number with their time (the
// interval and the temporal join): kinds names each side's rows, flag the row flag shown as the field flagName.
func (p *timeSpec) decodeTimedRow(id byte, uk, v []byte, kinds [2]string, flagName string, flag uint8) (exec.StateEntry, error) {
	side := int(id) - 1
	if side < 0 || side > 1 || len(uk) != 8 {
		return exec.StateEntry{}, rowcodec.ErrState
	}
	ts, flags, key, row, err := parseTimedValue(v)
	if err != nil {
		return exec.StateEntry{}, err
	}
	e := exec.StateEntry{Kind: kinds[side], Key: []exec.StateField{exec.Field("seq", binary.BigEndian.Uint64(uk))}}
	if e.Key, err = p.appendKey(e.Key, side, key, flags); err != nil {
		return exec.StateEntry{}, err
	}
	e.Value = []exec.StateField{exec.Field("row_time_us", ts),
		exec.Field(flagName, flags&flag != 0)}
	if e.Value, err = appendRow(e.Value, p.schemas[side], &p.rowEnc[side], row); err != nil {
		return exec.StateEntry{}, err
	}
	return e, nil
}

// DecodeState decodes one buffered row: its window, arrival number and key, and its columns.
func (j *windowJoin) DecodeState(id byte, uk, v []byte) (exec.StateEntry, error) {
	side := int(id) - 1
	if side < 0 || side > 1 || len(uk) != 24 {
		return exec.StateEntry{}, rowcodec.ErrState
	}
	flags, key, row, err := parseRowValue(v)
	if err != nil {
		return exec.StateEntry{}, err
	}
	e := exec.StateEntry{Kind: sideNames[side], Key: []exec.StateField{
		exec.Field("window_start_us", rowcodec.OrderedInt(uk[8:])), exec.Field("window_end_us", rowcodec.OrderedInt(uk)),
		exec.Field("seq", binary.BigEndian.Uint64(uk[16:]))}}
	if e.Key, err = j.p.timeSpec.appendKey(e.Key, side, key, flags); err != nil {
		return exec.StateEntry{}, err
	}
	if e.Value, err = appendRow(nil, j.p.schemas[side], &j.p.rowEnc[side], row); err != nil {
		return exec.StateEntry{}, err
	}
	return e, nil
}

// appendKey appends the key columns of side (named as that side names them), or a NULL key's flag.
func (p *timeSpec) appendKey(dst []exec.StateField, side int, key []byte, flags uint8) ([]exec.StateField, error) {
	if flags&flagNullKey != 0 {
		return append(dst, exec.Field("null_key", true)), nil
	}
	return appendKeyColumns(dst, p.schemas[side], p.keys[side], &p.keyEnc, key)
}

// DecodeState decodes one side of a key (its rows with their copies and, for an outer side, associations) or a
// TTL index entry.
func (j *regularJoin) DecodeState(id byte, uk, v []byte) (exec.StateEntry, error) {
	if id == ttlStateID {
		if len(uk) < 9 {
			return exec.StateEntry{}, rowcodec.ErrState
		}
		e := exec.StateEntry{Kind: "ttl index", Key: []exec.StateField{exec.Field("bucket_us", rowcodec.OrderedInt(uk)),
			exec.Field("side", uk[8])}}
		var err error
		if e.Key, err = appendKeyColumns(e.Key, j.p.sideSchema[min(uk[8], 1)], j.p.keys[min(uk[8], 1)], &j.p.keyEnc, uk[9:]); err != nil {
			return exec.StateEntry{}, err
		}
		return e, nil
	}
	chunk := id == chunkStateID || id == chunkStateID+1
	side := int(id) - 1
	if chunk {
		side = int(id - chunkStateID)
		if len(uk) < 4 {
			return exec.StateEntry{}, rowcodec.ErrState
		}
	}
	if side < 0 || side > 1 {
		return exec.StateEntry{}, fmt.Errorf("regular join: unknown state id %d", id)
	}
	// A static side's rows are in chunks: each chunk is an entry of the side's rows (its first field the chunk
	// number, then its rows), and the head only carries the last write.
	e := exec.StateEntry{Kind: strings.TrimSuffix(sideNames[side], " row") + " rows"}
	var c uint32
	if chunk {
		c, uk = binary.BigEndian.Uint32(uk), uk[4:]
	}
	var err error
	if e.Key, err = appendKeyColumns(e.Key, j.p.sideSchema[side], j.p.keys[side], &j.p.keyEnc, uk); err != nil {
		return exec.StateEntry{}, err
	}
	k := keyEntry{outer: j.p.outer[side]}
	if chunk {
		if k.sl, err = k.parseSlots(nil, v, 0, 0); err != nil {
			return exec.StateEntry{}, err
		}
		k.arena = v
		e.Value = []exec.StateField{exec.Field("chunk", c)}
	} else {
		if err := k.parseHeader(v); err != nil {
			return exec.StateEntry{}, err
		}
		if k.chunked {
			e.Value = []exec.StateField{exec.Field("last_write_us", k.written)}
			return e, nil
		}
		if err := k.ensureParsed(nil); err != nil {
			return exec.StateEntry{}, err
		}
		e.Value = []exec.StateField{exec.Field("last_write_us", k.written)}
	}
	for s := range k.sl {
		cols, err := appendRow(nil, j.p.sideSchema[side], &j.p.rowEnc[side], k.row(s))
		if err != nil {
			return exec.StateEntry{}, err
		}
		text := make([]string, len(cols))
		for i, c := range cols {
			text[i] = c.Name + "=" + orNull(c.Value)
		}
		desc := "(" + strings.Join(text, ", ") + ") x" + strconv.Itoa(int(k.sl[s].cnt))
		if k.outer {
			desc += " associations " + strconv.Itoa(int(k.sl[s].match))
		}
		e.Value = append(e.Value, exec.Field("row "+strconv.Itoa(s), desc))
	}
	return e, nil
}

func orNull(s *string) string {
	if s == nil {
		return "NULL"
	}
	return *s
}

// appendKeyColumns decodes canonical key bytes into the named key columns of sc.
func appendKeyColumns(dst []exec.StateField, sc *arrow.Schema, keys []int, enc *rowcodec.Encoding, key []byte) ([]exec.StateField, error) {
	names := make([]string, len(keys))
	for i, k := range keys {
		names[i] = sc.Field(k).Name
	}
	return enc.AppendFields(dst, names, key)
}

// appendRow decodes a row's canonical bytes into the columns of sc.
func appendRow(dst []exec.StateField, sc *arrow.Schema, enc *rowcodec.Encoding, row []byte) ([]exec.StateField, error) {
	names := make([]string, sc.NumFields())
	for i, f := range sc.Fields() {
		names[i] = f.Name
	}
	return enc.AppendFields(dst, names, row)
}
