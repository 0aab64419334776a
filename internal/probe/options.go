// Package probe proves what a load balancer in front of a fleet of MCP
// servers does with affinity, rather than assuming it. It calls the whoami
// tool, which answers with the replica's name, as many synthetic identities,
// each several times, and reports how often an identity stayed on one
// replica, how identities spread over the replicas, and how many moved
// since an earlier run.
//
// The requests are 2026-07-28 stateless tools/call POSTs (SEP-2575) made
// with net/http, so they pass through any balancer: nginx, HAProxy or
// mcpfleet itself.
package probe

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// Defaults and bounds of a run.
const (
	// DefaultIdentities is the number of identities when Options.Identities is zero.
	DefaultIdentities = 100
	// DefaultRequests is the requests per identity when Options.Requests is zero.
	DefaultRequests = 10
	// DefaultConcurrency is the requests in flight when Options.Concurrency is zero.
	DefaultConcurrency = 8
	// DefaultTimeout bounds each request when Options.Timeout is zero.
	DefaultTimeout = 10 * time.Second
	// DefaultTokenPrefix starts every identity's bearer token when
	// Options.TokenPrefix is empty.
	DefaultTokenPrefix = "mcpfleet-probe-"

	// MaxIdentities bounds Options.Identities.
	MaxIdentities = 100_000
	// MaxRequests bounds Options.Requests.
	MaxRequests = 10_000
	// MaxTotal bounds the requests of a run, identities times requests.
	MaxTotal = 1_000_000
	// MaxConcurrency bounds Options.Concurrency.
	MaxConcurrency = 1024
	// MaxTimeout bounds Options.Timeout.
	MaxTimeout = 10 * time.Minute

	// ProgressInterval is the least time between two calls of
	// Options.Progress.
	ProgressInterval = 200 * time.Millisecond
)

// Options configures a run. Only URL is required.
type Options struct {
	// URL is the MCP endpoint behind the balancer, such as
	// http://127.0.0.1:8080/mcp. It must be http or https.
	URL string

	// Identities is the number of synthetic identities, at most
	// MaxIdentities. Zero means DefaultIdentities.
	Identities int

	// Requests is the number of whoami calls each identity makes, at most
	// MaxRequests. Zero means DefaultRequests. Identities times Requests
	// must not exceed MaxTotal.
	Requests int

	// Concurrency is the number of requests in flight, at most
	// MaxConcurrency. Zero means DefaultConcurrency.
	Concurrency int

	// TokenPrefix starts the bearer token of every identity: identity i
	// sends "Authorization: Bearer <TokenPrefix><i>". It must be printable
	// ASCII without spaces. Empty means DefaultTokenPrefix.
	TokenPrefix string

	// Timeout bounds each request, at most MaxTimeout. Zero means
	// DefaultTimeout.
	Timeout time.Duration

	// Host, when not empty, is the Host of every request instead of the
	// URL's: the service of a gateway (or the virtual host of a balancer)
	// chosen by host name, reached at an address. A host name, with a
	// port or without.
	Host string

	// Client sends the requests. Nil means a client of the run's own, with
	// an idle connection for each request in flight, closed at the end.
	Client *http.Client

	// Progress, if not nil, is called with the requests done and the total
	// at most every ProgressInterval while the run lasts, and once more at
	// its end. Calls come from one goroutine at a time.
	Progress func(done, total int)
}

// Validate reports whether o is usable. A nil o is not: URL is required.
func (o *Options) Validate() error {
	if o == nil {
		return errors.New("no options: a URL is required")
	}
	if err := validateURL(o.URL); err != nil {
		return err
	}
	switch {
	case o.Identities < 0 || o.Identities > MaxIdentities:
		return fmt.Errorf("identities %d: must be between 1 and %d", o.Identities, MaxIdentities)
	case o.Requests < 0 || o.Requests > MaxRequests:
		return fmt.Errorf("requests %d: must be between 1 and %d", o.Requests, MaxRequests)
	case o.Concurrency < 0 || o.Concurrency > MaxConcurrency:
		return fmt.Errorf("concurrency %d: must be between 1 and %d", o.Concurrency, MaxConcurrency)
	case o.Timeout < 0 || o.Timeout > MaxTimeout:
		return fmt.Errorf("timeout %v: must be positive and at most %v", o.Timeout, MaxTimeout)
	}
	d := o.withDefaults()
	if total := d.Identities * d.Requests; total > MaxTotal {
		return fmt.Errorf("identities x requests = %d: must be at most %d", total, MaxTotal)
	}
	if o.Host != "" {
		if u, err := url.Parse("http://" + o.Host); err != nil || u.Host != o.Host || u.User != nil {
			return fmt.Errorf("host %q: want a host name, with a port or without", o.Host)
		}
	}
	for _, c := range []byte(o.TokenPrefix) {
		if c <= ' ' || c > '~' {
			return fmt.Errorf("token prefix %q: must be printable ASCII without spaces", o.TokenPrefix)
		}
	}
	return nil
}

// validateURL checks that u is an absolute http or https URL.
func validateURL(u string) error {
	if u == "" {
		return errors.New("url: required")
	}
	p, err := url.Parse(u)
	if err != nil {
		return fmt.Errorf("url: %w", err)
	}
	if p.Scheme != "http" && p.Scheme != "https" {
		return fmt.Errorf("url %q: scheme must be http or https", u)
	}
	if p.Host == "" {
		return fmt.Errorf("url %q: no host", u)
	}
	return nil
}

// withDefaults returns a copy of o with zero fields set to their defaults.
func (o *Options) withDefaults() Options {
	d := *o
	if d.Identities == 0 {
		d.Identities = DefaultIdentities
	}
	if d.Requests == 0 {
		d.Requests = DefaultRequests
	}
	if d.Concurrency == 0 {
		d.Concurrency = DefaultConcurrency
	}
	if d.TokenPrefix == "" {
		d.TokenPrefix = DefaultTokenPrefix
	}
	if d.Timeout == 0 {
		d.Timeout = DefaultTimeout
	}
	return d
}
