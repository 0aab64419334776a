package identity

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"testing"
)

// TestIdentityNeverPrintsItsCredential formats identities every way a log
// line might, and checks that no credential, claim or address gets out.
func TestIdentityNeverPrintsItsCredential(t *testing.T) {
	const (
		secret = "sk-SECRET-7f3a9c"
		issuer = "https://issuer.example"
		sub    = "subject-31337"
	)
	jwt := makeJWT(t, map[string]string{"iss": issuer, "sub": sub}, "sig")
	tests := []struct {
		name    string
		id      Identity
		secrets []string
	}{
		{"bearer", mustCredential(t, "Bearer "+secret, ""), []string{secret}},
		{"private token", mustCredential(t, "", secret), []string{secret}},
		{"basic", mustCredential(t, "Basic "+secret, ""), []string{secret}},
		{"jwt", mustCredential(t, "Bearer "+jwt, ""), []string{issuer, sub, "31337"}},
		{"address", FromAddress(netip.MustParseAddr("198.51.100.77")), []string{"198.51.100.77", "100.77"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := tt.id
			var out strings.Builder
			fmt.Fprintf(&out, "%v %+v %#v %s %q %x %X %d %T %10.3s|", id, id, id, id, id, id, id, id, id, id)
			fmt.Fprintf(&out, "%v %+v %#v %s|", &id, &id, &id, &id)
			fmt.Fprint(&out, id, []Identity{id}, map[Identity]int{id: 1}, struct{ ID Identity }{id})
			fmt.Fprintf(&out, "%+v %#v|", struct{ ID Identity }{id}, struct{ ID Identity }{id})
			out.WriteString(id.String() + id.GoString())
			var logs bytes.Buffer
			for _, h := range []slog.Handler{slog.NewTextHandler(&logs, nil), slog.NewJSONHandler(&logs, nil)} {
				slog.New(h).Info("request", "id", id, "ptr", &id, slog.Group("g", "id", id))
			}
			out.Write(logs.Bytes())
			if b, err := json.Marshal(struct{ ID Identity }{id}); err == nil {
				out.Write(b)
			}
			for _, s := range tt.secrets {
				if strings.Contains(out.String(), s) {
					t.Errorf("%q appears in the output:\n%s", s, out.String())
				}
			}
			if !strings.Contains(out.String(), redacted) {
				t.Errorf("the output does not say %q:\n%s", redacted, out.String())
			}
		})
	}
}
