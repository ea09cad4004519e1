package datagen

import "github.com/clinksql/clinksql/exec"

var _ exec.OffsetDecoder = (*generator)(nil)

// DecodeOffset shows a checkpointed offset (clinksql state-cat): the subtask's next row and its largest event time.
func (g *generator) DecodeOffset(b []byte) ([]exec.StateField, error) {
	o, err := decodeGenOffset(b)
	if err != nil {
		return nil, err
	}
	return []exec.StateField{exec.Field("subtask", o.sub), exec.Field("parallelism", o.par),
		exec.Field("next_row", o.next), exec.Field("max_event_time_us", o.maxEvent), exec.Field("has_event", o.hasEvent)}, nil
}
