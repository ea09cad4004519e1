package streamlog

import (
	"encoding/binary"
	"fmt"

	"github.com/clinksql/clinksql/exec"
)

var _ exec.OffsetDecoder = (*logSource)(nil)

// DecodeOffset shows a checkpointed offset (clinksql state-cat): the next segment and batch to read.
func (s *logSource) DecodeOffset(offset []byte) ([]exec.StateField, error) {
	if len(offset) != 16 {
		return nil, fmt.Errorf("stream source: offset of %d bytes, want 16", len(offset))
	}
	return []exec.StateField{exec.Field("segment", binary.BigEndian.Uint64(offset)),
		exec.Field("batch", binary.BigEndian.Uint64(offset[8:]))}, nil
}
