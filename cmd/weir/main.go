// Command weir is weir's command-line interface.
//
//	weir plan [--json] [-p N] [-D key=value]... PROGRAM [ARGS...]
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
