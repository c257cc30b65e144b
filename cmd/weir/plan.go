package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

type planOptions struct {
	json        bool
	parallelism int
	defines     []string
	configFile  string
}

func newPlanCommand() *cobra.Command {
	var opts planOptions
	cmd := &cobra.Command{
		Use:   "plan [flags] PROGRAM [ARGS...]",
		Short: "Print the job graph of a job program",
		Long: `Print the job graph (the chained operators, their parallelism and the
edges between them) of a weir job program without running the job.

PROGRAM is a Go main package, given as a directory or an import path, or an
executable file. A package is built first with "go build" in the current
directory. The program then runs with --plan (or --plan=json), the flags
below that are set, and ARGS; weir prints its output and exits with its
status.

weir's flags go before PROGRAM; everything after PROGRAM is passed to the
program unchanged.`,
		Example: `  weir plan ./examples/wordcount
  weir plan --json -p 4 ./examples/wordcount --input words.txt
  weir plan -D pipeline.name=counts ./bin/wordcount`,
		DisableFlagsInUseLine: true,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErrorf(cmd, "plan needs a PROGRAM: a Go main package (directory or import path) or an executable file")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.validate(cmd); err != nil {
				return err
			}
			return runPlan(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), args[0], opts.jobArgs(args[1:]))
		},
	}
	f := cmd.Flags()
	f.SetInterspersed(false) // flags after PROGRAM belong to the program
	f.BoolVar(&opts.json, "json", false, "print the job graph as JSON (the program's --plan=json)")
	f.IntVarP(&opts.parallelism, "parallelism", "p", 0, "default parallelism of the job's operators (passed as --parallelism)")
	f.StringArrayVarP(&opts.defines, "define", "D", nil, "set a configuration option, `key=value` (repeatable; passed as -D)")
	f.StringVar(&opts.configFile, "config", "", "YAML configuration `file` of the job (passed as --config)")
	return cmd
}

func (o *planOptions) validate(cmd *cobra.Command) error {
	if cmd.Flags().Changed("parallelism") && o.parallelism < 1 {
		return usageErrorf(cmd, "--parallelism %d must be at least 1", o.parallelism)
	}
	for _, d := range o.defines {
		if key, _, ok := strings.Cut(d, "="); !ok || strings.TrimSpace(key) == "" {
			return usageErrorf(cmd, "-D %q: want key=value", d)
		}
	}
	return nil
}

// jobArgs returns the program's command line: the standard job flags weir
// forwards, then the user's arguments. The forwarded flags come first
// because a Go program's flag parsing stops at its first positional
// argument; a flag the user repeats in args overrides weir's.
func (o *planOptions) jobArgs(args []string) []string {
	var out []string
	if o.json {
		out = append(out, "--plan=json")
	} else {
		out = append(out, "--plan")
	}
	if o.parallelism > 0 {
		out = append(out, "--parallelism="+strconv.Itoa(o.parallelism))
	}
	for _, d := range o.defines {
		out = append(out, "-D", d)
	}
	if o.configFile != "" {
		out = append(out, "--config="+o.configFile)
	}
	return append(out, args...)
}

// runPlan builds prog if it is a package, runs it with args, and copies its
// output to stdout and stderr.
func runPlan(ctx context.Context, stdout, stderr io.Writer, prog string, args []string) error {
	exe, pkg, err := resolveProgram(prog)
	if err != nil {
		return err
	}
	if pkg != "" {
		dir, err := os.MkdirTemp("", "weir-plan-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		exe = filepath.Join(dir, "job")
		if runtime.GOOS == "windows" {
			exe += ".exe"
		}
		if err := goBuild(ctx, stderr, exe, pkg); err != nil {
			return fmt.Errorf("cannot build %s: %w", prog, err)
		}
	}

	c := exec.CommandContext(ctx, exe, args...)
	c.Args[0] = prog // the job names itself in its messages as the user did
	c.Stdout = stdout
	c.Stderr = stderr
	c.WaitDelay = time.Second
	if err := c.Run(); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%s: %w", prog, context.Cause(ctx))
		}
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.Exited() {
			return &exitStatusError{code: ee.ExitCode(), err: fmt.Errorf("%s exited with status %d", prog, ee.ExitCode())}
		}
		return fmt.Errorf("run %s: %w", prog, err)
	}
	return nil
}

// resolveProgram says how to get an executable for prog: exe is the
// executable file to run, or pkg is the "go build" argument of the package
// to build.
func resolveProgram(prog string) (exe, pkg string, err error) {
	fi, err := os.Stat(prog)
	switch {
	case err == nil && fi.IsDir():
		return "", localPath(prog), nil
	case err == nil && fi.Mode().IsRegular() && strings.HasSuffix(prog, ".go"):
		return "", prog, nil // a Go source file of package main
	case err == nil && fi.Mode().IsRegular():
		if runtime.GOOS != "windows" && fi.Mode().Perm()&0o111 == 0 {
			return "", "", fmt.Errorf("program %s is neither an executable file nor a Go package", prog)
		}
		abs, err := filepath.Abs(prog)
		if err != nil {
			return "", "", err
		}
		return abs, "", nil
	case err == nil:
		return "", "", fmt.Errorf("program %s is neither an executable file nor a Go package", prog)
	case errors.Is(err, fs.ErrNotExist) && !isFilePath(prog):
		return "", prog, nil // an import path
	case errors.Is(err, fs.ErrNotExist):
		return "", "", fmt.Errorf("program %s not found: want a Go main package (a directory or an import path) or an executable file", prog)
	default:
		return "", "", fmt.Errorf("program %s: %w", prog, err)
	}
}

// isFilePath reports whether p is meant as a file path rather than an
// import path: absolute, or relative starting with "." or "..".
func isFilePath(p string) bool {
	if filepath.IsAbs(p) || p == "." || p == ".." || strings.HasSuffix(p, ".go") {
		return true
	}
	for _, prefix := range []string{"./", "../", "." + string(filepath.Separator), ".." + string(filepath.Separator)} {
		if strings.HasPrefix(p, prefix) {
			return true
		}
	}
	return false
}

// localPath makes a relative directory explicit ("examples/wc" becomes
// "./examples/wc"), which "go build" would otherwise read as an import
// path.
func localPath(dir string) string {
	if isFilePath(dir) {
		return dir
	}
	return "." + string(filepath.Separator) + dir
}

// goBuild runs "go build -o exe pkg" in the current directory, with the
// go command's output on stderr so that stdout carries only the plan.
func goBuild(ctx context.Context, stderr io.Writer, exe, pkg string) error {
	goTool, err := exec.LookPath("go")
	if err != nil {
		return fmt.Errorf("the go command is needed to build a package: %w", err)
	}
	c := exec.CommandContext(ctx, goTool, "build", "-o", exe, pkg)
	c.Stdout = stderr
	c.Stderr = stderr
	c.WaitDelay = time.Second
	if err := c.Run(); err != nil {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		return fmt.Errorf("go build: %w", err)
	}
	return nil
}
