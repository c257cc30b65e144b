// Command weir is weir's command-line interface.
//
//	weir plan [--json] [-p N] [-D key=value]... PROGRAM [ARGS...]
//	weir run [-d] [-p N] [-s PATH] [--jobmanager HOST:PORT] PROGRAM [ARGS...]
//	weir list | cancel JOBID | savepoint JOBID DIR | stop --savepoint-path DIR JOBID
//	weir jobmanager | taskmanager | cluster start|stop
//	weir version
//
// Run "weir help" for the list of commands and "weir help COMMAND" for
// their flags.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := execute(ctx, newRootCommand())
	stop()
	os.Exit(code)
}
