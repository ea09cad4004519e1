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
			return fmt.Errorf("serve: not yet: the SQL front end and the pgwire server are not built yet (the runtime is usable from Go; see docs/checkpointing.md)")
		},
	})
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "clinksql:", err)
		os.Exit(1)
	}
}
