// Command clinksql is the engine's one binary.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

func main() {
	root := &cobra.Command{
		Use:           "clinksql",
		Short:         "clinksql: a SQL-on-streams engine",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(&cobra.Command{
		Use:   "serve",
		Short: "Serve the engine over the Postgres wire protocol",
		RunE: func(cmd *cobra.Command, args []string) error {
			return fmt.Errorf("serve: not yet: the pgwire server is the next issue; use `clinksql exec` meanwhile")
		},
	})
	root.AddCommand(newExecCommand())
	if err := root.Execute(); err != nil {
		if _, quiet := err.(exitError); !quiet {
			fmt.Fprintln(os.Stderr, "clinksql:", err)
		}
		os.Exit(1)
	}
}

// exitError is a failure already reported to the user (a statement error): exit non-zero without more output.
type exitError struct{}

func (exitError) Error() string { return "exit 1" }
