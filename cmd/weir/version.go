package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is weir's release version, set when building a release:
//
//	go build -ldflags "-X main.version=v1.2.3" ./cmd/weir
var version = "dev"

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print weir's version",
		Long: `Print weir's version, the Go version it was built with and, when the binary
carries build information, the weir module's version and VCS revision.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return writeVersion(cmd.OutOrStdout())
		},
	}
}

// writeVersion prints:
//
//	weir version dev
//	go: go1.26.0 linux/amd64
//	module: github.com/weirproject/weir v1.2.3
//	revision: 0123abcd (modified)
//
// The module and revision lines appear only when the build recorded them.
func writeVersion(w io.Writer) error {
	fmt.Fprintf(w, "weir version %s\n", version)
	fmt.Fprintf(w, "go: %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return nil
	}
	if bi.Main.Path != "" {
		v := bi.Main.Version
		if v == "" {
			v = "(devel)"
		}
		fmt.Fprintf(w, "module: %s %s\n", bi.Main.Path, v)
	}
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = " (modified)"
			}
		}
	}
	if rev != "" {
		_, err := fmt.Fprintf(w, "revision: %s%s\n", rev, modified)
		return err
	}
	return nil
}

// noArgs is cobra.NoArgs reported as a usage error.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageErrorf(cmd, "%s takes no arguments, got %q", cmd.CommandPath(), args)
	}
	return nil
}
