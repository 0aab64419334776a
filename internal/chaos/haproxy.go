package chaos

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/proc"
)

// HAProxy's health checks of the gateways: every haproxyInter, fall 2 and
// rise 2, so a draining gateway (/readyz 503) is out of rotation within
// about two intervals, well inside the drain delay.
const (
	haproxyInter = 500 * time.Millisecond
	haproxyFall  = 2
	haproxyRise  = 2
)

// haproxyConfig is HAProxy in front of the gateway processes
// (docs/CHAOS.md, "Rolling the gateways", says why each setting is safe).
var haproxyConfig = template.Must(template.New("haproxy").Parse(`# mcpfleet chaos: HAProxy in front of the gateway processes
global
  maxconn 4096
  # Read by the run: which gateways HAProxy sees up, and its counters.
  stats socket {{.Socket}} mode 600 level user

defaults
  mode http
  timeout connect 1s
  timeout check 400ms
  timeout http-request 10s
  # Longer than the longest call a run allows (1 min) and than the gaps
  # between an SSE stream's events (the gateway sends a keep-alive comment
  # every 15 s): only these bound a stream.
  timeout client 2m
  timeout server 2m
  # Longer than the clients' own idle timeout (30 s), so that a client
  # closes an idle connection before HAProxy does, never while it sends.
  timeout http-keep-alive 60s
  # A connection that failed to open carried nothing: try again, each time
  # on another gateway. retry-on stays at its default (conn-failure): a
  # request that reached a gateway is never sent twice.
  retries 3
  option redispatch 1
  # One connection to a gateway per request, closed after its answer
  # (clients keep theirs alive): HAProxy holds no idle connection that a
  # stopping gateway closes just as a request goes out on it.
  option http-server-close
  # Send small SSE events at once instead of waiting to fill a packet.
  option http-no-delay

frontend mcp
  bind {{.Listen}}
  default_backend gateways

backend gateways
  balance roundrobin
  # A draining gateway answers /readyz 503 while it still serves.
  option httpchk
  http-check send meth GET uri /readyz
  http-check expect status 200
{{- range .Servers}}
  server {{.Name}} {{.Addr}} check inter {{$.Inter}} fall {{$.Fall}} rise {{$.Rise}}
{{- end}}
`))

// haproxy is a running HAProxy and the stats socket it answers on.
type haproxy struct {
	p      *proc.Process
	addr   string // the frontend, host:port
	socket string
}

// startHAProxy runs bin in the foreground with a configuration written in
// dir, balancing over gws, and returns once it sees every gateway up. A
// port taken before HAProxy binds it costs one more attempt, up to three.
func startHAProxy(ctx context.Context, bin, dir string, gws []*gatewayProc) (*haproxy, error) {
	var err error
	for range 3 {
		var h *haproxy
		if h, err = tryHAProxy(ctx, bin, dir, gws); err == nil || ctx.Err() != nil {
			return h, err
		}
	}
	return nil, err
}

func tryHAProxy(ctx context.Context, bin, dir string, gws []*gatewayProc) (*haproxy, error) {
	addr, err := proc.FreeAddr()
	if err != nil {
		return nil, err
	}
	h := &haproxy{addr: addr, socket: filepath.Join(dir, "haproxy.sock")}
	type server struct{ Name, Addr string }
	v := struct {
		Socket, Listen, Inter string
		Fall, Rise            int
		Servers               []server
	}{h.socket, addr, fmt.Sprintf("%dms", haproxyInter.Milliseconds()), haproxyFall, haproxyRise, nil}
	for _, gw := range gws {
		v.Servers = append(v.Servers, server{gw.name, gw.addr})
	}
	var b strings.Builder
	if err := haproxyConfig.Execute(&b, v); err != nil {
		return nil, fmt.Errorf("writing haproxy's configuration: %w", err)
	}
	file := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
		return nil, fmt.Errorf("writing haproxy's configuration: %w", err)
	}
	_ = os.Remove(h.socket) // a failed attempt's
	if h.p, err = proc.Start("haproxy", bin, "-db", "-f", file); err != nil {
		return nil, err
	}
	for _, gw := range gws {
		if err := h.wait(ctx, gw.name, statusUp); err != nil {
			h.p.Kill()
			return nil, err
		}
	}
	return h, nil
}

// HAProxy's server states, as "show stat" spells them: "UP", "DOWN", and
// "UP 1/2" or "DOWN 1/2" while a check streak is under way.
func statusUp(s string) bool   { return s == "UP" }
func statusDown(s string) bool { return strings.HasPrefix(s, "DOWN") }

// wait polls the state of server name until want holds, for up to 15 s.
func (h *haproxy) wait(ctx context.Context, name string, want func(string) bool) error {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	var last string
	for {
		st, err := h.status(ctx, name)
		if err == nil && want(st) {
			return nil
		}
		last = st
		if err != nil {
			last = err.Error()
		}
		select {
		case <-h.p.Exited():
			return fmt.Errorf("haproxy exited (%v):\n%s", h.p.Err(), proc.LastLines(h.p.Output(), 20))
		case <-ctx.Done():
			return fmt.Errorf("waiting for HAProxy to see %s: %w (last: %s)", name, ctx.Err(), last)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// status returns the state of server name in the gateways backend.
func (h *haproxy) status(ctx context.Context, name string) (string, error) {
	rows, err := h.stat(ctx)
	if err != nil {
		return "", err
	}
	for _, r := range rows {
		if r["pxname"] == "gateways" && r["svname"] == name {
			return r["status"], nil
		}
	}
	return "", fmt.Errorf("haproxy has no server %s", name)
}

// figures reads HAProxy's counters of the run.
func (h *haproxy) figures(ctx context.Context) (*BalancerFigures, error) {
	rows, err := h.stat(ctx)
	if err != nil {
		return nil, err
	}
	b := &BalancerFigures{Requests: map[string]int{}}
	n := func(r map[string]string, k string) int { v, _ := strconv.Atoi(r[k]); return v } // "" is 0
	for _, r := range rows {
		switch {
		case r["pxname"] == "mcp" && r["svname"] == "FRONTEND":
			b.Answers5xx = n(r, "hrsp_5xx")
		case r["pxname"] == "gateways" && r["svname"] == "BACKEND":
			b.ConnErrors, b.RespErrors = n(r, "econ"), n(r, "eresp")
			b.Retries, b.Redispatches = n(r, "wretr"), n(r, "wredis")
		case r["pxname"] == "gateways":
			b.Requests[r["svname"]] = n(r, "stot")
		}
	}
	return b, nil
}

// stat asks the stats socket "show stat" and returns its rows, each by the
// header's column names.
func (h *haproxy) stat(ctx context.Context) ([]map[string]string, error) {
	var d net.Dialer
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	c, err := d.DialContext(ctx, "unix", h.socket)
	if err != nil {
		return nil, fmt.Errorf("asking haproxy: %w", err)
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	if _, err := io.WriteString(c, "show stat\n"); err != nil {
		return nil, fmt.Errorf("asking haproxy: %w", err)
	}
	cr := csv.NewReader(c) // the socket closes after one answer
	cr.FieldsPerRecord = -1
	records, err := cr.ReadAll()
	if err != nil {
		return nil, fmt.Errorf("reading haproxy's stats: %w", err)
	}
	if len(records) == 0 || len(records[0]) == 0 || !strings.HasPrefix(records[0][0], "# ") {
		return nil, errors.New("reading haproxy's stats: no header")
	}
	head := records[0]
	head[0] = strings.TrimPrefix(head[0], "# ")
	var rows []map[string]string
	for _, rec := range records[1:] {
		row := map[string]string{}
		for i, v := range rec {
			if i < len(head) {
				row[head[i]] = v
			}
		}
		rows = append(rows, row)
	}
	return rows, nil
}
