package stdio

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/h1"
)

// hostSuffix ends the host name of every child's replica URL: a name
// under .invalid (RFC 6761, section 6.4) never resolves, so a request
// for it reaches a child through Sockets alone, never the network.
const hostSuffix = ".stdio.invalid"

// URL returns the replica URL of the child called name.
func URL(name string) string { return "http://" + name + hostSuffix + "/mcp" }

// Sockets serves bridges on unix sockets in a directory of mode 0700, so
// that no other local user can reach a child (a loopback TCP port would
// be open to every one of them), and dials them for the gateway.
type Sockets struct {
	dir string
	log *slog.Logger // a bridge's panic; nil: discarded

	mu      sync.Mutex            // guards servers
	servers map[string]*h1.Server // host -> its server
}

// NewSockets makes the directory of the sockets, under the system's
// temporary directory; log takes what their servers report (a bridge's
// panic), nil discards it.
func NewSockets(log *slog.Logger) (*Sockets, error) {
	dir, err := os.MkdirTemp("", "mcpfleet-stdio-")
	if err != nil {
		return nil, fmt.Errorf("making the stdio socket directory: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, fmt.Errorf("making the stdio socket directory: %w", err)
	}
	return &Sockets{dir: dir, log: log, servers: map[string]*h1.Server{}}, nil
}

// Serve serves b for the child called name, until Remove or Close, on
// the gateway's own HTTP/1.1 server (internal/h1), whose request costs a
// fraction of net/http's: a child's GET streams, DELETEs, health checks
// and tool listings cross it (its calls are handed to b in the process,
// Handler).
func (s *Sockets) Serve(name string, b http.Handler) error {
	host := name + hostSuffix
	ln, err := net.Listen("unix", s.path(host))
	if err != nil {
		return fmt.Errorf("serving stdio child %s: %w", name, err)
	}
	srv := &h1.Server{Handler: b, ReadHeaderTimeout: 10 * time.Second, Log: s.log}
	s.mu.Lock()
	if old := s.servers[host]; old != nil {
		s.mu.Unlock()
		ln.Close()
		return fmt.Errorf("serving stdio child %s: served already", name)
	}
	s.servers[host] = srv
	s.mu.Unlock()
	go func() { _ = srv.Serve(ln) }()
	return nil
}

// Remove stops serving the child called name.
func (s *Sockets) Remove(name string) {
	host := name + hostSuffix
	s.mu.Lock()
	srv := s.servers[host]
	delete(s.servers, host)
	s.mu.Unlock()
	if srv != nil {
		_ = srv.Close()
		_ = os.Remove(s.path(host))
	}
}

// Close stops every server and removes the directory; idempotent.
func (s *Sockets) Close() {
	s.mu.Lock()
	servers := s.servers
	s.servers = map[string]*h1.Server{}
	s.mu.Unlock()
	for _, srv := range servers {
		_ = srv.Close()
	}
	_ = os.RemoveAll(s.dir)
}

func (s *Sockets) path(host string) string {
	return filepath.Join(s.dir, strings.TrimSuffix(host, hostSuffix)+".sock")
}

// Handler returns the handler served for a child's host (its replica
// URL's), nil for any other host: the gateway calls it directly for a
// child's calls (gateway.Options.Local).
func (s *Sockets) Handler(host string) http.Handler {
	if s == nil || !strings.HasSuffix(host, hostSuffix) {
		return nil
	}
	s.mu.Lock()
	srv := s.servers[host]
	s.mu.Unlock()
	if srv == nil {
		return nil
	}
	return srv.Handler
}

// Dial returns a dial function that connects a child's host to its
// socket and hands every other address to next.
func (s *Sockets) Dial(next func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if err != nil || !strings.HasSuffix(host, hostSuffix) {
			return next(ctx, network, addr)
		}
		if s == nil {
			return nil, errors.New("no stdio children are served")
		}
		s.mu.Lock()
		_, ok := s.servers[host]
		s.mu.Unlock()
		if !ok {
			return nil, fmt.Errorf("dialing stdio child %s: not served", strings.TrimSuffix(host, hostSuffix))
		}
		var d net.Dialer
		return d.DialContext(ctx, "unix", s.path(host))
	}
}
