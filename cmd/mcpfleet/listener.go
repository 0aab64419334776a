package main

import (
	"context"
	stdlog "log"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/config"
	"github.com/mcpfleet/mcpfleet/internal/gateway"
	"github.com/mcpfleet/mcpfleet/internal/h1"
)

// mcpServer serves the MCP listener: internal/h1's Server (server: h1) or
// net/http's (server: std). Both stop the same way: Shutdown waits for
// requests and streams in flight without cancelling them, Close cuts them;
// what RegisterOnShutdown names runs once Shutdown has closed the
// listeners.
type mcpServer interface {
	Shutdown(ctx context.Context) error
	Close() error
	RegisterOnShutdown(f func())
}

var (
	_ mcpServer = (*h1.Server)(nil)
	_ mcpServer = (*http.Server)(nil)
)

// HTTP/2 limits of the std server over TLS (docs/GATEWAY.md, "TLS and
// HTTP/2").
const (
	// h2MaxConcurrentStreams bounds the streams one client connection may
	// have open at once, SSE streams included: RFC 9113 section 6.5.2 asks
	// for no fewer than 100; 250 is Go's default, set here so that it is
	// stated. Past it the client waits or opens another connection; the
	// limits step (limits.concurrency) is what bounds a caller.
	h2MaxConcurrentStreams = 250
)

// newMCPServer builds the MCP listener's server for cfg and returns it with
// the function that serves a listener. certs is nil for plaintext.
func newMCPServer(cfg config.Config, h http.Handler, log *slog.Logger, certs *certSlot) (mcpServer, func(net.Listener) error) {
	if cfg.Server == config.ServerH1 {
		s := &h1.Server{
			Handler:           h,
			ReadHeaderTimeout: time.Duration(cfg.ReadHeaderTimeout),
			IdleTimeout:       time.Duration(cfg.IdleTimeout),
			MaxHeaderBytes:    cfg.MaxHeaderBytes,
			Log:               log,
		}
		return s, s.Serve
	}
	s := newStdServer(cfg, h, log, certs)
	if certs == nil {
		return s, s.Serve
	}
	return s, func(ln net.Listener) error { return s.ServeTLS(ln, "", "") }
}

// newStdServer is net/http's server with the gateway's limits: HTTP/1.1,
// and HTTP/2 when certs is not nil (ALPN h2; no cleartext HTTP/2).
//
// It sets no ReadTimeout or WriteTimeout, which would bound a whole request
// or stream: the gateway bounds reading a body (body_read_timeout) and each
// write (write_timeout) itself, through http.ResponseController, which
// reaches an HTTP/2 stream as it reaches an HTTP/1.1 connection. Over HTTP/2
// max_header_bytes becomes SETTINGS_MAX_HEADER_LIST_SIZE (with Go's
// allowance of 32 bytes for each of ten fields); a larger header block is
// answered 431, as over HTTP/1.1.
func newStdServer(cfg config.Config, h http.Handler, log *slog.Logger, certs *certSlot) *http.Server {
	s := &http.Server{
		Handler:           gateway.CloseAfterChunked(h),
		ReadHeaderTimeout: time.Duration(cfg.ReadHeaderTimeout),
		IdleTimeout:       time.Duration(cfg.IdleTimeout),
		MaxHeaderBytes:    cfg.MaxHeaderBytes,
		ErrorLog:          newServerLog(log),
		Protocols:         new(http.Protocols),
		HTTP2: &http.HTTP2Config{
			MaxConcurrentStreams: h2MaxConcurrentStreams,
			// A connection none of whose bytes can be written for this
			// long is closed, with all its streams: the connection-wide
			// twin of write_timeout, which resets one stream.
			WriteByteTimeout: time.Duration(cfg.WriteTimeout),
		},
	}
	s.Protocols.SetHTTP1(true)
	if certs != nil {
		s.Protocols.SetHTTP2(true)
		s.TLSConfig = certs.tlsConfig(true)
	}
	return s
}

// serverLog turns net/http's ErrorLog lines into slog records: a failed
// TLS handshake (a port probe, a scanner, a plaintext client: anyone can
// cause one) at debug, anything else (a handler's panic, say) at warn.
type serverLog struct{ log *slog.Logger }

// newServerLog is net/http's ErrorLog writing to log.
func newServerLog(log *slog.Logger) *stdlog.Logger { return stdlog.New(serverLog{log}, "", 0) }

func (s serverLog) Write(p []byte) (int, error) {
	msg := strings.TrimSuffix(string(p), "\n")
	level := slog.LevelWarn
	if strings.HasPrefix(msg, "http: TLS handshake error") {
		level = slog.LevelDebug
	}
	s.log.Log(context.Background(), level, msg)
	return len(p), nil
}

// mcpURL is the MCP endpoint's URL for the startup line.
func mcpURL(cfg config.Config, addr net.Addr) string {
	scheme := "http"
	if cfg.TLS.Enabled() {
		scheme = "https"
	}
	return scheme + "://" + addr.String() + cfg.Path
}
