package main

import (
	"net"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSocketWordCount runs the example as the `nc -lk 9999` demo does: a
// TCP server on a loopback port sends a text in two connections (the
// example reconnects after the first closes); the running counts it
// commits to files are those of the whole text, once each.
func TestSocketWordCount(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the example binary")
	}
	bin := buildExample(t)
	text := mixedText(2000, 7)
	// Cut at a line end: the example counts words per line.
	cut := strings.IndexByte(text[len(text)/2:], '\n') + len(text)/2 + 1
	parts := []string{text[:cut], text[cut:]}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	served := make(chan error, 1)
	go func() {
		for _, p := range parts {
			c, err := l.Accept()
			if err != nil {
				served <- err
				return
			}
			_, err = c.Write([]byte(p))
			c.Close()
			if err != nil {
				served <- err
				return
			}
		}
		served <- nil
	}()

	out := filepath.Join(t.TempDir(), "out")
	p := startProcess(t, bin, "--socket", l.Addr().String(), "--output", out, "-p", "2", "--checkpoint-interval", "50ms")
	want := runningCounts(text)
	waitFor(t, p, 60*time.Second, "all counts committed", func() bool { return committedSoFar(t, out) >= len(want) })
	time.Sleep(200 * time.Millisecond) // room for a duplicate to show
	p.stop(t, syscall.SIGINT)
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	if d := compareLines(committed(t, out), want); d != "" {
		t.Fatalf("committed counts differ from the reference:\n%s", d)
	}
}
