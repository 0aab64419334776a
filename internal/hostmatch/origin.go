package hostmatch

import (
	"errors"
	"net/netip"
	"strconv"
	"strings"
)

// Origin is an Origin header's value (RFC 6454, section 7): a scheme, a
// host and a port, in one canonical spelling.
type Origin struct {
	// Scheme is "http" or "https".
	Scheme string
	// Host is lower case, without a trailing dot; an IP address is in
	// netip's spelling, an IPv6 one without brackets.
	Host string
	// Port is the one written, else the scheme's default (80 or 443).
	Port uint16
}

// String is the origin as a browser writes it: the port left out when it
// is the scheme's default.
func (o Origin) String() string {
	host := o.Host
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if o.Port == defaultPort(o.Scheme) {
		return o.Scheme + "://" + host
	}
	return o.Scheme + "://" + host + ":" + strconv.Itoa(int(o.Port))
}

// ErrBadOrigin is ParseOrigin's error: the value is not an http or https
// origin in the serialization of RFC 6454, section 6.2.
var ErrBadOrigin = errors.New("not an http(s) origin: want scheme://host[:port]")

// ParseOrigin parses an Origin header's value strictly: http or https (in
// any case), "://", a host and an optional port, nothing else. "null" (an
// opaque origin), userinfo, a path, a query, percent-encoding, an IPv6
// zone, an empty or zero-led port and a port above 65535 are refused: a
// browser sends none of them, and a lenient parse is how a check is
// walked around.
func ParseOrigin(s string) (Origin, error) {
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		return Origin{}, ErrBadOrigin
	}
	scheme = strings.ToLower(scheme)
	if scheme != "http" && scheme != "https" {
		return Origin{}, ErrBadOrigin
	}
	host, port, ok := parseAuthority(rest)
	if !ok {
		return Origin{}, ErrBadOrigin
	}
	if port == 0 {
		port = defaultPort(scheme)
	}
	return Origin{Scheme: scheme, Host: host, Port: port}, nil
}

// ParseHost parses a Host header's value (RFC 9110, section 7.2) as
// strictly as ParseOrigin parses an origin's host and port: host in the
// same canonical spelling, port 0 when none is written.
func ParseHost(s string) (host string, port uint16, ok bool) {
	return parseAuthority(s)
}

func defaultPort(scheme string) uint16 {
	if scheme == "https" {
		return 443
	}
	return 80
}

// parseAuthority splits host[:port] (an IPv6 host in brackets) and
// canonicalises host; port is 0 when none is written.
func parseAuthority(s string) (host string, port uint16, ok bool) {
	rest := ""
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return "", 0, false
		}
		ip, err := netip.ParseAddr(s[1:end])
		if err != nil || !ip.Is6() || ip.Zone() != "" {
			return "", 0, false
		}
		host, rest = ip.String(), s[end+1:]
	} else {
		i := strings.IndexByte(s, ':')
		if i < 0 {
			i = len(s)
		}
		if host, ok = hostName(s[:i]); !ok {
			return "", 0, false
		}
		rest = s[i:]
	}
	if rest == "" {
		return host, 0, true
	}
	digits, ok := strings.CutPrefix(rest, ":")
	if !ok || digits == "" || len(digits) > 5 || digits[0] == '0' {
		return "", 0, false
	}
	n := 0
	for _, c := range []byte(digits) {
		if c < '0' || c > '9' {
			return "", 0, false
		}
		n = n*10 + int(c-'0')
	}
	if n > 65535 {
		return "", 0, false
	}
	return host, uint16(n), true
}

// hostName canonicalises a name or an IPv4 address: lower case, one
// trailing dot dropped; labels of letters, digits, '-' and '_', none empty.
func hostName(s string) (string, bool) {
	s = strings.TrimSuffix(strings.ToLower(s), ".")
	if s == "" || len(s) > 253 {
		return "", false
	}
	for label := range strings.SplitSeq(s, ".") {
		if label == "" || len(label) > 63 {
			return "", false
		}
		for _, c := range []byte(label) {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return "", false
			}
		}
	}
	if ip, err := netip.ParseAddr(s); err == nil {
		// An address already in its canonical spelling, as nearly every
		// one is, is returned as it came, without a new string.
		var buf [64]byte
		if string(ip.AppendTo(buf[:0])) == s {
			return s, true
		}
		return ip.String(), true
	}
	return s, true
}
