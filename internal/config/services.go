package config

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"strings"

	"github.com/mcpfleet/mcpfleet/internal/hostmatch"
	"go.yaml.in/yaml/v3"
)

// A gateway serves one MCP service per fleet. Without services: it is one
// service at path, the top-level keys its own. With services: each entry
// is a service chosen by path, by hosts, or both, whose keys are the
// top-level keys with its own over them (docs/CONFIG.md, "Services").

// ServiceSpec is one entry of services: as written. Its keys are applied
// over the top level by Config.ResolveServices, after flags have changed
// the top level, so that a flag is every service's default too.
type ServiceSpec struct {
	node yaml.Node
}

// UnmarshalYAML keeps the entry as it was written.
func (s *ServiceSpec) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: a service is a mapping (name, path, hosts and its own keys)", n.Line)
	}
	s.node = *n
	return nil
}

// MarshalYAML writes the entry as it was written.
func (s ServiceSpec) MarshalYAML() (any, error) { return &s.node, nil }

// Service is one service resolved: its name, where its requests come
// from, and its whole configuration (the top level's keys with its own
// over them; Config.Path is its MCP endpoint).
type Service struct {
	// Name is the service's name: in metrics (the service label), logs,
	// store keys and sealed IDs. Single-service configs have "".
	Name string
	// Hosts are the Host names the service answers (exact, or one
	// leading wildcard label: *.example.com); none means every host.
	Hosts []string
	// Default says the root OAuth discovery documents go to this service.
	Default bool
	Config  Config
}

// ServicesReady values: /readyz ready when every service has an eligible
// replica, or when one has.
const (
	ServicesReadyAll = "all"
	ServicesReadyAny = "any"
)

// serviceKeys are the keys a service may set: its own fleet, policies,
// stores and timeouts. The rest (listeners, TLS, the secret, the Redis
// server, logging, shutdown) belong to the process.
var serviceKeys = map[string]bool{
	"name": true, "path": true, "hosts": true, "default": true,
	"upstreams": true, "discovery": true, "balance": true, "hash_epsilon": true, "hash_min_load": true,
	"sessions": true, "health_check": true, "retries": true, "limits": true, "cache": true, "auth": true,
	"passthrough_paths": true, "tools": true, "resume": true, "keepalive": true, "dial_timeout": true,
	"sse_path": true, "sse_messages_path": true, "idempotency": true, "idempotency_lease": true,
	"idempotency_ttl": true, "task_store": true, "max_body_bytes": true, "max_event_bytes": true,
	"queue_timeout": true, "queue_size": true, "upstream_pool_size": true,
}

// serviceName is what a service may be called: it goes into metric
// labels, store keys and sealed IDs as it is.
var serviceName = regexp.MustCompile(`^[a-z0-9]([a-z0-9_-]{0,30}[a-z0-9])?$`)

// ResolveServices returns the services: one (named "") for a config
// without services:, else each entry over the top level. The error names
// the first bad entry; nothing is half-resolved.
func (c *Config) ResolveServices() ([]Service, error) {
	if len(c.Services) == 0 {
		return []Service{{Config: *c}}, nil
	}
	var out []Service
	for i, spec := range c.Services {
		s, err := c.resolveService(spec)
		if err != nil {
			return nil, fmt.Errorf("services[%d]: %w", i, err)
		}
		out = append(out, s)
	}
	if err := checkServices(out); err != nil {
		return nil, err
	}
	return out, nil
}

// resolveService applies one entry over a copy of the top level.
func (c *Config) resolveService(spec ServiceSpec) (Service, error) {
	n := spec.node
	var s Service
	rest := yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	sse := false
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		switch {
		case !serviceKeys[k.Value]:
			return s, fmt.Errorf("%s: not a key of a service (the listeners, TLS, the secret, the Redis server, logging and shutdown are the process's: set it at the top level)", k.Value)
		case k.Value == "name":
			if err := v.Decode(&s.Name); err != nil {
				return s, fmt.Errorf("name: %w", err)
			}
		case k.Value == "hosts":
			if err := v.Decode(&s.Hosts); err != nil {
				return s, fmt.Errorf("hosts: %w", err)
			}
		case k.Value == "default":
			if err := v.Decode(&s.Default); err != nil {
				return s, fmt.Errorf("default: %w", err)
			}
		default:
			sse = sse || k.Value == "sse_path"
			rest.Content = append(rest.Content, k, v)
		}
	}
	if !serviceName.MatchString(s.Name) {
		return s, fmt.Errorf("name: want 1 to 32 of a-z, 0-9, - and _, starting and ending with a letter or digit, got %q", s.Name)
	}
	sc := *c
	sc.Services = nil
	sc.Limits.Tools = maps.Clone(c.Limits.Tools)
	// The 2024-11-05 transport is a service's only where its entry says:
	// the top level's /sse would put every service on one path.
	sc.SSEPath, sc.SSEMessagesPath = "", ""
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	if err := enc.Encode(&rest); err != nil {
		return s, fmt.Errorf("%s: %w", s.Name, err)
	}
	dec := yaml.NewDecoder(&b)
	dec.KnownFields(true)
	if err := dec.Decode(&sc); err != nil {
		return s, fmt.Errorf("%s: %w", s.Name, err)
	}
	if sse && sc.SSEMessagesPath == "" {
		sc.SSEMessagesPath = strings.TrimSuffix(sc.SSEPath, "/sse") + "/messages"
	}
	if err := sc.Validate(); err != nil {
		return s, fmt.Errorf("%s: %w", s.Name, err)
	}
	for _, h := range s.Hosts {
		if err := checkServiceHost(h); err != nil {
			return s, fmt.Errorf("%s: hosts: %w", s.Name, err)
		}
	}
	s.Config = sc
	return s, nil
}

// checkServiceHost accepts a lower-case host name, or one whose first
// label is *.
func checkServiceHost(h string) error {
	name := strings.TrimPrefix(h, "*.")
	if name == "" || strings.ContainsAny(name, "*:/ ") || strings.ToLower(h) != h || strings.HasSuffix(h, ".") {
		return fmt.Errorf("%q: want a lower-case host name without port, or *. and one (one wildcard label at most)", h)
	}
	for _, l := range strings.Split(name, ".") {
		if l == "" || len(l) > 63 {
			return fmt.Errorf("%q: an empty or overlong label", h)
		}
	}
	return nil
}

// checkServices refuses two services of one name, two defaults, and two
// services some request could reach both of: hosts that meet (no hosts
// meets every host) and a path in common.
func checkServices(ss []Service) error {
	var errs []error
	defaults := 0
	for i, a := range ss {
		if a.Default {
			defaults++
		}
		for _, b := range ss[:i] {
			if a.Name == b.Name {
				errs = append(errs, fmt.Errorf("services: two services named %q", a.Name))
				continue
			}
			if h, ok := hostmatch.Meet(a.Hosts, b.Hosts); ok {
				if p, ok := pathsMeet(a.Config, b.Config); ok {
					if h != "" {
						h = "host " + h + " "
					}
					errs = append(errs, fmt.Errorf("services: %s and %s overlap: both answer %s%s (give them other paths or hosts)", b.Name, a.Name, h, p))
				}
			}
		}
	}
	if defaults > 1 {
		errs = append(errs, errors.New("services: more than one service says default: true"))
	}
	return errors.Join(errs...)
}

// pathsMeet says whether some path is both services': one each answers,
// or one under a passthrough prefix (ending in /) of the other.
func pathsMeet(a, b Config) (string, bool) {
	pa, pb := servicePaths(a), servicePaths(b)
	for _, x := range pa {
		for _, y := range pb {
			switch {
			case x == y:
				return "path " + x, true
			case strings.HasSuffix(x, "/") && strings.HasPrefix(y, x):
				return "path " + y, true
			case strings.HasSuffix(y, "/") && strings.HasPrefix(x, y):
				return "path " + x, true
			}
		}
	}
	return "", false
}

// servicePaths are the paths a service answers itself.
func servicePaths(c Config) []string {
	ps := []string{c.Path}
	if c.SSEPath != "" {
		ps = append(ps, c.SSEPath, c.SSEMessagesPath)
	}
	return append(ps, c.PassthroughPaths...)
}
