package rowcodec

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/textform"
)

// AppendFields decodes canonical bytes b (DecodeKey) into one field per column, named by names, each value in
// Postgres text form, and appends them to dst (readers of keyed state outside the job: exec.StateDecoder).
func (e *Encoding) AppendFields(dst []exec.StateField, names []string, b []byte) ([]exec.StateField, error) {
	if len(names) != len(e.Types) {
		return nil, fmt.Errorf("%d columns encoded as %d", len(names), len(e.Types))
	}
	fields := make([]arrow.Field, len(names))
	for i, n := range names {
		fields[i] = arrow.Field{Name: n, Type: e.Types[i], Nullable: true}
	}
	rb := array.NewRecordBuilder(memory.DefaultAllocator, arrow.NewSchema(fields, nil))
	defer rb.Release()
	if err := e.DecodeKey(rb.Fields(), b); err != nil {
		return nil, err
	}
	rec := rb.NewRecordBatch()
	defer rec.Release()
	rows, err := textform.Rows(rec)
	if err != nil {
		return nil, err
	}
	if len(rows) != 1 {
		return nil, fmt.Errorf("decoded %d rows from one state entry", len(rows))
	}
	for i, v := range rows[0] {
		dst = append(dst, exec.StateField{Name: names[i], Value: v})
	}
	return dst, nil
}
