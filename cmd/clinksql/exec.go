package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/clinksql/clinksql/engine"
	"github.com/clinksql/clinksql/sqlerr"
)

// script is one -f file or -c string, in the order given on the command line.
type script struct {
	name, text string
	file       bool
}

// scriptFlag appends -f and -c values to one list, keeping their relative order as psql does.
type scriptFlag struct {
	list *[]script
	file bool
}

func (f scriptFlag) String() string { return "" }
func (f scriptFlag) Type() string   { return "string" }
func (f scriptFlag) Set(v string) error {
	*f.list = append(*f.list, script{name: v, text: v, file: f.file})
	return nil
}

func newExecCommand() *cobra.Command {
	var scripts []script
	var dataDir, format string
	var wait bool
	var progress time.Duration
	var allow []string
	var cpuProfile, memProfile string
	cmd := &cobra.Command{
		Use:   "exec [-f file.sql] [-c 'sql'] [--data-dir DIR] [--format table|csv] [--wait [--progress-interval D]]",
		Short: "Run SQL statements against an embedded engine and print their results",
		Long: `Runs the statements of each -f file and -c string, in order, against an engine on --data-dir, and prints
every result set. A statement error prints the message with its SQLSTATE and position and exits non-zero. At exit
the jobs stop gracefully (a final checkpoint) and resume when the data directory is opened again; --wait first
waits until the jobs over bounded inputs have finished, printing each one's progress to stderr every
--progress-interval (rows read, rows/s, and the total where the sources know it). Notices (a started job's id,
the delivery guarantee, FLUSH's progress while it waits) print to stderr as psql prints them.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			if format != "table" && format != "csv" {
				return fmt.Errorf("--format is table or csv, not %q", format)
			}
			if len(scripts) == 0 {
				return errors.New("nothing to run: give -f file.sql or -c 'statements'")
			}
			for i := range scripts {
				if scripts[i].file {
					data, err := os.ReadFile(scripts[i].name)
					if err != nil {
						return err
					}
					scripts[i].text = string(data)
				} else {
					scripts[i].name = "-c"
				}
			}
			if progress <= 0 {
				return fmt.Errorf("--progress-interval must be positive, not %s", progress)
			}
			cfg := engine.Config{DataDir: dataDir, AllowPaths: allow, ProgressInterval: progress}
			if cpuProfile != "" {
				f, err := os.Create(cpuProfile)
				if err != nil {
					return err
				}
				defer f.Close()
				if err := pprof.StartCPUProfile(f); err != nil {
					return err
				}
				defer pprof.StopCPUProfile()
			}
			if memProfile != "" {
				defer func() {
					if werr := writeAllocProfile(memProfile); werr != nil && err == nil {
						err = werr
					}
				}()
			}
			return runExec(cmd.OutOrStdout(), cmd.ErrOrStderr(), cfg, scripts, format, wait)
		},
	}
	cmd.Flags().VarP(scriptFlag{&scripts, true}, "file", "f", "run the statements of a file (repeatable)")
	cmd.Flags().VarP(scriptFlag{&scripts, false}, "command", "c", "run the statements of a string (repeatable)")
	cmd.Flags().StringVar(&dataDir, "data-dir", defaultDataDir, "the data directory")
	cmd.Flags().StringVar(&format, "format", "table", "result format: table or csv")
	cmd.Flags().BoolVar(&wait, "wait", false, "before exiting, wait for the jobs over bounded inputs to finish")
	cmd.Flags().DurationVar(&progress, "progress-interval", engine.DefaultProgressInterval, "how often --wait and FLUSH report a job's progress while they wait")
	cmd.Flags().StringVar(&cpuProfile, "cpu-profile", "", "write a CPU profile of the whole run to this file (pprof format)")
	cmd.Flags().StringVar(&memProfile, "mem-profile", "", "at exit, write a profile of the run's allocations to this file (pprof allocs format)")
	cmd.Flags().StringSliceVar(&allow, "allow-path", nil, "a directory outside the data directory that connector paths may name (repeatable)")
	return cmd
}

// writeAllocProfile writes every allocation sampled since the process started, by allocating stack.
func writeAllocProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func runExec(stdout, stderr io.Writer, cfg engine.Config, scripts []script, format string, wait bool) (err error) {
	e, err := engine.Open(cfg)
	if err != nil {
		return err
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if cerr := e.Close(ctx); cerr != nil && err == nil {
			err = cerr
		}
	}()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	sess := e.NewSession()
	// As psql prints a server's notices while a statement runs: FLUSH's progress.
	sess.SetNoticeHandler(func(msg string) { engine.WriteNotice(stderr, msg) })
	out := engine.NewPrinter(stdout, format) // rows print as the engine produces them
	for _, sc := range scripts {
		// Statement by statement, as the REPL splits them: the engine checks each one's size
		// (max_statement_size) before parsing it, and a huge script never becomes one syntax tree.
		for _, st := range scriptStatements(sc.text) {
			err := sess.Run(ctx, sc.text[st.start:st.end], out, func(res *engine.Result) {
				engine.WriteNotices(stderr, res) // as psql: a started job's id, for one
				out.Result(res)
			})
			if err != nil {
				fmt.Fprint(stderr, engine.FormatError(sc.name, sc.text, sqlerr.As(err).Shift(st.start)))
				return exitError{}
			}
		}
	}
	if wait {
		// The bounded jobs' progress (rows read, the rate, the total where known) while they run.
		if err := e.WaitBounded(ctx, func(line string) { fmt.Fprintln(stderr, line) }); err != nil {
			return err
		}
	}
	return nil
}

// scriptStatements splits a script into its statements (the last may lack its semicolon).
func scriptStatements(text string) []span {
	sc := scanStatements(text, 0)
	stmts := sc.stmts
	if sc.tail {
		rest := text[sc.cut:]
		start := sc.cut + len(rest) - len(strings.TrimLeft(rest, " \t\r\n"))
		if end := len(strings.TrimRight(text, " \t\r\n")); start < end {
			stmts = append(stmts, span{start, end})
		}
	}
	return stmts
}
