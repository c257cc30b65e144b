// Command rundocs runs the shell blocks of README.md and docs/*.md in
// order, as a newcomer would type them, and fails on the first block that
// does not do what its text says. docs/run-docs.sh runs it on a fresh
// clone with weir on the PATH; see the usage below for the markers that
// say how a block runs.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
)

const usage = `usage: rundocs [flags] [FILE...]        run the shell blocks (default README.md docs/*.md)
       rundocs -check [FILE...]           check the markers only, run nothing
       rundocs wait [-timeout D] ADDR [TEXT]  wait until host:port accepts, or a URL answers 2xx (containing TEXT)

docs/run-docs.sh is the way to run it: a fresh clone, weir built onto the
PATH, a private XDG_RUNTIME_DIR and temporary directory.

Every sh, bash, shell and console block runs, in its own bash (set -eo
pipefail) in -root, unless a marker says otherwise. Markers are HTML
comments, each a line of its own, right before the block:

  <!-- rundocs: skip CATEGORY: REASON -->   not run (external, illustrative, long, ...)
  <!-- rundocs: cluster [ARGS] -->          weir cluster start ARGS before, weir cluster stop after
  <!-- rundocs: expect "TEXT" ... -->       the output must contain each TEXT
  <!-- rundocs: absent "TEXT" ... -->       the output must not contain TEXT
  <!-- rundocs: with NAME=VALUE ... -->     replace a placeholder the reader replaces (FILE, DIR)
  <!-- rundocs: before "COMMAND" -->        a setup command the text implies (a file to read)
  <!-- rundocs: after "COMMAND" -->         a check of what the text says the block made (a file)
  <!-- rundocs: background N ... -->        run command N in the background (a server in its own terminal)
  <!-- rundocs: wait N ADDR ["TEXT"] -->    after command N wait until ADDR is up (host:port or URL)
  <!-- rundocs: omit "TEXT" REASON -->      leave out the commands containing TEXT
  <!-- rundocs: timeout 5m -->              the block's time limit (default -timeout)

"/tmp/" in a block means -tmp. Whatever a block leaves running (its
background jobs, a cluster, any process with its RUNDOCS_SESSION) is
stopped after it.
`

func main() {
	if len(os.Args) > 1 && os.Args[1] == "wait" {
		os.Exit(waitMain(os.Args[2:]))
	}
	fs := flag.NewFlagSet("rundocs", flag.ExitOnError)
	fs.Usage = func() { fmt.Fprint(os.Stderr, usage); fs.PrintDefaults() }
	root := fs.String("root", ".", "the checkout whose docs run, and the blocks' working directory")
	tmp := fs.String("tmp", "", "the directory that stands for /tmp/ in the blocks (default: a new one under $TMPDIR)")
	timeout := fs.Duration("timeout", 5*time.Minute, "default time limit of a block")
	check := fs.Bool("check", false, "check the markers only")
	list := fs.Bool("list", false, "print every block and how it would run, run nothing")
	only := fs.String("only", "", "run only the blocks of this FILE, or this FILE:LINE")
	verbose := fs.Bool("v", false, "print every block's script and output")
	fs.Parse(os.Args[1:])

	files := fs.Args()
	if len(files) == 0 {
		var err error
		if files, err = defaultFiles(*root); err != nil {
			fatal(err)
		}
	}
	var blocks []*block
	for _, f := range files {
		bs, err := parseFile(f)
		if err != nil {
			fatal(err)
		}
		for _, b := range bs {
			b.File, _ = filepath.Rel(*root, f)
		}
		blocks = append(blocks, bs...)
	}
	if *check {
		fmt.Printf("rundocs: %d shell blocks, markers valid\n", len(blocks))
		return
	}
	if *list {
		for _, b := range blocks {
			how := "run"
			switch {
			case b.Skip != "":
				how = "skip " + b.Skip
			case b.Cluster:
				how = "run on a cluster"
			}
			fmt.Printf("%s:%d\t%d commands\t%s\n", b.File, b.Line, len(b.commands()), how)
		}
		return
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	r, err := newRunner(*root, *tmp, *timeout)
	if err != nil {
		fatal(err)
	}
	r.verbose = *verbose
	code := r.runAll(ctx, blocks, *only)
	r.cleanup()
	os.Exit(code)
}

func defaultFiles(root string) ([]string, error) {
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		return nil, err
	}
	sort.Strings(docs)
	return append([]string{filepath.Join(root, "README.md")}, docs...), nil
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "rundocs:", err)
	os.Exit(2)
}

// summary is the closing report: blocks run, skipped by category, time.
func summary(ran int, skipped map[string]int, elapsed time.Duration) string {
	var cats []string
	total := 0
	for c, n := range skipped {
		cats = append(cats, fmt.Sprintf("%s %d", c, n))
		total += n
	}
	sort.Strings(cats)
	s := fmt.Sprintf("%d blocks ran, %d skipped", ran, total)
	if len(cats) > 0 {
		s += " (" + strings.Join(cats, ", ") + ")"
	}
	return s + fmt.Sprintf(", in %s", elapsed.Round(time.Second))
}
