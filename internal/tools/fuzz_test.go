package tools

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzCanonical feeds a replica's tool definition, bytes the gateway does
// not control, to the digest: whatever it is, a definition that decodes
// has one canonical form, re-encoding that form gives the same bytes, and
// the digest does not depend on the spelling.
func FuzzCanonical(f *testing.F) {
	f.Add([]byte(echo))
	f.Add([]byte(`{"name":"a","inputSchema":{"b":1e3,"a":[1,2.50,{"z":null}]},"annotations":{}}`))
	f.Add([]byte(`{"name":"\u00e9","description":"x\ny","outputSchema":true}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var d Definition
		if json.Unmarshal(b, &d) != nil {
			return
		}
		c, err := d.Canonical()
		if err != nil {
			return // a member that is not one JSON value
		}
		if !json.Valid(c) {
			t.Fatalf("canonical form %q is not JSON", c)
		}
		var again Definition
		if err := json.Unmarshal(c, &again); err != nil {
			t.Fatalf("canonical form %q does not decode: %v", c, err)
		}
		c2, err := again.Canonical()
		if err != nil || !bytes.Equal(c, c2) {
			t.Fatalf("canonical form not stable: %q then %q (%v)", c, c2, err)
		}
	})
}
