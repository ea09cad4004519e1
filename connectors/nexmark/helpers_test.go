package nexmark

import (
	"github.com/clinksql/clinksql/connectors/connectortest"
	"github.com/clinksql/clinksql/exec/operators"
)

var (
	checkedAlloc = connectortest.CheckedAlloc
	newTask      = connectortest.NewTask
	must         = connectortest.Must
	goRows       = operators.GoRows
)

type (
	taskOpts = connectortest.TaskOpts
	Row      = operators.Row
)
