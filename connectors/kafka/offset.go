package kafka

import (
	"fmt"

	"github.com/clinksql/clinksql/exec"
)

var _ exec.OffsetDecoder = (*source)(nil)

// DecodeOffset shows a checkpointed offset (clinksql state-cat): per partition the next offset to read, the end of
// a bounded source (-1: none) and the partition's watermark.
func (s *source) DecodeOffset(b []byte) ([]exec.StateField, error) {
	o, err := decodeSourceOffset(b)
	if err != nil {
		return nil, err
	}
	fs := []exec.StateField{exec.Field("subtask", o.sub), exec.Field("parallelism", o.par)}
	for _, p := range o.parts {
		fs = append(fs, exec.Field(fmt.Sprintf("%s/%d", p.topic, p.part), fmt.Sprintf("next %d end %d watermark_us %d", p.next, p.end, p.wm)))
	}
	return fs, nil
}
