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

// FromConfig builds a Spec from a gateway configuration. salt is the
// routing salt (the secret file's routing_salt); generated says it was made
// for this file. listen overrides c.Listen unless it is "".
func FromConfig(c config.Config, salt []byte, generated bool, listen string) (Spec, error) {
	if c.Discovery.DNSName != "" {
		return Spec{}, ErrDiscovery
	}
	if len(salt) < 16 {
		return Spec{}, errors.New("routing salt: want at least 16 bytes")
	}
	s := Spec{
		Listen:         c.Listen,
		Salt:           hex.EncodeToString(salt),
		SaltGenerated:  generated,
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
	if listen != "" {
		s.Listen = listen
	}
	for i, cu := range c.Upstreams {
		u, path, err := upstreamOf(i, cu)
		if err != nil {
			return Spec{}, err
		}
		switch {
		case s.Path == "":
			s.Path = path
		case path != s.Path:
			// The balancer passes the path through unchanged, so every
			// replica must serve MCP at the same one.
			return Spec{}, fmt.Errorf("upstream %q: path %q differs from %q; every replica must serve the same MCP path", u.Name, path, s.Path)
		}
		s.Upstreams = append(s.Upstreams, u)
	}
	if err := s.Validate(); err != nil {
		return Spec{}, err
	}
	return s, nil
}

// upstreamOf turns the i-th configured upstream into a replica and its MCP
// path.
func upstreamOf(i int, cu config.Upstream) (Upstream, string, error) {
	label := cu.Name
	if label == "" {
		label = fmt.Sprintf("upstreams[%d]", i)
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
