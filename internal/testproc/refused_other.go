//go:build !unix

package testproc

import "testing"

// RefusedAddr returns a loopback address where nothing listens: one that
// was free a moment ago (FreeAddr).
func RefusedAddr(t testing.TB) string {
	t.Helper()
	return FreeAddr(t)
}
