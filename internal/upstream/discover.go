package upstream

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Defaults of DiscoverOptions.
const (
	DefaultDiscoverInterval = 10 * time.Second
	DefaultDiscoverScheme   = "http"
	DefaultDiscoverPath     = "/mcp"
)

// ErrNoAddresses is returned by Resolve and Refresh when the name resolved
// to no address; Refresh then leaves the fleet as it was.
var ErrNoAddresses = errors.New("name resolved to no address")

// DiscoverOptions configures DNS discovery of replicas: one replica per A or
// AAAA record of Name, at scheme://ADDR:Port/Path.
type DiscoverOptions struct {
	// Name is the DNS name to resolve, e.g. a headless Kubernetes service
	// "mcp.default.svc.cluster.local". Required.
	Name string
	// Port is the replicas' port. Required.
	Port int
	// Scheme is "http" or "https"; "" means "http".
	Scheme string
	// Path is the replicas' MCP endpoint path; "" means "/mcp".
	Path string
	// SSEPath is the path of the replicas' 2024-11-05 SSE endpoint; ""
	// means "/sse".
	SSEPath string
	// Interval is the time between lookups; 0 means 10s.
	Interval time.Duration
	// Lookup resolves a host to all its addresses; nil means
	// net.DefaultResolver.LookupNetIP(ctx, "ip", host).
	Lookup func(ctx context.Context, host string) ([]netip.Addr, error)
	// Logger receives membership changes (Info) and failed lookups (Warn);
	// nil discards.
	Logger *slog.Logger
}

// Validate reports options that cannot work.
func (o *DiscoverOptions) Validate() error {
	switch {
	case o.Name == "":
		return fmt.Errorf("dns discovery: no name")
	case o.Port < 1 || o.Port > 65535:
		return fmt.Errorf("dns discovery port %d: must be 1 to 65535", o.Port)
	case o.Scheme != "" && o.Scheme != "http" && o.Scheme != "https":
		return fmt.Errorf("dns discovery scheme %q: must be http or https", o.Scheme)
	case o.Path != "" && !strings.HasPrefix(o.Path, "/"):
		return fmt.Errorf("dns discovery path %q: must start with /", o.Path)
	case strings.ContainsAny(o.Path, "?#"):
		return fmt.Errorf("dns discovery path %q: no query or fragment allowed", o.Path)
	case o.SSEPath != "" && (!strings.HasPrefix(o.SSEPath, "/") || strings.ContainsAny(o.SSEPath, "?#")):
		return fmt.Errorf("dns discovery sse path %q: must start with / and have no query or fragment", o.SSEPath)
	case o.Interval < 0:
		return fmt.Errorf("dns discovery interval %v: must not be negative", o.Interval)
	}
	return nil
}

// Discoverer keeps a fleet's membership equal to the addresses a DNS name
// resolves to. It owns the membership of the fleet it refreshes: a config
// reload calling Update on the same fleet would be undone at the next
// refresh.
type Discoverer struct {
	o      DiscoverOptions
	lookup func(ctx context.Context, host string) ([]netip.Addr, error)
	log    *slog.Logger
}

// NewDiscoverer returns a discoverer; opts must name at least Name and Port.
func NewDiscoverer(opts *DiscoverOptions) (*Discoverer, error) {
	if opts == nil {
		return nil, fmt.Errorf("dns discovery: no options")
	}
	o := *opts
	if err := o.Validate(); err != nil {
		return nil, err
	}
	o.Scheme = cmp.Or(o.Scheme, DefaultDiscoverScheme)
	o.Path = cmp.Or(o.Path, DefaultDiscoverPath)
	o.SSEPath = cmp.Or(o.SSEPath, DefaultSSEPath)
	o.Interval = cmp.Or(o.Interval, DefaultDiscoverInterval)
	d := &Discoverer{o: o, lookup: o.Lookup, log: o.Logger}
	if d.lookup == nil {
		d.lookup = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	if d.log == nil {
		d.log = slog.New(slog.DiscardHandler)
	}
	return d, nil
}

// Resolve looks Name up and returns one Spec per distinct address, sorted
// by address so equal answers give equal fleets. A replica's name is
// "ADDR:PORT", with IPv6 addresses bracketed. IPv4-mapped IPv6 addresses
// count as IPv4; zones are dropped. Use it to build the first fleet.
func (d *Discoverer) Resolve(ctx context.Context) ([]Spec, error) {
	addrs, err := d.lookup(ctx, d.o.Name)
	if err != nil {
		return nil, fmt.Errorf("resolving %q: %w", d.o.Name, err)
	}
	norm := make([]netip.Addr, 0, len(addrs))
	for _, a := range addrs {
		if a.IsValid() {
			norm = append(norm, a.Unmap().WithZone(""))
		}
	}
	if len(norm) == 0 {
		return nil, fmt.Errorf("resolving %q: %w", d.o.Name, ErrNoAddresses)
	}
	slices.SortFunc(norm, netip.Addr.Compare)
	norm = slices.Compact(norm)
	specs := make([]Spec, len(norm))
	for i, a := range norm {
		host := netip.AddrPortFrom(a, uint16(d.o.Port)).String()
		u := url.URL{Scheme: d.o.Scheme, Host: host, Path: d.o.Path}
		sse := url.URL{Scheme: d.o.Scheme, Host: host, Path: d.o.SSEPath}
		specs[i] = Spec{Name: host, URL: u.String(), SSEURL: sse.String()}
	}
	return specs, nil
}

// Refresh resolves Name once and updates f to match (see Update: replicas
// at an address still listed keep their state). On a lookup error or an
// empty answer it returns the error and leaves f as it was: a DNS hiccup
// must not empty the fleet.
func (d *Discoverer) Refresh(ctx context.Context, f *Fleet) (Change, error) {
	specs, err := d.Resolve(ctx)
	if err != nil {
		return Change{}, err
	}
	return f.Update(specs)
}

// Run refreshes f at once and then every Interval until ctx is done,
// logging changes and failures; each lookup is bounded by Interval.
func (d *Discoverer) Run(ctx context.Context, f *Fleet) {
	t := time.NewTicker(d.o.Interval)
	defer t.Stop()
	for {
		d.refreshLogged(ctx, f)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// refreshLogged refreshes f within one Interval and logs the outcome; a
// failure caused by ctx ending is shutdown, not news.
func (d *Discoverer) refreshLogged(ctx context.Context, f *Fleet) {
	lctx, cancel := context.WithTimeout(ctx, d.o.Interval)
	defer cancel()
	ch, err := d.Refresh(lctx, f)
	switch {
	case err != nil && ctx.Err() == nil:
		d.log.Warn("dns discovery failed, keeping the fleet", "name", d.o.Name, "error", err)
	case err == nil && !ch.Empty():
		d.log.Info("dns discovery changed the fleet", "name", d.o.Name,
			"added", ch.Added, "removed", ch.Removed, "replicas", f.Snapshot().Len())
	}
}
