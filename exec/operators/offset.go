package operators

import (
	"encoding/binary"
	"fmt"

	"github.com/clinksql/clinksql/exec"
)

var _ exec.OffsetDecoder = (*watermarked)(nil)

// DecodeOffset shows the running maximum event time the wrapper keeps, then the wrapped source's offset.
func (w *watermarked) DecodeOffset(offset []byte) ([]exec.StateField, error) {
	if len(offset) < 8 {
		return nil, fmt.Errorf("watermarked source: offset of %d bytes", len(offset))
	}
	fs := []exec.StateField{exec.Field("watermark_max_us", int64(binary.BigEndian.Uint64(offset)))}
	inner := offset[8:]
	if d, ok := w.src.(exec.OffsetDecoder); ok {
		more, err := d.DecodeOffset(inner)
		if err != nil {
			return nil, err
		}
		return append(fs, more...), nil
	}
	return append(fs, exec.Field("source_offset", fmt.Sprintf("%x (%d bytes)", inner, len(inner)))), nil
}
