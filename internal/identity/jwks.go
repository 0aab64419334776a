package identity

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"time"
)

// maxJWKS bounds a key set read from a file or fetched.
const maxJWKS = 1 << 20

// CheckKeyURL says whether raw may be a JWKS endpoint: https, or http to a
// loopback host (a literal loopback address or localhost), where no one
// between could swap the keys that say whose tokens are good.
func CheckKeyURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return errors.New("not a URL") // url's error would quote it, password and all
	}
	switch {
	case u.Host == "":
		return fmt.Errorf("%q: want an https:// URL with a host", u.Redacted())
	case u.Scheme == "https":
		return nil
	case u.Scheme == "http" && loopbackHost(u.Hostname()):
		return nil
	}
	return fmt.Errorf("%q: want https:// (plain http only to a loopback host): keys read in the clear can be swapped on the way", u.Redacted())
}

// loopbackHost reports localhost or a literal loopback address.
func loopbackHost(h string) bool {
	if strings.EqualFold(h, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(h)
	return err == nil && a.Unmap().IsLoopback()
}

// KeySource is where a Verifier's key set comes from: a file, or a URL
// fetched again every Refresh.
type KeySource struct {
	// File is a JWKS file; URL a JWKS endpoint, https unless on loopback
	// (CheckKeyURL). One of them.
	File, URL string
	// Refresh is how often the set is read again; 0 means 5 min.
	Refresh time.Duration
	// Client fetches URL; nil means one with a 10 s timeout.
	Client *http.Client
}

// Load reads the key set once; the verifier keeps its keys on an error.
func (v *Verifier) Load(ctx context.Context, src KeySource) error {
	var b []byte
	var err error
	if src.File != "" {
		b, err = readBounded(src.File)
	} else {
		b, err = fetch(ctx, src)
	}
	if err != nil {
		return err
	}
	return v.SetKeys(b)
}

// Refresh reads the key set every src.Refresh until ctx ends, keeping the
// keys it has when a read fails (logged).
func (v *Verifier) Refresh(ctx context.Context, src KeySource, log *slog.Logger) {
	every := src.Refresh
	if every <= 0 {
		every = 5 * time.Minute
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := v.Load(ctx, src); err != nil && ctx.Err() == nil {
			log.Warn("refreshing the jwks failed: keeping the keys loaded before", "error", err)
		}
	}
}

// keyRedirect follows a JWKS endpoint's redirect only to a URL
// CheckKeyURL takes: an https endpoint cannot send the fetch into the clear.
func keyRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	return CheckKeyURL(req.URL.String())
}

func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading jwks file: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxJWKS+1))
	if err != nil {
		return nil, fmt.Errorf("reading jwks file: %w", err)
	}
	if len(b) > maxJWKS {
		return nil, fmt.Errorf("reading jwks file: over %d bytes", maxJWKS)
	}
	return b, nil
}

func fetch(ctx context.Context, src KeySource) ([]byte, error) {
	if err := CheckKeyURL(src.URL); err != nil {
		return nil, fmt.Errorf("fetching jwks: %w", err)
	}
	c := src.Client
	if c == nil {
		c = &http.Client{Timeout: 10 * time.Second, CheckRedirect: keyRedirect}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, src.URL, nil)
	if err != nil {
		return nil, fmt.Errorf("fetching jwks: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetching jwks: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetching jwks: status %d", resp.StatusCode)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKS+1))
	if err != nil {
		return nil, fmt.Errorf("fetching jwks: %w", err)
	}
	if len(b) > maxJWKS {
		return nil, fmt.Errorf("fetching jwks: over %d bytes", maxJWKS)
	}
	return b, nil
}
