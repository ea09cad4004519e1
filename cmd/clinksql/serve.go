package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

// newServeCommand is `clinksql serve`: the engine over the Postgres wire protocol.
func newServeCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "serve",
		Short: "Serve the engine over the Postgres wire protocol",
		RunE: func(cmd *cobra.Command, args []string) error {
			return fmt.Errorf("serve: not yet")
		},
	}
}
