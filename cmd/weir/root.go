package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// Exit statuses of weir.
const (
	exitOK    = 0
	exitError = 1 // the command failed
	exitUsage = 2 // the command line is wrong
)

// newRootCommand builds the weir command and its subcommands.
func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "weir",
		Short: "weir is a stream processor; this command inspects and runs weir jobs",
		Long: `weir is a Flink-like stream processor in Go. A weir job is an ordinary Go
main package that builds a dataflow with the stream package; this command
inspects such programs.`,
		// Runnable so that a stray argument is reported as an unknown
		// command (exit 2) instead of printing the help.
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return nil
			}
			msg := fmt.Sprintf("unknown command %q", args[0])
			if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
				msg += fmt.Sprintf("; did you mean %s?", strings.Join(s, " or "))
			}
			return usageErrorf(cmd, "%s", msg)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return cmd.Help()
		},
		SilenceErrors:              true, // execute prints them
		SilenceUsage:               true,
		SuggestionsMinimumDistance: 2,
	}
	root.CompletionOptions.DisableDefaultCmd = true
	// weir alone only prints the help: do not list "weir [flags]" as a
	// usage line of its own.
	root.SetUsageTemplate(strings.Replace(root.UsageTemplate(), "{{if .Runnable}}", "{{if and .Runnable .HasParent}}", 1))
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return &usageError{cmd: cmd, err: err}
	})
	// The cluster's processes, job management, and the tools that run
	// jobs locally.
	root.AddCommand(
		newJobManagerCommand(),
		newTaskManagerCommand(),
		newListCommand(),
		newRunCommand(),
		newSQLCommand(),
		newCancelCommand(),
		newStopCommand(),
		newSavepointCommand(),
		newClusterCommand(),
		newNexmarkCommand(),
		newPlanCommand(),
		newVerifyCommand(),
		newVersionCommand(),
	)
	return root
}

// execute runs the command line set on root (os.Args by default, or
// root.SetArgs), prints an error as "weir: message" to root's error
// output, and returns the process's exit status.
func execute(ctx context.Context, root *cobra.Command) int {
	_, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	w := root.ErrOrStderr()
	fmt.Fprintf(w, "weir: %v\n", err)
	var uerr *usageError
	if errors.As(err, &uerr) {
		fmt.Fprintf(w, "Run '%s --help' for usage.\n", uerr.cmd.CommandPath())
		return exitUsage
	}
	var xerr *exitStatusError
	if errors.As(err, &xerr) {
		return xerr.code
	}
	return exitError
}

// usageError is a mistake in the command line: weir exits with status 2.
type usageError struct {
	cmd *cobra.Command
	err error
}

func usageErrorf(cmd *cobra.Command, format string, args ...any) error {
	return &usageError{cmd: cmd, err: fmt.Errorf(format, args...)}
}

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// exitStatusError makes weir exit with the status of a program it ran.
type exitStatusError struct {
	code int
	err  error
}

func (e *exitStatusError) Error() string { return e.err.Error() }
func (e *exitStatusError) Unwrap() error { return e.err }
