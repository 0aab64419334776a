package main

import (
	"crypto/tls"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/config"
)

// certSlot holds a listener's certificate, swapped whole on reload. Every
// TLS handshake reads the slot, so a reload reaches new connections at once
// and leaves those already open (and their streams) as they are.
type certSlot struct {
	prefix string // the pair's keys in logs and errors: "tls" or "tls.admin"
	pair   config.CertPair
	cert   atomic.Pointer[tls.Certificate]
}

// newCertSlot loads the pair; an unreadable or mismatched pair is an error
// naming its key, and nothing starts.
func newCertSlot(prefix string, pair config.CertPair) (*certSlot, error) {
	s := &certSlot{prefix: prefix, pair: pair}
	cert, err := config.LoadCertificate(prefix, pair)
	if err != nil {
		return nil, err
	}
	s.cert.Store(cert)
	return s, nil
}

// reload reads the files again. A pair that does not load leaves the
// certificate in use as it was.
func (s *certSlot) reload(log *slog.Logger) {
	cert, err := config.LoadCertificate(s.prefix, s.pair)
	if err != nil {
		log.Error("certificate reload refused: still serving the previous one", "error", err.Error())
		return
	}
	s.cert.Store(cert)
	log.Info("reloaded certificate", certAttrs(s.prefix, cert)...)
}

// getCertificate is the listener's tls.Config.GetCertificate.
func (s *certSlot) getCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return s.cert.Load(), nil
}

// tlsConfig is a listener's TLS: 1.2 and later (RFC 8996 retires 1.0 and
// 1.1; RFC 9113 section 9.2 asks 1.2 or later of HTTP/2), the certificate
// from the slot, and ALPN offering h2 when http2 is true, then http/1.1.
// Go's default cipher suites are kept: with TLS 1.2 they are the AEAD
// suites with forward secrecy that RFC 9113 section 9.2.2 asks for.
func (s *certSlot) tlsConfig(http2 bool) *tls.Config {
	protos := []string{"http/1.1"}
	if http2 {
		protos = []string{"h2", "http/1.1"}
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: s.getCertificate, NextProtos: protos}
}

// certAttrs describes a certificate for a log line: never its key.
func certAttrs(prefix string, cert *tls.Certificate) []any {
	attrs := []any{"keys", prefix}
	if leaf := cert.Leaf; leaf != nil {
		attrs = append(attrs, "subject", leaf.Subject.String(), "dns_names", leaf.DNSNames,
			"not_after", leaf.NotAfter.UTC().Format(time.RFC3339), "serial", leaf.SerialNumber.String())
	}
	return attrs
}
