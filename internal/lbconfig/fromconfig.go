package lbconfig

import (
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/config"
)

// ErrDiscovery is returned by FromConfig for a configuration that finds
// its replicas in DNS: the emitted files list replicas statically.
var ErrDiscovery = errors.New("discovery.dns_name: lbconfig writes a fixed list of replicas; " +
	"list them under upstreams instead (or use HAProxy's server-template with resolvers by hand)")

// FromConfig builds a Spec from a gateway configuration: one fleet, or,
// when c has services, a Service for each. salt is the routing salt (the
// secret file's routing_salt); generated says it was made for this file.
// listen overrides c.Listen unless it is "".
func FromConfig(c config.Config, salt []byte, generated bool, listen string) (Spec, error) {
	if c.Discovery.DNSName != "" && len(c.Services) == 0 {
		return Spec{}, ErrDiscovery
	}
	if len(salt) < 16 {
		return Spec{}, errors.New("routing salt: want at least 16 bytes")
	}
	s := Spec{Listen: c.Listen, Salt: hex.EncodeToString(salt), SaltGenerated: generated}
	if listen != "" {
		s.Listen = listen
	}
	if len(c.Services) > 0 {
		services, err := c.ResolveServices()
		if err != nil {
			return Spec{}, err
		}
		for _, cs := range services {
			sv, err := serviceOf(cs)
			if err != nil {
				return Spec{}, fmt.Errorf("service %q: %w", cs.Name, err)
			}
			s.Services = append(s.Services, sv)
		}
	} else {
		f, path, err := fleetOf(c)
		if err != nil {
			return Spec{}, err
		}
		s.Path, s.Upstreams, s.Health, s.Retries, s.ConnectTimeout, s.MaxBodyBytes =
			path, f.Upstreams, f.Health, f.Retries, f.ConnectTimeout, f.MaxBodyBytes
	}
	if err := s.Validate(); err != nil {
		return Spec{}, err
	}
	return s, nil
}

// serviceOf builds one service: its fleet from its own configuration, the
// paths the gateway serves for it, where its requests come from.
func serviceOf(cs config.Service) (Service, error) {
	c := cs.Config
	if c.Discovery.DNSName != "" {
		return Service{}, ErrDiscovery
	}
	f, replicaPath, err := fleetOf(c)
	if err != nil {
		return Service{}, err
	}
	sv := Service{Name: cs.Name, Hosts: cs.Hosts, Default: cs.Default, Path: c.Path, Fleet: f}
	if replicaPath != c.Path {
		sv.ReplicaPath = replicaPath
	}
	if c.SSEPath != "" {
		sv.Paths = append(sv.Paths, c.SSEPath, c.SSEMessagesPath)
	}
	sv.Paths = append(sv.Paths, c.PassthroughPaths...)
	return sv, nil
}

// fleetOf builds the fleet of a configuration and its replicas' MCP path.
func fleetOf(c config.Config) (Fleet, string, error) {
	f := Fleet{
		Retries:        c.Retries,
		ConnectTimeout: time.Duration(c.DialTimeout),
		MaxBodyBytes:   c.MaxBodyBytes,
		Health: Health{
			Interval: time.Duration(c.HealthCheck.Interval),
			Fall:     c.HealthCheck.Fall,
			Rise:     c.HealthCheck.Rise,
			Path:     c.HealthCheck.Path,
			Host:     c.HealthCheck.Host,
		},
	}
	var path string
	for i, cu := range c.Upstreams {
		u, p, err := upstreamOf(i, cu)
		if err != nil {
			return Fleet{}, "", err
		}
		switch {
		case path == "":
			path = p
		case p != path:
			// The balancer sends a request to any replica at one path, so
			// every replica must serve MCP at the same one.
			return Fleet{}, "", fmt.Errorf("upstream %q: path %q differs from %q; every replica must serve the same MCP path", u.Name, p, path)
		}
		f.Upstreams = append(f.Upstreams, u)
	}
	return f, path, nil
}

// upstreamOf turns the i-th configured upstream into a replica and its MCP
// path.
func upstreamOf(i int, cu config.Upstream) (Upstream, string, error) {
	label := cu.Name
	if label == "" {
		label = fmt.Sprintf("upstreams[%d]", i)
	}
	if cu.IsStdio() {
		return Upstream{}, "", fmt.Errorf("upstream %q is a stdio server: a stdio fleet needs mcpfleet itself (mcpfleet serve runs its children and serves them over HTTP); nginx and HAProxy cannot run one", label)
	}
	u, err := url.Parse(cu.URL)
	if err != nil {
		return Upstream{}, "", fmt.Errorf("upstream %q: parsing url: %w", label, err)
	}
	if u.Scheme != "http" {
		// TLS to replicas needs a CA and a server name per replica; write
		// those by hand (nginx proxy_ssl_*, HAProxy "ssl verify required").
		return Upstream{}, "", fmt.Errorf("upstream %q: scheme %q: lbconfig writes plain-HTTP upstreams only", label, u.Scheme)
	}
	port := 80
	if p := u.Port(); p != "" {
		if port, err = strconv.Atoi(p); err != nil {
			return Upstream{}, "", fmt.Errorf("upstream %q: port %q is not a number", label, p)
		}
	}
	up := Upstream{Name: cu.Name, Host: u.Hostname(), Port: port}
	if up.Name == "" {
		up.Name = derivedName(net.JoinHostPort(up.Host, strconv.Itoa(port)))
	}
	if !validHost(up.Host) {
		return Upstream{}, "", fmt.Errorf("upstream %q: host %q is not an IP address or a DNS name", label, up.Host)
	}
	path := u.EscapedPath()
	if path == "" {
		path = "/"
	}
	return up, path, nil
}

// derivedName makes a safe name of host:port for an unnamed upstream:
// every character outside [A-Za-z0-9.-] becomes '-'.
func derivedName(hostport string) string {
	name := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.':
			return r
		}
		return '-'
	}, hostport)
	return "r-" + strings.Trim(name, "-")
}
