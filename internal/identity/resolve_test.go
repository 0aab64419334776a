package identity

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestResolve(t *testing.T) {
	p := testProxies(t, "X-Forwarded-For")
	xff := []string{"198.51.100.7, 10.0.0.2"}
	tests := []struct {
		name       string
		auth, priv string
		remote     string
		values     []string
		p          *Proxies
		want       string
	}{
		{"credential wins", "Bearer abc", "", "10.0.0.1:1", xff, p, "token bearer abc"},
		{"private token wins", "", "abc", "10.0.0.1:1", xff, p, "token bearer abc"},
		{"client address", "", "", "10.0.0.1:1", xff, p, "address 198.51.100.7"},
		{"bare scheme falls back", "Bearer", "", "10.0.0.1:1", xff, p, "address 198.51.100.7"},
		{"nil proxies", "", "", "10.0.0.1:1", xff, nil, "address 10.0.0.1"},
		{"untrusted peer", "", "", "203.0.113.9:1", xff, p, "address 203.0.113.9"},
		{"unparseable peer", "", "", "pipe", xff, p, "address 0.0.0.0"},
		{"empty peer", "", "", "", nil, nil, "address 0.0.0.0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := Resolve(tt.auth, tt.priv, tt.remote, tt.values, tt.p)
			if diff := cmp.Diff(tt.want, describe(id)); diff != "" {
				t.Errorf("Resolve (-want +got):\n%s", diff)
			}
		})
	}
}

func TestKindString(t *testing.T) {
	got := []string{Kind(0).String(), KindJWT.String(), KindToken.String(), KindAddress.String(), Kind(9).String()}
	if diff := cmp.Diff([]string{"none", "jwt", "token", "address", "none"}, got); diff != "" {
		t.Errorf("Kind.String (-want +got):\n%s", diff)
	}
}
