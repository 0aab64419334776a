package upstream

import (
	"context"
	"errors"
	"net/netip"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fakeDNS answers lookups from a settable record set.
type fakeDNS struct {
	mu    sync.Mutex // guards addrs, err and hosts
	addrs []netip.Addr
	err   error
	hosts []string
}

func (d *fakeDNS) set(err error, addrs ...string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.err, d.addrs = err, nil
	for _, a := range addrs {
		d.addrs = append(d.addrs, netip.MustParseAddr(a))
	}
}

func (d *fakeDNS) lookup(_ context.Context, host string) ([]netip.Addr, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.hosts = append(d.hosts, host)
	return append([]netip.Addr(nil), d.addrs...), d.err
}

func newDiscoverer(t *testing.T, dns *fakeDNS, o DiscoverOptions) *Discoverer {
	t.Helper()
	o.Name, o.Lookup = "mcp.default.svc.cluster.local", dns.lookup
	d, err := NewDiscoverer(&o)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestResolveBuildsSortedSpecs(t *testing.T) {
	dns := &fakeDNS{}
	dns.set(nil, "10.0.0.2", "fd00::1", "10.0.0.10", "::ffff:10.0.0.2", "fe80::1%eth0", "10.0.0.1")
	d := newDiscoverer(t, dns, DiscoverOptions{Port: 8080})
	specs, err := d.Resolve(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := []Spec{
		{Name: "10.0.0.1:8080", URL: "http://10.0.0.1:8080/mcp", SSEURL: "http://10.0.0.1:8080/sse"},
		{Name: "10.0.0.2:8080", URL: "http://10.0.0.2:8080/mcp", SSEURL: "http://10.0.0.2:8080/sse"},
		{Name: "10.0.0.10:8080", URL: "http://10.0.0.10:8080/mcp", SSEURL: "http://10.0.0.10:8080/sse"},
		{Name: "[fd00::1]:8080", URL: "http://[fd00::1]:8080/mcp", SSEURL: "http://[fd00::1]:8080/sse"},
		{Name: "[fe80::1]:8080", URL: "http://[fe80::1]:8080/mcp", SSEURL: "http://[fe80::1]:8080/sse"},
	}
	if diff := cmp.Diff(want, specs); diff != "" {
		t.Errorf("specs (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"mcp.default.svc.cluster.local"}, dns.hosts); diff != "" {
		t.Errorf("looked up (-want +got):\n%s", diff)
	}

	d = newDiscoverer(t, dns, DiscoverOptions{Port: 443, Scheme: "https", Path: "/v1/mcp", SSEPath: "/v1/sse"})
	specs, err = d.Resolve(t.Context())
	if err != nil || specs[0].URL != "https://10.0.0.1:443/v1/mcp" || specs[0].SSEURL != "https://10.0.0.1:443/v1/sse" {
		t.Errorf("Resolve with scheme and path = %v, %v", specs, err)
	}
}

func TestRefreshFollowsRecords(t *testing.T) {
	dns := &fakeDNS{}
	dns.set(nil, "10.0.0.1", "10.0.0.2")
	d := newDiscoverer(t, dns, DiscoverOptions{Port: 8080})
	specs, err := d.Resolve(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	f := newFleet(t, specs...)
	kept := f.Snapshot().Lookup("10.0.0.2:8080")
	kept.Acquire()

	steps := []struct {
		name    string
		err     error
		addrs   []string
		want    []string
		change  Change
		wantErr error
	}{
		{"scale up", nil, []string{"10.0.0.3", "10.0.0.2", "10.0.0.1"},
			[]string{"10.0.0.1:8080", "10.0.0.2:8080", "10.0.0.3:8080"},
			Change{Added: []string{"10.0.0.3:8080"}}, nil},
		{"lookup error keeps the fleet", errors.New("SERVFAIL"), nil,
			[]string{"10.0.0.1:8080", "10.0.0.2:8080", "10.0.0.3:8080"}, Change{}, nil},
		{"empty answer keeps the fleet", nil, nil,
			[]string{"10.0.0.1:8080", "10.0.0.2:8080", "10.0.0.3:8080"}, Change{}, ErrNoAddresses},
		{"scale down", nil, []string{"10.0.0.2"},
			[]string{"10.0.0.2:8080"},
			Change{Removed: []string{"10.0.0.1:8080", "10.0.0.3:8080"}}, nil},
	}
	for _, st := range steps {
		dns.set(st.err, st.addrs...)
		ch, err := d.Refresh(t.Context(), f)
		switch {
		case st.err != nil && err == nil:
			t.Errorf("%s: Refresh = nil error", st.name)
		case st.wantErr != nil && !errors.Is(err, st.wantErr):
			t.Errorf("%s: Refresh = %v, want %v", st.name, err, st.wantErr)
		case st.err == nil && st.wantErr == nil && err != nil:
			t.Errorf("%s: Refresh = %v", st.name, err)
		}
		if diff := cmp.Diff(st.change, ch); diff != "" {
			t.Errorf("%s: Change (-want +got):\n%s", st.name, diff)
		}
		if diff := cmp.Diff(st.want, names(f.Snapshot())); diff != "" {
			t.Errorf("%s: replicas (-want +got):\n%s", st.name, diff)
		}
	}
	if f.Snapshot().Lookup("10.0.0.2:8080") != kept || kept.InFlight() != 1 {
		t.Error("the replica at a still-listed address was not kept")
	}
}

// TestRunRefreshesEveryInterval uses synctest's fake clock: no real waits.
func TestRunRefreshesEveryInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dns := &fakeDNS{}
		dns.set(nil, "10.0.0.1")
		d := newDiscoverer(t, dns, DiscoverOptions{Port: 80})
		f := newFleet(t, Spec{Name: "static", URL: "http://h:1/mcp"})
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { defer close(done); d.Run(ctx, f) }()

		synctest.Wait() // the first refresh happens at once
		if diff := cmp.Diff([]string{"10.0.0.1:80"}, names(f.Snapshot())); diff != "" {
			t.Errorf("after start (-want +got):\n%s", diff)
		}
		dns.set(nil, "10.0.0.1", "10.0.0.2")
		time.Sleep(DefaultDiscoverInterval - time.Second)
		synctest.Wait()
		if f.Snapshot().Len() != 1 {
			t.Error("refreshed before the interval")
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if diff := cmp.Diff([]string{"10.0.0.1:80", "10.0.0.2:80"}, names(f.Snapshot())); diff != "" {
			t.Errorf("after one interval (-want +got):\n%s", diff)
		}
		dns.set(errors.New("timeout"))
		time.Sleep(DefaultDiscoverInterval)
		synctest.Wait()
		if f.Snapshot().Len() != 2 {
			t.Error("a failed lookup changed the fleet")
		}
		cancel()
		<-done
	})
}

func TestDiscoverOptionsValidate(t *testing.T) {
	tests := []struct {
		name string
		o    DiscoverOptions
		ok   bool
	}{
		{"minimal", DiscoverOptions{Name: "mcp", Port: 8080}, true},
		{"no name", DiscoverOptions{Port: 8080}, false},
		{"no port", DiscoverOptions{Name: "mcp"}, false},
		{"port too big", DiscoverOptions{Name: "mcp", Port: 70000}, false},
		{"bad scheme", DiscoverOptions{Name: "mcp", Port: 1, Scheme: "ftp"}, false},
		{"relative path", DiscoverOptions{Name: "mcp", Port: 1, Path: "mcp"}, false},
		{"negative interval", DiscoverOptions{Name: "mcp", Port: 1, Interval: -time.Second}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := NewDiscoverer(&tt.o); (err == nil) != tt.ok {
				t.Errorf("NewDiscoverer = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}
