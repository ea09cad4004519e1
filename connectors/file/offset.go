package file

import (
	"fmt"

	"github.com/clinksql/clinksql/exec"
)

var _ exec.OffsetDecoder = (*fileSource)(nil)

// DecodeOffset shows a checkpointed offset (clinksql state-cat): where the subtask was reading.
func (s *fileSource) DecodeOffset(b []byte) ([]exec.StateField, error) {
	o, err := decodeFSOffset(b)
	if err != nil {
		return nil, err
	}
	fs := []exec.StateField{exec.Field("subtask", o.sub), exec.Field("parallelism", o.par)}
	if o.follow {
		fs = append(fs, exec.Field("mode", "follow"), exec.Field("file", o.cur), exec.Field("files_done", len(o.done)))
	} else {
		fs = append(fs, exec.Field("mode", "bounded"), exec.Field("files", o.files),
			exec.Field("file_list_fingerprint", fmt.Sprintf("%016x", o.fp)), exec.Field("file_index", o.next))
	}
	return append(fs, exec.Field("byte_offset", o.pos), exec.Field("line", o.line)), nil
}
