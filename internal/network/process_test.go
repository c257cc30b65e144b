package network

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// The cross-process test re-executes the test binary as a producer
// TaskManager; TestMain dispatches on this variable.
const childEnv = "WEIR_NETWORK_TEST_CHILD"

const (
	childBuffers = 2000
	childToken   = "cross-process-secret"
)

// runChild is the producer process: it prints its data server address,
// serves one channel and exits. Mode "crash" exits halfway without
// closing anything, like a killed TaskManager.
func runChild(mode string) int {
	m, err := Listen(Config{Token: childToken, Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	s, err := m.Produce(testID(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("ADDR %s\n", m.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	n := childBuffers
	if mode == "crash" {
		n /= 2
	}
	buf := make([]byte, 0, DefaultBufferSize)
	for i := 0; i < n; i++ {
		if err := s.Send(ctx, payload(buf, i, DefaultBufferSize)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	if mode == "crash" {
		os.Exit(3)
	}
	if err := s.SendEvent(ctx, Event{Kind: EventEndOfPartition}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	s.Close()
	// Stay up until the consumer has read everything and released the
	// channel, as a TaskManager keeps a finished partition.
	select {
	case <-s.Released():
	case <-ctx.Done():
		fmt.Fprintln(os.Stderr, "consumer did not release the channel")
		return 1
	}
	m.Close()
	return 0
}

func startChild(t *testing.T, mode string) (addr string, wait func() error) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+mode)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child printed no address: %v", err)
	}
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "ADDR ")
	if !ok {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child said %q", line)
	}
	return addr, func() error { go io.Copy(io.Discard, out); return cmd.Wait() }
}

func TestAcrossProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process")
	}
	t.Run("complete", func(t *testing.T) {
		addr, wait := startChild(t, "ok")
		cons := newManager(t, Config{Token: childToken})
		g := newGate(t, cons, DefaultGateConfig(1))
		ctx := ctxTimeout(t, 20*time.Second)
		if err := g.Connect(ctx, 0, addr, testID(0)); err != nil {
			t.Fatal(err)
		}
		for i := 0; ; i++ {
			b, err := g.Next(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if b.Event.Kind == EventEndOfPartition {
				if i != childBuffers {
					t.Fatalf("end after %d buffers", i)
				}
				break
			}
			if err := checkPayload(b.Data, i, DefaultBufferSize); err != nil {
				t.Fatal(err)
			}
			g.Recycle(b)
		}
		if err := wait(); err != nil {
			t.Fatalf("producer process: %v", err)
		}
	})
	t.Run("producer process dies", func(t *testing.T) {
		addr, wait := startChild(t, "crash")
		cons := newManager(t, Config{Token: childToken})
		g := newGate(t, cons, DefaultGateConfig(1))
		ctx := ctxTimeout(t, 20*time.Second)
		if err := g.Connect(ctx, 0, addr, testID(0)); err != nil {
			t.Fatal(err)
		}
		var err error
		i := 0
		for ; ; i++ {
			var b *Buffer
			if b, err = g.Next(ctx); err != nil {
				break
			}
			g.Recycle(b)
		}
		if !errors.Is(err, ErrPeerClosed) || !strings.Contains(err.Error(), addr) {
			t.Fatalf("after %d buffers: %v, want ErrPeerClosed naming %s", i, err, addr)
		}
		if i != childBuffers/2 {
			t.Fatalf("got %d buffers before the crash, want %d", i, childBuffers/2)
		}
		var exit *exec.ExitError
		if err := wait(); !errors.As(err, &exit) || exit.ExitCode() != 3 {
			t.Fatalf("producer process: %v", err)
		}
	})
}

// testTLS returns a config that trusts its own self-signed certificate
// for 127.0.0.1, usable by both ends.
func testTLS(t *testing.T) *tls.Config {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "weir-test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}},
		RootCAs:      pool,
		ClientCAs:    pool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
		MinVersion:   tls.VersionTLS13,
	}
}

func TestTLS(t *testing.T) {
	cfg := testTLS(t)
	prod := newManager(t, Config{TLS: cfg, Token: "x"})
	cons := newManager(t, Config{TLS: cfg, Token: "x"})
	ctx := ctxTimeout(t, 10*time.Second)
	s, _ := prod.Produce(testID(0))
	g := newGate(t, cons, DefaultGateConfig(1))
	if err := g.Connect(ctx, 0, prod.Addr(), testID(0)); err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- produceStream(ctx, s, 300, DefaultBufferSize) }()
	if err := consumeStream(ctx, g, 300, DefaultBufferSize); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	// A plain-TCP dialer gets a clear failure, not a hang.
	plain := newManager(t, Config{Token: "x", HandshakeTimeout: time.Second})
	s2, _ := prod.Produce(testID(1))
	defer s2.Close()
	g2 := newGate(t, plain, DefaultGateConfig(1))
	start := time.Now()
	err := g2.Connect(ctx, 0, prod.Addr(), testID(1))
	if err == nil || !strings.Contains(err.Error(), prod.Addr()) || time.Since(start) > 3*time.Second {
		t.Fatalf("plain dial of a TLS server: %v after %v", err, time.Since(start))
	}
	t.Log(err)
}
