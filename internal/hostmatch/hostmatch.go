// Package hostmatch is how a service's hosts take a request's Host, one
// rule for the gateway's router, the config's overlap check and the
// balancer configs lbconfig writes: an exact name, or *. and a name, the
// star standing for exactly one label. It also parses Host and Origin
// strictly, and decides which of them a listener takes (Guard).
package hostmatch

import "strings"

// Match says whether pattern takes host: equal, or pattern *.example.com
// and host one label before .example.com (a.example.com, not
// a.b.example.com nor example.com).
func Match(pattern, host string) bool {
	if pattern == host {
		return true
	}
	suffix, ok := strings.CutPrefix(pattern, "*")
	if !ok || !strings.HasPrefix(suffix, ".") {
		return false
	}
	label, ok := strings.CutSuffix(host, suffix)
	return ok && label != "" && !strings.ContainsAny(label, ".*")
}

// Takes says whether a service of hosts answers host; no hosts takes
// every host.
func Takes(hosts []string, host string) bool {
	if len(hosts) == 0 {
		return true
	}
	for _, h := range hosts {
		if Match(h, host) {
			return true
		}
	}
	return false
}

// Meet returns a host both lists take, or "" and false when none; no hosts
// takes every host (then the host returned is "").
func Meet(a, b []string) (string, bool) {
	if len(a) == 0 || len(b) == 0 {
		return "", true
	}
	for _, x := range a {
		for _, y := range b {
			if Match(x, y) || Match(y, x) {
				if strings.HasPrefix(x, "*") {
					return y, true
				}
				return x, true
			}
		}
	}
	return "", false
}
