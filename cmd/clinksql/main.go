// Command clinksql is the engine's one binary.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/clinksql/clinksql/internal/gctune"
)

func main() {
	gctune.Apply()
	root := &cobra.Command{
		Use:           "clinksql",
		Short:         "clinksql: a SQL-on-streams engine",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newServeCommand())
	root.AddCommand(newExecCommand())
	root.AddCommand(newStateCatCommand())
	addREPLFlags(root) // clinksql with no sub-command opens the REPL
	if err := root.Execute(); err != nil {
		if _, quiet := err.(exitError); !quiet {
			fmt.Fprintln(os.Stderr, "clinksql:", err)
		}
		os.Exit(1)
	}
}

// defaultDataDir is the data directory of serve, exec and the REPL when --data-dir is not given: one default, so
// that each of them finds the jobs and streams the others made.
const defaultDataDir = "./clink-data"

// exitError is a failure already reported to the user (a statement error): exit non-zero without more output.
type exitError struct{}

func (exitError) Error() string { return "exit 1" }
