package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// certValidity is how long the certificates of weir cluster certs last.
const certValidity = 365 * 24 * time.Hour

// The files of weir cluster certs, in DIR.
const (
	certsCA      = "ca.pem"
	certsCAKey   = "ca-key.pem"
	certsCert    = "cert.pem"
	certsCertKey = "key.pem"
)

func newClusterCertsCommand() *cobra.Command {
	var dir string
	var hosts []string
	var force bool
	cmd := &cobra.Command{
		Use:   "certs --dir DIR [--hosts 127.0.0.1,localhost,...]",
		Short: "Make a self-signed CA and a certificate for trials of (mutual) TLS",
		Long: `Make a CA and one certificate it signs, for trying TLS and mutual TLS
(security.ssl.*) on a cluster: DIR gets ca.pem, ca-key.pem, cert.pem and
key.pem (ECDSA P-256, valid for a year; keys with mode 0600). The
certificate names every --hosts entry (IP addresses as IP SANs, others as
DNS names) and may serve both as server and as client certificate, so
every process of the cluster and the weir command line can use it. The
configuration lines to use are printed.

This is for trials: every process then shares one key. In production give
each host its own certificate, and keep the CA's key off the cluster.`,
		Example: `  weir cluster certs --dir ./tls
  weir cluster certs --dir /etc/weir/tls --hosts jm.example.com,tm1.example.com,10.0.0.5`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if dir == "" {
				return usageErrorf(cmd, "--dir is required")
			}
			var clean []string
			for _, h := range hosts {
				if h = strings.TrimSpace(h); h != "" {
					clean = append(clean, h)
				}
			}
			if len(clean) == 0 {
				return usageErrorf(cmd, "--hosts names no host")
			}
			abs, err := filepath.Abs(dir)
			if err != nil {
				return err
			}
			notAfter, err := writeCertSet(abs, clean, time.Now(), force)
			if err != nil {
				return fmt.Errorf("cluster certs: %w", err)
			}
			printCertConfig(cmd.OutOrStdout(), abs, clean, notAfter)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&dir, "dir", "", "`directory` to write the PEM files into (created with mode 0700 if missing)")
	f.StringSliceVar(&hosts, "hosts", []string{"127.0.0.1", "localhost"}, "comma-separated host names and IP addresses the certificate names: every address that is dialed")
	f.BoolVar(&force, "force", false, "overwrite existing files")
	return cmd
}

// writeCertSet writes a CA and a certificate it signs for hosts into dir,
// and returns when they expire. Without force it refuses to overwrite
// any of the files.
func writeCertSet(dir string, hosts []string, now time.Time, force bool) (time.Time, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return time.Time{}, err
	}
	if !force {
		for _, name := range []string{certsCA, certsCAKey, certsCert, certsCertKey} {
			if _, err := os.Lstat(filepath.Join(dir, name)); err == nil {
				return time.Time{}, fmt.Errorf("%s exists; use --force to overwrite it", filepath.Join(dir, name))
			}
		}
	}
	notBefore, notAfter := now.Add(-5*time.Minute), now.Add(certValidity)

	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return time.Time{}, err
	}
	caSerial, err := serialNumber()
	if err != nil {
		return time.Time{}, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          caSerial,
		Subject:               pkix.Name{CommonName: "weir trial CA", Organization: []string{"weir"}},
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return time.Time{}, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return time.Time{}, err
	}

	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return time.Time{}, err
	}
	serial, err := serialNumber()
	if err != nil {
		return time.Time{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: hosts[0], Organization: []string{"weir"}},
		NotBefore:    notBefore,
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		// Every weir process is a server and a client.
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return time.Time{}, err
	}

	caKeyPEM, err := keyPEM(caKey)
	if err != nil {
		return time.Time{}, err
	}
	certKeyPEM, err := keyPEM(key)
	if err != nil {
		return time.Time{}, err
	}
	for _, f := range []struct {
		name string
		data []byte
		mode os.FileMode
	}{
		{certsCAKey, caKeyPEM, 0o600},
		{certsCertKey, certKeyPEM, 0o600},
		{certsCA, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o644},
		{certsCert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644},
	} {
		if err := writeFileMode(filepath.Join(dir, f.name), f.data, f.mode); err != nil {
			return time.Time{}, err
		}
	}
	return notAfter, nil
}

func serialNumber() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
}

func keyPEM(k *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// writeFileMode writes data to a new file of the given mode, through a
// temporary file renamed into place: the mode holds even when the file
// existed before (os.WriteFile keeps an existing file's mode), and a key
// is never readable by others, not even while it is written.
func writeFileMode(path string, data []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(data)
	err = errors.Join(err, tmp.Chmod(mode), tmp.Close())
	if err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

func printCertConfig(w io.Writer, dir string, hosts []string, notAfter time.Time) {
	fmt.Fprintf(w, "Wrote %s, %s, %s and %s into %s: a CA and a certificate for %s, valid until %s.\n",
		certsCA, certsCAKey, certsCert, certsCertKey, dir, strings.Join(hosts, ", "), notAfter.UTC().Format(time.DateOnly))
	fmt.Fprintf(w, "Configure every process and the weir command line with (conf.yaml):\n\n")
	fmt.Fprintf(w, "security.ssl.enabled: true\n")
	fmt.Fprintf(w, "security.ssl.mutual: true\n")
	fmt.Fprintf(w, "security.ssl.cert: %s\n", filepath.Join(dir, certsCert))
	fmt.Fprintf(w, "security.ssl.key: %s\n", filepath.Join(dir, certsCertKey))
	fmt.Fprintf(w, "security.ssl.ca: %s\n", filepath.Join(dir, certsCA))
	fmt.Fprintf(w, "\n%s signs more certificates; it is not needed to run the cluster, keep it elsewhere.\n", certsCAKey)
}
