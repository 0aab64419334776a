package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"text/tabwriter"
)

// View is one gateway's fleet as `mcpfleet fleet` fetched it: its admin
// URL, and the snapshot or why there is none.
type View struct {
	Admin string
	Fleet *Fleet
	Err   error
}

// Fetch reads GET /api/fleet of the admin listener at base (e.g.
// http://127.0.0.1:9090), with token as the bearer token when not "".
func Fetch(ctx context.Context, c *http.Client, base, token string) (*Fleet, error) {
	resp, err := do(ctx, c, http.MethodGet, base, "/api/fleet", token)
	if err != nil {
		return nil, err
	}
	var f Fleet
	if err := json.Unmarshal(resp, &f); err != nil {
		return nil, fmt.Errorf("%s: decoding /api/fleet: %w", base, err)
	}
	return &f, nil
}

// Act drains (held) or resumes the replica named name at the admin
// listener at base, and reports whether that changed anything there.
func Act(ctx context.Context, c *http.Client, base, token, name string, held bool) (bool, error) {
	verb := "resume"
	if held {
		verb = "drain"
	}
	body, err := do(ctx, c, http.MethodPost, base, "/api/replicas/"+url.PathEscape(name)+"/"+verb, token)
	if err != nil {
		return false, err
	}
	var a actionBody
	if err := json.Unmarshal(body, &a); err != nil {
		return false, fmt.Errorf("%s: decoding the %s answer: %w", base, verb, err)
	}
	return a.Changed, nil
}

// do sends one request and returns the body of a 200 answer; any other
// status is an error with the answer's own error text.
func do(ctx context.Context, c *http.Client, method, base, path, token string) ([]byte, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("admin url %q: want http(s)://host:port", base)
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + path
	req, err := http.NewRequestWithContext(ctx, method, u.String(), nil)
	if err != nil {
		return nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", base, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return nil, fmt.Errorf("%s: reading %s: %w", base, path, err)
	}
	if resp.StatusCode != http.StatusOK {
		var e errorBody
		if json.Unmarshal(body, &e) == nil && e.Error != "" {
			return nil, fmt.Errorf("%s: %s: %d %s", base, path, resp.StatusCode, e.Error)
		}
		return nil, fmt.Errorf("%s: %s: %s", base, path, resp.Status)
	}
	return body, nil
}

// WriteTable writes the gateways' views as one table: a row per replica
// (in the order the first gateway lists them, then any only others know),
// a column group per gateway (state, in flight, sessions, streams,
// requests, errors, p99 ms), "-" where a gateway does not know the
// replica; then a line per gateway that could not be read.
func WriteTable(w io.Writer, views []View) error {
	var names []string
	seen := map[string]bool{}
	for _, v := range views {
		if v.Fleet == nil {
			continue
		}
		for _, r := range v.Fleet.Replicas {
			if !seen[r.Name] {
				seen[r.Name] = true
				names = append(names, r.Name)
			}
		}
	}
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	const group = "state\tinflight\tsessions\tstreams\trequests\terrors\tp99_ms"
	head, sub := []string{"replica"}, []string{""}
	for i, v := range views {
		if v.Fleet == nil {
			continue
		}
		head = append(head, fmt.Sprintf("gateway %d: %s", i+1, v.Admin), "", "", "", "", "", "")
		sub = append(sub, strings.Split(group, "\t")...)
	}
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	fmt.Fprintln(tw, strings.Join(sub, "\t"))
	for _, name := range names {
		row := []string{name}
		for _, v := range views {
			if v.Fleet == nil {
				continue
			}
			r := v.Fleet.replica(name)
			if r == nil {
				row = append(row, "-", "-", "-", "-", "-", "-", "-")
				continue
			}
			state := r.State
			if r.Held {
				state += " (by hand)"
			}
			row = append(row, state, fmt.Sprint(r.InFlight), fmt.Sprint(r.Sessions), fmt.Sprint(r.Streams),
				fmt.Sprint(r.Requests), fmt.Sprint(r.Errors), fmt.Sprintf("%.1f", r.LatencyP99))
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for i, v := range views {
		switch {
		case v.Err != nil:
			fmt.Fprintf(&buf, "gateway %d: %s: %v\n", i+1, v.Admin, v.Err)
		case v.Fleet != nil:
			g := v.Fleet.Gateway
			state := "serving"
			if g.Draining {
				state = "draining"
			}
			fmt.Fprintf(&buf, "gateway %d: %s: %s, version %s, up %.0f s\n", i+1, v.Admin, state, g.Version, g.Uptime)
		}
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// replica returns the replica named name, or nil.
func (f *Fleet) replica(name string) *Replica {
	for i := range f.Replicas {
		if f.Replicas[i].Name == name {
			return &f.Replicas[i]
		}
	}
	return nil
}
