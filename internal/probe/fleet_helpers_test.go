package probe

import (
	"crypto/sha256"
	"encoding/binary"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"sync"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/testserver"
)

// Small runs keep the tests fast: 50 identities, 5 requests each.
const (
	testIdentities = 50
	testRequests   = 5
)

// startFleet starts a real test server for each name on an httptest server
// on loopback, and returns their base URLs by name.
func startFleet(t *testing.T, names ...string) map[string]*url.URL {
	t.Helper()
	fleet := make(map[string]*url.URL, len(names))
	for _, name := range names {
		s, err := testserver.New(name, &testserver.Options{Era: testserver.EraBoth})
		if err != nil {
			t.Fatalf("testserver.New(%q): %v", name, err)
		}
		hs := httptest.NewServer(s.Handler())
		t.Cleanup(hs.Close)
		u, err := url.Parse(hs.URL)
		if err != nil {
			t.Fatal(err)
		}
		fleet[name] = u
	}
	return fleet
}

// balancer is a small reverse proxy in front of a fleet that picks a
// replica for each request with its pick function.
type balancer struct {
	mu    sync.Mutex // guards fleet and rng
	fleet map[string]*url.URL
	rng   *rand.Rand
	pick  func(b *balancer, r *http.Request) *url.URL // called with mu held
}

// startBalancer serves b on loopback and returns its /mcp endpoint.
func startBalancer(t *testing.T, b *balancer) string {
	t.Helper()
	rp := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		b.mu.Lock()
		target := b.pick(b, pr.In)
		b.mu.Unlock()
		pr.SetURL(target)
	}}
	hs := httptest.NewServer(rp)
	t.Cleanup(hs.Close)
	return hs.URL + "/mcp"
}

// remove takes the replica called name out of b's fleet.
func (b *balancer) remove(name string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.fleet, name)
}

// hashingPick picks by rendezvous hashing of the Authorization header: the
// replica whose name hashes highest with the credential. Like a consistent
// hash, removing a replica moves only the identities it had.
func hashingPick(b *balancer, r *http.Request) *url.URL {
	var best string
	var top uint64
	for name := range b.fleet {
		sum := sha256.Sum256([]byte(name + "\x00" + r.Header.Get("Authorization")))
		if s := binary.BigEndian.Uint64(sum[:8]); best == "" || s > top {
			best, top = name, s
		}
	}
	return b.fleet[best]
}

// randomPick picks a replica at random, ignoring who is asking.
func randomPick(b *balancer, _ *http.Request) *url.URL {
	names := make([]string, 0, len(b.fleet))
	for name := range b.fleet {
		names = append(names, name)
	}
	slices.Sort(names)
	return b.fleet[names[b.rng.IntN(len(names))]]
}

// newBalancer returns a balancer over fleet that picks with pick; its
// random source is seeded so that runs repeat.
func newBalancer(fleet map[string]*url.URL, pick func(*balancer, *http.Request) *url.URL) *balancer {
	return &balancer{fleet: fleet, pick: pick, rng: rand.New(rand.NewPCG(1, 2))}
}
