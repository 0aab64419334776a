package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// defaultHealthURL is serve's /healthz on its default port, seen from
// inside the container or machine that runs it.
const defaultHealthURL = "http://127.0.0.1:8080/healthz"

// runHealth runs the health command (its help: helptext.go).
func runHealth(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("health")
	timeout := fs.Duration("timeout", 2*time.Second, "how long the whole check may take")
	caFile := fs.String("ca-file", "", "PEM CA bundle `file`: the only roots an https URL's certificate is verified against")
	insecure := fs.Bool("insecure", false, "do not verify an https URL's certificate at all")
	// One optional argument, the URL: flags may come before it.
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 1 {
		return usageError{fmt.Errorf("unexpected argument %q", fs.Arg(1))}
	}
	target := defaultHealthURL
	if fs.NArg() == 1 {
		target = fs.Arg(0)
	}
	if err := checkHealthURL(target); err != nil {
		return usageError{err}
	}
	if *timeout <= 0 {
		return usageError{fmt.Errorf("--timeout must be positive, not %v", *timeout)}
	}
	tlsConf, err := healthTLS(target, *caFile, *insecure)
	if err != nil {
		return usageError{err}
	}
	status, err := getHealth(ctx, target, *timeout, tlsConf)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: %s\n", target, status)
	return nil
}

// checkHealthURL refuses anything but an absolute http or https URL with a
// host: the check is an HTTP GET and nothing else.
func checkHealthURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("health URL: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("health URL %q: scheme must be http or https", raw)
	}
	if u.Host == "" {
		return fmt.Errorf("health URL %q has no host", raw)
	}
	return nil
}

// healthTLS is the TLS of a check of target: nil (the system's roots) with
// neither caFile nor insecure, else the roots of caFile alone or no
// verification. Either with an http URL, both together, or a caFile that
// does not read or holds no certificate is an error naming what is wrong.
// The server name checked is the URL's host, as net/http sets it.
func healthTLS(target, caFile string, insecure bool) (*tls.Config, error) {
	if caFile == "" && !insecure {
		return nil, nil
	}
	if caFile != "" && insecure {
		return nil, errors.New("--ca-file and --insecure: give one, not both")
	}
	if u, _ := url.Parse(target); u.Scheme != "https" {
		name := "--insecure"
		if caFile != "" {
			name = "--ca-file"
		}
		return nil, fmt.Errorf("%s is for an https URL, not %q", name, target)
	}
	if insecure {
		return &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: true}, nil
	}
	b, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("--ca-file: %w", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("--ca-file %s: no PEM certificate in it", caFile)
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: roots}, nil
}

// getHealth sends one GET to target, over tlsConf when it is not nil, and
// returns the status line of a 200 answer; any other answer, or none
// within timeout, is an error that says why in one line.
func getHealth(ctx context.Context, target string, timeout time.Duration, tlsConf *tls.Config) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return "", fmt.Errorf("checking health: %w", err)
	}
	client := &http.Client{
		// A proxy from the environment must not answer for the process
		// checked, and a redirect is not a 200 from it.
		Transport:     &http.Transport{Proxy: nil, DisableKeepAlives: true, TLSClientConfig: tlsConf},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", fmt.Errorf("checking health: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 256))
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("checking health: GET %s: %s %q", target, resp.Status, strings.TrimSpace(string(body)))
	}
	return resp.Status, nil
}
