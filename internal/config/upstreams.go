package config

import (
	"slices"
	"strings"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/upstream"
)

// Discovery finds replicas as every A/AAAA record of a DNS name, such as a
// Kubernetes headless service, re-resolved on an interval.
type Discovery struct {
	DNSName  string   `yaml:"dns_name"` // "" turns discovery off
	Port     int      `yaml:"port"`     // the replicas' port; required with dns_name
	Scheme   string   `yaml:"scheme"`   // http or https
	Path     string   `yaml:"path"`     // the replicas' MCP path
	SSEPath  string   `yaml:"sse_path"` // the replicas' 2024-11-05 SSE path
	Interval Duration `yaml:"interval"` // how often to re-resolve
	// MaxInflight and MaxConnections apply to every discovered replica,
	// as upstreams[].max_inflight and max_connections do to one.
	MaxInflight    int `yaml:"max_inflight"`
	MaxConnections int `yaml:"max_connections"`
}

// HealthCheck configures active checks of each replica's health endpoint.
type HealthCheck struct {
	Interval Duration `yaml:"interval"` // 0 turns active checks (and passive ejection) off
	Timeout  Duration `yaml:"timeout"`
	Fall     int      `yaml:"fall"` // consecutive failures that take a replica down
	Rise     int      `yaml:"rise"` // consecutive successes that bring it back
	Path     string   `yaml:"path"`
	Host     string   `yaml:"host"` // Host header; "" means each replica URL's host
	Mode     string   `yaml:"mode"` // auto (path, and the MCP endpoint proven), http (path; 404 means check by connection) or mcp
}

// Upstream is one replica.
type Upstream struct {
	// Name identifies the replica in metrics and logs; "" means host:port.
	Name string `yaml:"name"`
	// URL is the replica's MCP endpoint.
	URL string `yaml:"url"`
	// SSEURL is the replica's 2024-11-05 SSE endpoint; "" means URL's
	// scheme and host with the path /sse.
	SSEURL string `yaml:"sse_url"`
	// MaxInflight is how many requests the replica runs at once, counted
	// over every gateway that shares limits.store; 0 means no cap.
	MaxInflight int `yaml:"max_inflight"`
	// MaxConnections is how many connections the replica takes; with
	// gateways, serve refuses a pool that could open more.
	MaxConnections int `yaml:"max_connections"`
	// Stdio, when its command is set, makes this upstream a stdio server
	// the gateway runs as child processes, each a replica; url is then
	// unset.
	Stdio Stdio `yaml:"stdio"`
}

func (c *Config) validateDiscovery(bad func(string, string, ...any)) {
	d := c.Discovery
	if d.DNSName == "" {
		return
	}
	if d.Port < 1 || d.Port > 65535 {
		bad("discovery.port", "want a port from 1 to 65535, got %d", d.Port)
	}
	if d.Scheme != "http" && d.Scheme != "https" {
		bad("discovery.scheme", "must be http or https, got %q", d.Scheme)
	}
	if !strings.HasPrefix(d.Path, "/") {
		bad("discovery.path", "must start with /, got %q", d.Path)
	}
	if !strings.HasPrefix(d.SSEPath, "/") || strings.ContainsAny(d.SSEPath, "?#") {
		bad("discovery.sse_path", "must start with / and have no query or fragment, got %q", d.SSEPath)
	}
	if d.Interval < Duration(time.Second) {
		bad("discovery.interval", "must be at least 1s, got %s", d.Interval)
	}
}

func (c *Config) validateHealthCheck(bad func(string, string, ...any)) {
	h := c.HealthCheck
	if h.Interval == 0 {
		return
	}
	if h.Interval < Duration(100*time.Millisecond) {
		bad("health_check.interval", "must be 0 (off) or at least 100ms, got %s", h.Interval)
	}
	if h.Timeout <= 0 || h.Timeout > h.Interval {
		bad("health_check.timeout", "must be positive and at most the interval, got %s", h.Timeout)
	}
	if h.Fall < 1 || h.Rise < 1 {
		bad("health_check.fall", "fall and rise must be at least 1")
	}
	if !strings.HasPrefix(h.Path, "/") {
		bad("health_check.path", "must start with /, got %q", h.Path)
	}
	if !slices.Contains(upstream.CheckModes, h.Mode) {
		bad("health_check.mode", "must be one of %s, got %q", strings.Join(upstream.CheckModes, ", "), h.Mode)
	}
}
