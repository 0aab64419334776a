package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

const healthUsage = `usage: mcpfleet health [--timeout D] [URL]

Asks URL (default http://127.0.0.1:8080/healthz) once with GET and exits 0
if it answers 200, 1 with the reason on stderr otherwise. It is the
container image's HEALTHCHECK, which has no shell and no curl (docs/IMAGE.md).
Redirects are not followed and no proxy is used.

flags:
`

// defaultHealthURL is serve's /healthz on its default port, seen from
// inside the container or machine that runs it.
const defaultHealthURL = "http://127.0.0.1:8080/healthz"

// runHealth runs the health command: see healthUsage.
func runHealth(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("health", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), healthUsage)
		fs.PrintDefaults()
	}
	timeout := fs.Duration("timeout", 2*time.Second, "how long the whole check may take")
	// One optional argument, the URL: flags may come before it.
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err}
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
	status, err := getHealth(ctx, target, *timeout)
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

// getHealth sends one GET to target and returns the status line of a 200
// answer; any other answer, or none within timeout, is an error that says
// why in one line.
func getHealth(ctx context.Context, target string, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return "", fmt.Errorf("checking health: %w", err)
	}
	client := &http.Client{
		// A proxy from the environment must not answer for the process
		// checked, and a redirect is not a 200 from it.
		Transport:     &http.Transport{Proxy: nil, DisableKeepAlives: true},
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
