package config

import (
	"fmt"
	"net"
	"strings"

	"github.com/mcpfleet/mcpfleet/internal/hostmatch"
)

// The listeners' edge: which Host and Origin they take (allowed_hosts,
// allowed_origins, allow_any_host), and the admin listener's token
// (admin_token_file, admin_metrics_open, admin_pprof). docs/GATEWAY.md,
// "Security", says why.

// Edge holds the listeners' edge keys, inline in Config.
type Edge struct {
	// AllowedHosts pins the names a request's Host may give on the MCP
	// listener (exact, or *. and one label), and adds names to the admin
	// listener's own; none keeps the defaults.
	AllowedHosts []string `yaml:"allowed_hosts"`
	// AllowedOrigins may send requests besides pages of the request's own
	// host, on both listeners; ["*"] turns the Origin check off.
	AllowedOrigins []string `yaml:"allowed_origins"`
	// AdminMetricsOpen serves the admin listener's /metrics without its
	// token, for Prometheus.
	AdminMetricsOpen bool `yaml:"admin_metrics_open"`
	// AdminPprof serves Go's profiles at /debug/pprof/ on the admin
	// listener, behind its token always.
	AdminPprof bool `yaml:"admin_pprof"`
}

// AdminTokenRecipe is how to make an admin token file, for the errors
// that ask for one.
const AdminTokenRecipe = "head -c 32 /dev/urandom | base64 > admin.token && chmod 600 admin.token"

func (c *Config) validateEdge(bad func(string, string, ...any)) {
	if _, anyOrigin, err := hostmatch.ParseOrigins(c.AllowedOrigins); err != nil {
		bad("allowed_origins", "%v", err)
	} else if anyOrigin && len(c.AllowedOrigins) > 1 {
		bad("allowed_origins", `"*" turns the check off: give it alone`)
	}
	for _, h := range c.AllowedHosts {
		if !hostPattern(h) {
			bad("allowed_hosts", "%q: want a lower-case host name without a port, or *. and one (*.example.com)", h)
		}
	}
	if c.AllowAnyHost && len(c.AllowedHosts) > 0 {
		bad("allow_any_host", "takes every Host, and allowed_hosts pins them: give one or the other")
	}
	if c.Admin == "" {
		if c.AdminPprof {
			bad("admin_pprof", "has no effect without admin (the admin listener's address)")
		}
		return
	}
	if c.AdminTokenFile == "" {
		switch {
		case !loopbackAddr(c.Admin):
			bad("admin", "%s is not a loopback address: a listener that drains replicas and shows the fleet to the network needs admin_token_file (--admin-token-file), a file of one line, the token; make one with `%s`", c.Admin, AdminTokenRecipe)
		case c.AdminPprof:
			bad("admin_pprof", "needs admin_token_file: the profiles show the process's memory and are never served without the token")
		case !c.AdminMetricsOpen:
			bad("admin_metrics_open", "false needs admin_token_file, the token /metrics would then require")
		}
	}
}

// servicesWithinAllowedHosts refuses a service whose hosts allowed_hosts
// does not take: every request for it would be refused.
func servicesWithinAllowedHosts(list []Service, allowed []string) error {
	if len(allowed) == 0 {
		return nil
	}
	for _, svc := range list {
		for _, h := range svc.Hosts {
			if !hostmatch.Takes(allowed, h) {
				return fmt.Errorf("services: %s: host %s is not in allowed_hosts, which would refuse every request for it", svc.Name, h)
			}
		}
	}
	return nil
}

// hostPattern says whether h is a host name as hostmatch.Match takes it:
// canonical (lower case, no trailing dot, no port), or *. and one.
func hostPattern(h string) bool {
	name := strings.TrimPrefix(h, "*.")
	host, port, ok := hostmatch.ParseHost(name)
	return ok && port == 0 && host == name && !strings.Contains(name, ":")
}

// loopbackAddr says whether a listener's host:port is on loopback only:
// localhost or a loopback IP. No host, 0.0.0.0, [::] and any other name
// (which may resolve anywhere) are not.
func loopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	h, _, ok := hostmatch.ParseHost(host)
	if strings.Contains(host, ":") {
		h, _, ok = hostmatch.ParseHost("[" + host + "]")
	}
	return ok && hostmatch.IsLoopback(h)
}
