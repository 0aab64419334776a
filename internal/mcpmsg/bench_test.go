package mcpmsg

import (
	"strings"
	"testing"
)

// BenchmarkParse classifies a typical tools/call with a few hundred bytes of
// arguments: the per-request cost of routing on the body.
func BenchmarkParse(b *testing.B) {
	body := []byte(`{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"search","arguments":{"query":"` +
		strings.Repeat("lorem ipsum ", 30) + `","limit":10,"filters":{"lang":["en","fr"],"since":"2026-01-01"}},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","progressToken":"p-1"}}}`)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(body); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRequestDigest digests the same call: the cost every call that
// takes an idempotency record (a legacy tools/call, a keyed one) pays.
func BenchmarkRequestDigest(b *testing.B) {
	body := []byte(`{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"search","arguments":{"query":"` +
		strings.Repeat("lorem ipsum ", 30) + `","limit":10,"filters":{"lang":["en","fr"],"since":"2026-01-01"}},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","progressToken":"p-1"}}}`)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if len(RequestDigest(body)) != 64 {
			b.Fatal("not a hex SHA-256")
		}
	}
}
