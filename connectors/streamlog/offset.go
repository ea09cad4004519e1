package streamlog

import "github.com/clinksql/clinksql/exec"

var _ exec.OffsetDecoder = (*logSource)(nil)

// DecodeOffset shows a checkpointed offset (clinksql state-cat): the next segment and batch to read.
func (s *logSource) DecodeOffset(offset []byte) ([]exec.StateField, error) {
	seq, batch, err := decodeOffset(offset)
	if err != nil {
		return nil, err
	}
	return []exec.StateField{exec.Field("segment", seq), exec.Field("batch", batch)}, nil
}
