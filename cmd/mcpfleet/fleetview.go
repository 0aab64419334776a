package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/admin"
)

// runFleet prints the fleet as several gateways see it: one row per
// replica, one column group per gateway (GET /api/fleet of each admin
// listener), and with --drain or --resume acts on every gateway first.
func runFleet(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("fleet")
	admins := fs.String("admin", "", "comma-separated admin listener `URLs` of the gateways, e.g. http://127.0.0.1:9090,http://127.0.0.1:9091")
	tokenFile := fs.String("token-file", "", "`file` holding the admin token (admin_token_file of the gateways)")
	drain := fs.String("drain", "", "drain the replica `NAME` by hand on every gateway, then print")
	resume := fs.String("resume", "", "resume the replica `NAME` on every gateway, then print")
	asJSON := fs.Bool("json", false, "print the gateways' snapshots as a JSON array instead of the table")
	timeout := fs.Duration("timeout", 5*time.Second, "how long each gateway may take to answer")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	urls, err := adminURLs(*admins)
	if err != nil {
		return usageError{err}
	}
	if *drain != "" && *resume != "" {
		return usageError{errors.New("--drain and --resume: one at a time")}
	}
	token, err := readAdminToken(*tokenFile)
	if err != nil {
		return usageError{err}
	}
	client := &http.Client{Timeout: *timeout}
	if name, held := cmpOr(*drain, *resume), *drain != ""; name != "" {
		if err := actOnAll(ctx, client, urls, token, name, held, stdout); err != nil {
			return err
		}
	}
	views := make([]admin.View, len(urls))
	var wg sync.WaitGroup
	for i, u := range urls {
		wg.Go(func() {
			f, err := admin.Fetch(ctx, client, u, token)
			views[i] = admin.View{Admin: u, Fleet: f, Err: err}
		})
	}
	wg.Wait()
	if *asJSON {
		fleets := make([]*admin.Fleet, len(views))
		for i, v := range views {
			fleets[i] = v.Fleet
		}
		b, _ := json.MarshalIndent(fleets, "", "  ")
		fmt.Fprintf(stdout, "%s\n", b)
	} else if err := admin.WriteTable(stdout, views); err != nil {
		return err
	}
	var failed []string
	for _, v := range views {
		if v.Err != nil {
			failed = append(failed, v.Admin)
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d of %d gateways could not be read: %s", len(failed), len(views), strings.Join(failed, ", "))
	}
	return nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// actOnAll drains or resumes name on every gateway, one after the other,
// and says what each did; it stops at the first that refuses, naming the
// ones already done.
func actOnAll(ctx context.Context, c *http.Client, urls []string, token, name string, held bool, out io.Writer) error {
	verb := map[bool]string{true: "drained", false: "resumed"}[held]
	var done []string
	for _, u := range urls {
		changed, err := admin.Act(ctx, c, u, token, name, held)
		if err != nil {
			if len(done) > 0 {
				return fmt.Errorf("%w (already %s on %s)", err, verb, strings.Join(done, ", "))
			}
			return err
		}
		done = append(done, u)
		if changed {
			fmt.Fprintf(out, "%s: %s %s\n", u, name, verb)
		} else {
			fmt.Fprintf(out, "%s: %s was already %s\n", u, name, verb)
		}
	}
	return nil
}

// adminURLs splits and checks --admin: at least one http(s)://host[:port]
// URL, none twice.
func adminURLs(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, errors.New("--admin: at least one admin listener URL is required")
	}
	var out []string
	for _, u := range strings.Split(s, ",") {
		u = strings.TrimSuffix(strings.TrimSpace(u), "/")
		if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
			return nil, fmt.Errorf("--admin: %q: want http(s)://host:port", u)
		}
		for _, o := range out {
			if o == u {
				return nil, fmt.Errorf("--admin: %q given twice", u)
			}
		}
		out = append(out, u)
	}
	return out, nil
}
