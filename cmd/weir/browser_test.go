//go:build unix

package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// browserPage is a headless chromium (chromiumPath) driven through the
// DevTools protocol for the dashboard tests: steps that fail the test
// with a screenshot (name prefix+"-failed") and what the page showed.
type browserPage struct {
	t         *testing.T
	ctx       context.Context
	artifacts string
	prefix    string
}

// openBrowser starts chromium with its profile under dir; its whole run
// is bounded by timeout, so that a page that never shows what the test
// waits for fails the test in time. The returned context ends with it.
// Flags, if any, are added to chromium's command line.
func openBrowser(t *testing.T, browser, dir, artifacts, prefix string, timeout time.Duration, flags ...chromedp.ExecAllocatorOption) (*browserPage, context.Context) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, append([]chromedp.ExecAllocatorOption{
		chromedp.ExecPath(browser), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(filepath.Join(dir, "chromium")), chromedp.WindowSize(1400, 900)}, flags...)...)
	t.Cleanup(cancelAlloc)
	bctx, cancelBrowser := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	t.Cleanup(cancelBrowser)
	return &browserPage{t: t, ctx: bctx, artifacts: artifacts, prefix: prefix}, ctx
}

func (b *browserPage) failed() string {
	if b.prefix == "" {
		return "failed"
	}
	return b.prefix + "-failed"
}

// do runs steps, or fails the test.
func (b *browserPage) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, steps...); err != nil {
		shot(b.t, b.ctx, b.artifacts, b.failed())
		b.t.Fatalf("%s: %v", what, err)
	}
}

// waitJS waits until the expression is truthy.
func (b *browserPage) waitJS(what, expr string, d time.Duration) {
	b.t.Helper()
	if _, err := chromedp.Run(b.ctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(d), chromedp.WithPollingInterval(100*time.Millisecond))); err != nil {
		shot(b.t, b.ctx, b.artifacts, b.failed())
		page, perr := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.getElementById('view').textContent`))
		b.t.Fatalf("no %s within %v (%v); the page shows (%v):\n%s", what, d, err, perr, page)
	}
}

// eval evaluates a statement for its effect.
func (b *browserPage) eval(what, expr string) {
	b.t.Helper()
	if _, err := chromedp.Run(b.ctx, chromedp.Evaluate[chromedp.Void](expr)); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

// value evaluates expr into a T, or fails the test.
func browserValue[T any](b *browserPage, expr string) T {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.t.Fatalf("%s: %v", expr, err)
	}
	return v
}

// buildSlowSink builds testdata/slowsink, the backpressure job: a source
// as fast as it can and a sink that takes --rate records a second, in
// different slot sharing groups.
func buildSlowSink(t *testing.T) string {
	t.Helper()
	program := filepath.Join(t.TempDir(), "slowsink")
	if out, err := exec.Command("go", "build", "-o", program, "./testdata/slowsink").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return program
}
