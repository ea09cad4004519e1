package exec

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// LookupTable is an external table a lookup join reads by key, one query per input batch (package exec/join's
// LookupJoin; a connector builds it, connectors.Lookup). Contract:
//
//   - Lookup returns, as one record of the table's columns (the stream's schema, in its order), every row whose key
//     columns equal one of the rows of keys (a record of the key columns, in the order the connector was given
//     them, no NULLs, no duplicates); rows in any order, none for a key the table does not hold. The caller owns
//     the record it returns. It reads the table as it is when it runs (processing time): nothing is kept for a
//     checkpoint, and a replay after a restore may read newer rows.
//   - An error is a failed query (the join may retry it); ctx bounds it.
//   - Lookup and Close are called from the operator's goroutine only. Close releases the connection; the table is
//     not used after it.
type LookupTable interface {
	Lookup(ctx context.Context, alloc memory.Allocator, keys arrow.RecordBatch) (arrow.RecordBatch, error)
	Close() error
}
