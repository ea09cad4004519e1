// Package rowcodec is the canonical byte codec of the keyed operators (the aggregates, Top-N and the joins): key
// bytes that name groups, partitions and join keys, row bytes that keep whole rows in state, and the varint
// helpers of their state values. exec.HashKeys routes the same keys; this package only encodes them.
//
// # What it owns
//
//   - Key bytes (NewKeyEncoding, KeyRows): per key column 0x00 for NULL or 0x01 and the value, in a form whose
//     bytes sort like the values (keys.go has the table). Key bytes compare as SQL does (-0 = 0, one NaN).
//   - Row bytes (RowEncoding): the same format over every column of a row, keeping a float -0, so a retraction
//     names exactly the row that was emitted and a value prints as it was written. A group keeps its first row's
//     spelling of its key where that differs (-0): KeyRows.ExactOf.
//   - Nested values (nested.go): a ROW, ARRAY or MAP of row types encodes from its parts, so rows that carry one
//     go into the joins', Top-N's and OVER windows' state and back, and it can be a GROUP BY or PARTITION BY key
//     (GroupKeyType); its bytes do not sort like it, so it is never a join key or an ORDER BY key.
//   - Decoding back into Arrow builders (Encoding.DecodeKey, DecodeValue), and the KeyInt fast path (one
//     integer-like key column found by int64: Int64Values, AppendIntKey, CompareIntKeys, AppendGroups).
//   - Decoding into named fields in text form for readers of state outside the job (Encoding.AppendFields: the
//     joins' and Top-N's exec.StateDecoder, clinksql state-cat).
//   - The state value helpers (state.go): varints, flags and length-prefixed strings, failing with ErrState on a
//     truncated value.
//
// # What it must never do
//
//   - Change a byte of either format: state written by one process or release is read by the next, and Top-N
//     and the aggregates compare results by these bytes.
//   - Depend on the process (a map order, a pointer, a seed): equal values have equal bytes everywhere.
//   - Allocate or box per value on a hot path: an appender is picked once per column and batch (NewValueAppender).
package rowcodec
