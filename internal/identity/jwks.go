package identity

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"time"
)

// maxJWKS bounds a key set read from a file or fetched.
const maxJWKS = 1 << 20

// KeySource is where a Verifier's key set comes from: a file, or a URL
// fetched again every Refresh.
type KeySource struct {
	// File is a JWKS file; URL a JWKS endpoint (https in production). One
	// of them.
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
	c := src.Client
	if c == nil {
		c = &http.Client{Timeout: 10 * time.Second}
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
