// Package lbconfig writes nginx and HAProxy configurations for a fleet of
// MCP replicas that follow the load-balancing guide of the GitLab MCP server: a
// consistent hash of a salted digest of the credential, normalised first and
// falling back to the client's address; retries only of requests that never
// reached a replica; streaming without buffering; long read timeouts.
//
// Nginx and HAProxy are pure: they take a Spec and return the file's bytes.
// Every value they insert is validated first, so nothing in a Spec can add a
// directive to the emitted file. A Spec is one fleet, or several services
// (Spec.Services), each its own fleet chosen by path and Host.
package lbconfig

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Spec is what an emitted configuration is made from.
type Spec struct {
	// Listen is the balancer's plain-HTTP listen address, host:port; an
	// empty host means every address.
	Listen string
	// Path is the MCP endpoint's path on every replica, for the comments;
	// "" means /mcp.
	Path string
	// Upstreams are the replicas, in order. At least one is required.
	Upstreams []Upstream
	// Salt is mixed into every routing key. It must be at least 32
	// characters of [A-Za-z0-9_-] (FromConfig hex-encodes the secret's
	// routing salt).
	Salt string
	// SaltGenerated says Salt was made for this file rather than read from
	// a secret file, so the comments ask to keep it stable.
	SaltGenerated bool
	// Health configures health checks and passive ejection.
	Health Health
	// Retries bounds moves of a request that never reached a replica to
	// another one; 0 means no retries.
	Retries int
	// ConnectTimeout bounds connecting to a replica; 0 means 5s.
	ConnectTimeout time.Duration
	// MaxBodyBytes bounds a request body at nginx; 0 means nginx's default.
	MaxBodyBytes int64
	// Services, when not empty, are several MCP services behind the one
	// listener, each with its own fleet. Path and Upstreams must then be
	// empty, and Health, Retries, ConnectTimeout and MaxBodyBytes are each
	// service's own instead.
	Services []Service
}

// Service is one MCP service of several: its fleet and the requests that
// are its (those for one of its paths, from one of its hosts).
type Service struct {
	// Name names the service's upstream (nginx) and backend (HAProxy),
	// mcp_fleet_<Name>: 1 to 32 of [a-z0-9_-], starting and ending with a
	// letter or digit.
	Name string
	// Hosts are the Host names the service answers: lower-case, exact or
	// *. and a name (one label in place of the star); none means every
	// host.
	Hosts []string
	// Default says the root OAuth discovery documents
	// (/.well-known/oauth-protected-resource without a path) go to this
	// service.
	Default bool
	// Path is the service's MCP endpoint at the balancer; its discovery
	// documents are the well-known paths with Path as suffix.
	Path string
	// ReplicaPath is the MCP endpoint on the service's replicas, where
	// requests for Path are sent; "" means Path.
	ReplicaPath string
	// Paths are the other paths the service answers, passed to its
	// replicas unchanged (2024-11-05 SSE paths, passthrough paths); one
	// ending in / covers every path under it.
	Paths []string
	Fleet
}

// Fleet is the replicas of one service and how they are balanced.
type Fleet struct {
	// Upstreams are the replicas, in order. At least one is required.
	Upstreams []Upstream
	// Health configures health checks and passive ejection.
	Health Health
	// Retries bounds moves of a request that never reached a replica to
	// another one; 0 means no retries.
	Retries int
	// ConnectTimeout bounds connecting to a replica; 0 means 5s.
	ConnectTimeout time.Duration
	// MaxBodyBytes bounds a request body at nginx; 0 means nginx's default.
	MaxBodyBytes int64
}

// fleet is the Spec's own fleet (a Spec without services).
func (s *Spec) fleet() Fleet {
	return Fleet{Upstreams: s.Upstreams, Health: s.Health, Retries: s.Retries, ConnectTimeout: s.ConnectTimeout, MaxBodyBytes: s.MaxBodyBytes}
}

// Upstream is one replica.
type Upstream struct {
	// Name names the replica in HAProxy and in comments: 1 to 64 of
	// [A-Za-z0-9_.-], starting with a letter or digit.
	Name string
	// Host is an IP address or a DNS name, without brackets.
	Host string
	// Port is the replica's TCP port.
	Port int
}

// Addr returns host:port, with brackets around an IPv6 address.
func (u Upstream) Addr() string { return net.JoinHostPort(u.Host, strconv.Itoa(u.Port)) }

// Health configures active checks (HAProxy) and passive ejection (both).
type Health struct {
	// Interval is the time between checks; 0 turns active checks and
	// passive ejection off.
	Interval time.Duration
	// Fall is the consecutive failures that take a replica down.
	Fall int
	// Rise is the consecutive successes that bring it back.
	Rise int
	// Path is the replicas' health endpoint, such as /health.
	Path string
	// Host is the Host header of checks; "" means the replicas' shared
	// host name, or none if they differ.
	Host string
}

var (
	nameRE    = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)
	dnsRE     = regexp.MustCompile(`^(?i)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*\.?$`)
	pathRE    = regexp.MustCompile(`^/[A-Za-z0-9/._~-]*$`)
	saltRE    = regexp.MustCompile(`^[A-Za-z0-9_-]{32,256}$`)
	serviceRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9_-]{0,30}[a-z0-9])?$`)
	hostRE    = regexp.MustCompile(`^(\*\.)?[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$`)
	errSpec   = errors.New("invalid spec")
)

// Validate checks every field that reaches an emitted file, naming the
// first bad one.
func (s *Spec) Validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{errSpec}, a...)...)
	}
	if err := checkListen(s.Listen); err != nil {
		return bad("listen %q: %v", s.Listen, err)
	}
	if !saltRE.MatchString(s.Salt) {
		return bad("salt: want 32 to 256 of [A-Za-z0-9_-]") // never echo it
	}
	if len(s.Services) > 0 {
		return s.validateServices(bad)
	}
	if s.Path != "" && !pathRE.MatchString(s.Path) {
		return bad("path %q: want / and [A-Za-z0-9/._~-]", s.Path)
	}
	return s.fleet().validate(bad)
}

// validate checks a fleet's replicas, health checks, retries and bounds.
func (f Fleet) validate(bad func(string, ...any) error) error {
	if len(f.Upstreams) == 0 {
		return bad("at least one upstream is required")
	}
	seen := map[string]bool{}
	for i, u := range f.Upstreams {
		switch {
		case !nameRE.MatchString(u.Name):
			return bad("upstream %d (%q): name must be 1 to 64 of [A-Za-z0-9_.-], starting with a letter or digit", i, u.Name)
		case seen[u.Name]:
			return bad("upstream %q: duplicate name", u.Name)
		case !validHost(u.Host):
			return bad("upstream %q: host %q is not an IP address or a DNS name", u.Name, u.Host)
		case u.Port < 1 || u.Port > 65535:
			return bad("upstream %q: port %d out of range", u.Name, u.Port)
		}
		seen[u.Name] = true
	}
	h := f.Health
	switch {
	case h.Interval < 0 || (h.Interval > 0 && h.Interval < time.Millisecond):
		return bad("health interval %s: want 0 (off) or at least 1ms", h.Interval)
	case h.Interval > 0 && (h.Fall < 1 || h.Rise < 1 || h.Fall > 1000 || h.Rise > 1000):
		return bad("health fall %d, rise %d: want 1 to 1000", h.Fall, h.Rise)
	case h.Interval > 0 && !pathRE.MatchString(h.Path):
		return bad("health path %q: want / and [A-Za-z0-9/._~-]", h.Path)
	case h.Host != "" && !validHostPort(h.Host):
		return bad("health host %q: want a host name or address, with an optional port", h.Host)
	case f.Retries < 0 || f.Retries > 10:
		return bad("retries %d: want 0 to 10", f.Retries)
	case f.ConnectTimeout < 0:
		return bad("connect timeout %s: must not be negative", f.ConnectTimeout)
	case f.MaxBodyBytes < 0:
		return bad("max body bytes %d: must not be negative", f.MaxBodyBytes)
	}
	return nil
}

// checkListen accepts host:port with an IP or DNS host, or :port.
func checkListen(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return errors.New("want host:port")
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return errors.New("want a port from 1 to 65535")
	}
	if host != "" && !validHost(host) {
		return errors.New("host is not an IP address or a DNS name")
	}
	return nil
}

func validHost(h string) bool {
	if a, err := netip.ParseAddr(h); err == nil {
		return a.Zone() == ""
	}
	return len(h) <= 253 && dnsRE.MatchString(h)
}

func validHostPort(hp string) bool {
	if host, port, err := net.SplitHostPort(hp); err == nil {
		n, err := strconv.Atoi(port)
		return err == nil && n >= 1 && n <= 65535 && validHost(host)
	}
	return validHost(hp) && !strings.Contains(hp, ":")
}
