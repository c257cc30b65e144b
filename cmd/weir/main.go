// Command weir is weir's command-line interface.
//
//	weir plan [--json] [-p N] [-D key=value]... PROGRAM [ARGS...]
//	weir run [-d] [-p N] [-s PATH] [--jobmanager HOST:PORT] PROGRAM [ARGS...]
//	weir list | cancel JOBID | savepoint JOBID DIR | stop --savepoint-path DIR JOBID
//	weir jobmanager | taskmanager | cluster start|stop|certs
//	weir nexmark --query NAME [--jobmanager HOST:PORT] | nexmark generate
//	weir verify [flags] PROGRAM [ARGS...]
//	weir version
//
// Run "weir help" for the list of commands and "weir help COMMAND" for
// their flags.
package main

import (
	"context"
	"os"
	"os/signal"
	"slices"
	"syscall"

	"github.com/weirproject/weir/stream"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	root := newRootCommand()
	if os.Getenv(stream.WorkerStatusEnv) != "" {
		root.SetArgs(workerArgs(os.Args[1:]))
	}
	code := execute(ctx, root)
	stop()
	os.Exit(code)
}

// workerArgs puts the subcommand first when weir itself runs as a job's
// worker (weir nexmark --jobmanager, weir sql --jobmanager): a TaskManager passes its options
// (-p, -D, --from-savepoint) before the job's arguments, which for weir
// begin with the subcommand.
func workerArgs(args []string) []string {
	i := slices.IndexFunc(args, func(a string) bool { return a == "nexmark" || a == "sql" })
	if i <= 0 {
		return args
	}
	out := append([]string{args[i]}, args[:i]...)
	return append(out, args[i+1:]...)
}
