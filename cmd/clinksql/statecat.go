package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/clinksql/clinksql/state/inspect"
)

func newStateCatCommand() *cobra.Command {
	var opts inspect.Options
	var format string
	cmd := &cobra.Command{
		Use:   "state-cat --data-dir DIR [--job J] [--checkpoint N] [--operator O] [--format table|json]",
		Short: "Show the jobs, checkpoints and decoded state snapshots of a data directory (read-only)",
		Long: `Without --job, lists the jobs of the data directory with their statements and retained checkpoints. With
--job, lists the job's checkpoints and decodes one completed checkpoint (the newest, or --checkpoint N): per
operator subtask the source offsets and watermarks, keyed state by key group, timers, in-flight records of an
unaligned checkpoint, a sink's staged handle and transactions, and commit receipts; --operator keeps one node id.
It only reads: it is safe on the directory of a running server. Damaged files are an error naming the file.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runStateCat(cmd.OutOrStdout(), opts, format)
		},
	}
	cmd.Flags().StringVar(&opts.DataDir, "data-dir", defaultDataDir, "the data directory")
	cmd.Flags().StringVar(&opts.Job, "job", "", "the job to show (default: list the jobs)")
	cmd.Flags().Uint64Var(&opts.Checkpoint, "checkpoint", 0, "the completed checkpoint to decode (default: the newest)")
	cmd.Flags().StringVar(&opts.Operator, "operator", "", "only this operator (node id)")
	cmd.Flags().StringVar(&format, "format", "table", "table or json")
	return cmd
}

// runStateCat is the command without its flags.
func runStateCat(w io.Writer, opts inspect.Options, format string) error {
	if format != "table" && format != "json" {
		return fmt.Errorf("--format is table or json, not %q", format)
	}
	if opts.Job == "" && (opts.Checkpoint != 0 || opts.Operator != "") {
		return fmt.Errorf("--checkpoint and --operator need --job")
	}
	r, err := inspect.Inspect(opts)
	if err != nil {
		return err
	}
	if format == "json" {
		return inspect.WriteJSON(w, r)
	}
	return inspect.WriteTable(w, r)
}
