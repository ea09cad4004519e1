package streamlog

import (
	"github.com/clinksql/clinksql/connectors/connectortest"
	"github.com/clinksql/clinksql/exec/operators"
)

// The shared test helpers (package connectortest) under the names these tests were written with.
var (
	checkedAlloc   = connectortest.CheckedAlloc
	newTask        = connectortest.NewTask
	must           = connectortest.Must
	kvSchema       = connectortest.KVSchema
	kvBatch        = connectortest.KVBatch
	kvCSV          = connectortest.KVCSV
	listFiles      = connectortest.ListFiles
	committedFiles = connectortest.CommittedFiles
	readFile       = connectortest.ReadFile
	goRows         = operators.GoRows
)

type (
	taskOpts = connectortest.TaskOpts
	Row      = operators.Row
)
