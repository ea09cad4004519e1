package txnfile_test

import "github.com/clinksql/clinksql/connectors/connectortest"

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
)

type taskOpts = connectortest.TaskOpts
