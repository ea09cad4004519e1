//go:build tools

// Package clinksql pins the chosen libraries in go.mod before every package imports them.
package clinksql

import (
	_ "github.com/apache/arrow-go/v18/arrow/compute"
	_ "github.com/apache/arrow-go/v18/arrow/ipc"
	_ "github.com/chzyer/readline"
	_ "github.com/cockroachdb/pebble/v2"
	_ "github.com/cockroachdb/pebble/v2/vfs"
	_ "github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/pgproto3"
	_ "github.com/parquet-go/parquet-go"
	_ "github.com/pingcap/tidb/pkg/parser"
	_ "github.com/pingcap/tidb/pkg/parser/test_driver"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/spf13/cobra"
	_ "golang.org/x/sys/unix"
)
