package main

import (
	"github.com/spf13/cobra"
)

// addREPLFlags makes the root command (no sub-command) open the REPL.
func addREPLFlags(root *cobra.Command) {}
