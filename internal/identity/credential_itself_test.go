package identity

import (
	"net/netip"
	"testing"
)

func TestFromCredentialItselfIgnoresClaims(t *testing.T) {
	alice := makeJWT(t, map[string]any{"iss": "https://idp", "sub": "alice"}, "real-signature")
	forged := makeJWT(t, map[string]any{"iss": "https://idp", "sub": "alice"}, "forged")
	// Routing reads the (unverified) claims: both tokens route alike.
	a, _ := FromCredential("Bearer "+alice, "")
	f, _ := FromCredential("Bearer "+forged, "")
	if a != f || a.Kind() != KindJWT {
		t.Fatalf("routing identities differ or are not JWT (%v, %v)", a.Kind(), f.Kind())
	}
	// Limits and cache entries go by the token itself: a forged token naming
	// alice is not alice.
	a, ok1 := FromCredentialItself("Bearer "+alice, "")
	f, ok2 := FromCredentialItself("Bearer "+forged, "")
	if !ok1 || !ok2 || a == f || a.Kind() != KindToken {
		t.Fatalf("FromCredentialItself: forged token shares alice's identity (kinds %v, %v)", a.Kind(), f.Kind())
	}
	// The same token spelled two ways is still one identity.
	b, _ := FromCredentialItself("bearer   "+alice+" ", "")
	p, _ := FromCredentialItself("", alice)
	if a != b || a != p {
		t.Fatal("normalisation lost: one token, several identities")
	}
}

func TestResolveCredentialFallsBackToAddress(t *testing.T) {
	id := ResolveCredential("", "", "192.0.2.7:4000", nil, nil)
	if id != FromAddress(netip.MustParseAddr("192.0.2.7")) {
		t.Fatal("no credential: want the client address")
	}
}
