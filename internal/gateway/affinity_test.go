package gateway

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"regexp"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/identity"
)

var replicaName = regexp.MustCompile(`replica-[a-z]`)

// whoamiAs calls whoami through the gateway with the given headers and
// returns the replica that answered.
func whoamiAs(t *testing.T, r *raw, hdr map[string]string) string {
	t.Helper()
	resp := r.post(context.Background(), 1, "tools/call", map[string]any{"name": "whoami", "arguments": map[string]any{}}, hdr)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	name := replicaName.FindString(string(b))
	if resp.StatusCode != 200 || name == "" {
		t.Fatalf("whoami: %d %s", resp.StatusCode, b)
	}
	return name
}

func jwt(iss, sub string, iat int) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"HS256"}`)) + "." +
		enc([]byte(fmt.Sprintf(`{"iss":%q,"sub":%q,"iat":%d}`, iss, sub, iat))) + "." + enc([]byte(fmt.Sprint("sig", iat)))
}

// TestHashAffinity: under the default policy every identity keeps one
// replica, identities spread over all three, a refreshed JWT (same iss and
// sub) keeps its replica, and callers without a credential fall back to
// their address.
func TestHashAffinity(t *testing.T) {
	f := startFleet(t, 3, nil)
	r := newRaw(t, f.url(), "2026-07-28")
	used := map[string]int{}
	for i := range 30 {
		bearer := map[string]string{"Authorization": fmt.Sprintf("Bearer token-%d", i)}
		home := whoamiAs(t, r, bearer)
		used[home]++
		for range 4 {
			if got := whoamiAs(t, r, bearer); got != home {
				t.Fatalf("identity %d moved from %s to %s", i, home, got)
			}
		}
		// The same token spelled otherwise, or as PRIVATE-TOKEN, is the same caller.
		if got := whoamiAs(t, r, map[string]string{"Authorization": fmt.Sprintf("bearer   token-%d ", i)}); got != home {
			t.Errorf("identity %d with another spelling went to %s, not %s", i, got, home)
		}
		if got := whoamiAs(t, r, map[string]string{"Private-Token": fmt.Sprintf("token-%d", i)}); got != home {
			t.Errorf("identity %d as PRIVATE-TOKEN went to %s, not %s", i, got, home)
		}
	}
	if len(used) != 3 {
		t.Errorf("30 identities used %v, want all three replicas", used)
	}
	for i := range 10 {
		sub := fmt.Sprint("user-", i)
		before := whoamiAs(t, r, map[string]string{"Authorization": "Bearer " + jwt("https://issuer", sub, 1000)})
		after := whoamiAs(t, r, map[string]string{"Authorization": "Bearer " + jwt("https://issuer", sub, 5000)})
		if before != after {
			t.Errorf("%s moved from %s to %s on a token refresh", sub, before, after)
		}
	}
	anon := whoamiAs(t, r, nil)
	for range 5 {
		if got := whoamiAs(t, r, nil); got != anon {
			t.Fatalf("an anonymous caller moved from %s to %s", anon, got)
		}
	}
}

// TestTrustedProxyHeader: X-Forwarded-For names the client only when the
// peer is a trusted proxy.
func TestTrustedProxyHeader(t *testing.T) {
	trusted, err := identity.NewProxies([]string{"127.0.0.0/8"}, "X-Forwarded-For")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		proxies *identity.Proxies
		spread  bool
	}{
		{"trusted", trusted, true},
		{"untrusted", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := startFleet(t, 3, &Options{Proxies: tc.proxies})
			r := newRaw(t, f.url(), "2026-07-28")
			used := map[string]bool{}
			for i := range 30 {
				used[whoamiAs(t, r, map[string]string{"X-Forwarded-For": fmt.Sprintf("198.51.100.%d", i+1)})] = true
			}
			if got := len(used) > 1; got != tc.spread {
				t.Errorf("30 forwarded addresses used %d replicas; spread=%v, want %v", len(used), got, tc.spread)
			}
		})
	}
}
