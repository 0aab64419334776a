package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/config"
	"github.com/mcpfleet/mcpfleet/internal/tools"
	"github.com/mcpfleet/mcpfleet/internal/tools/listing"
)

// runTools runs the tools command (its help: helptext.go).
func runTools(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageError{errors.New("a subcommand is required: lock")}
	}
	switch args[0] {
	case "lock":
		return runToolsLock(ctx, args[1:], stdout, stderr)
	case "help", "-h", "-help", "--help":
		return helpRequest{newFlagSet("tools")}
	}
	return usageError{fmt.Errorf("unknown subcommand %q (want lock)", args[0])}
}

// runToolsLock runs 'mcpfleet tools lock' (its help: helptext.go).
func runToolsLock(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("tools lock")
	upstream := fs.String("upstream", "", "the replica's MCP endpoint `URL`, e.g. http://127.0.0.1:9001/mcp")
	authFile := fs.String("authorization-file", "", "`file` whose one line is sent as the Authorization header, e.g. Bearer xyz (tools.probe_authorization_file)")
	timeout := fs.Duration("timeout", 5*time.Second, "how long each request may take")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *upstream == "" {
		return usageError{errors.New("--upstream is required: the replica's MCP endpoint URL")}
	}
	u, err := url.Parse(*upstream)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return usageError{errors.New("--upstream: want an http or https URL with a host, e.g. http://127.0.0.1:9001/mcp")}
	}
	if *timeout <= 0 {
		return usageError{fmt.Errorf("--timeout must be positive, not %v", *timeout)}
	}
	auth, err := readToolsAuthorization(*authFile)
	if err != nil {
		return usageError{err}
	}
	defs, era, err := listing.List(ctx, *upstream, listing.ListOptions{
		Client: &http.Client{
			Timeout: *timeout,
			// A redirected POST turns into a GET, and the credential does
			// not follow it to another host: neither lists tools.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		Authorization: auth,
	})
	if err != nil {
		return err
	}
	set, err := tools.NewSet(defs)
	if err != nil {
		return fmt.Errorf("tools of %s: %w", u.Redacted(), err)
	}
	if set.Len() == 0 {
		return fmt.Errorf("%s declares no tools: there is nothing to lock", u.Redacted())
	}
	b, err := tools.LockOf(set).Marshal()
	if err != nil {
		return fmt.Errorf("writing the lock of %s: %w", u.Redacted(), err)
	}
	if _, err := stdout.Write(b); err != nil {
		return fmt.Errorf("writing the lock: %w", err)
	}
	noun := "tools"
	if set.Len() == 1 {
		noun = "tool"
	}
	fmt.Fprintf(stderr, "locked %d %s of %s (era %s, set %s)\n", set.Len(), noun, u.Redacted(), era, set.Digest())
	return nil
}

// readToolsAuthorization reads the Authorization header value from path
// ("" for none): one line, in a file only this process's user (or group)
// may read, as the secret file. No error quotes its content.
func readToolsAuthorization(path string) (string, error) {
	return readAuthorization("--authorization-file", path)
}

// readAuthorization reads an Authorization header's value from path, named
// key in errors: one line, in a file on the secret file's terms. No error
// quotes the value.
func readAuthorization(key, path string) (string, error) {
	if path == "" {
		return "", nil
	}
	if err := config.CheckSecretFile(path); err != nil {
		return "", fmt.Errorf("%s %s: %w", key, path, err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", key, err)
	}
	auth := strings.TrimSpace(string(b))
	switch {
	case auth == "":
		return "", fmt.Errorf("%s %s: empty: want one line, the Authorization header's value", key, path)
	case strings.ContainsAny(auth, "\r\n"):
		return "", fmt.Errorf("%s %s: more than one line: want one line, the Authorization header's value", key, path)
	case strings.ContainsFunc(auth, func(r rune) bool { return r < ' ' || r == 0x7f }):
		return "", fmt.Errorf("%s %s: the value holds control characters", key, path)
	}
	return auth, nil
}
