// Package h1 is the gateway's own HTTP/1.1. Upstream it is a client: a pool
// of kept-alive connections per replica, a request writer that sends a
// request in one write, and a response parser that allocates little. It
// does what the gateway needs and no more: no proxies, no redirects, no
// compression, no TLS (https replicas go through net/http), one request per
// connection at a time. In front it is a Server for the gateway's clients
// (server.go).
//
// net/http's Transport spends two goroutines, two buffers and several
// channel hand-offs on every connection and request; on loopback that was
// most of the gateway's cost per request (docs/BENCHMARKS.md). Here the
// goroutine that forwards a request writes it and reads the answer itself.
//
// # What it refuses
//
// A message that one hop reads one way and the next another hides a request
// in a body (request smuggling, RFC 9112 section 11.2), so h1 accepts
// nothing net/http refuses, and the differential fuzzers
// (FuzzReadRequestHead, FuzzReadHead, FuzzChunked) fail if it ever does.
// The Server answers 400 (501 for an unknown coding, 431 for a head over
// MaxHeaderBytes) and closes; the client returns ErrMalformed. Refused: in
// a chunked body (section 7.1), a chunk-size line or chunk data not ended
// by CRLF and a bare CR anywhere in a chunk line, extensions included
// (CVE-2025-22871; erratum 7633 keeps bare LF out of chunk lines), sizes of
// more than 16 hex digits, whitespace before ";" (section 7.1.1's BWS,
// which net/http refuses), chunk lines over 4 KiB, extensions outweighing
// the data, and trailer lines that break the header rules (section 7.1.2)
// or a trailer section over 4 KiB; a Transfer-Encoding other than one
// "chunked", or in HTTP/1.0 (section 6.1); in a request, Transfer-Encoding
// with Content-Length (sections 6.1 and 6.3 let a server refuse it, and the
// Server does rather than read it one way); Content-Length other than one
// decimal number spelt alike in every field ("5, 5", "+5", "5" with "05";
// section 6.3, RFC 9110 section 8.6); obsolete line folding (section 5.2);
// field names that are not tokens, whitespace before the colon (section
// 5.1), and NUL, CR or other controls in a value (RFC 9110 section 5.5); an
// empty line before the request line (section 2.2 lets a server skip it,
// net/http does not, and the two must agree where a request starts); a
// missing or repeated Host in HTTP/1.1 (section 3.2); a Trailer field
// announcing a framing field (RFC 9110 section 6.5.1). A bare LF ending a
// head line is taken, as section 2.2 allows and net/http does.
package h1
