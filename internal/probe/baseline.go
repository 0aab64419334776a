package probe

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// BaselineVersion is the format version of a [Baseline] this package
// writes and reads.
const BaselineVersion = 1

// Baseline is what a run leaves for a later run to compare with: the
// replica each identity met most, and the parameters that make the
// identities the same ones again.
type Baseline struct {
	// Version is BaselineVersion.
	Version int `json:"version"`
	// URL is the endpoint the run probed.
	URL string `json:"url"`
	// TokenPrefix, with the identity's index, made each bearer token; a
	// later run must use the same prefix to be the same identities.
	TokenPrefix string `json:"token_prefix"`
	// Identities and Requests are the run's identities and requests per
	// identity.
	Identities int `json:"identities"`
	Requests   int `json:"requests"`
	// Taken is when the run began.
	Taken time.Time `json:"taken"`
	// Replicas maps identity index to the replica that answered it most.
	// Identities that had no answer are absent.
	Replicas map[int]string `json:"replicas"`
}

// Baseline returns the baseline of r, for a later run to compare with.
func (r *Result) Baseline() *Baseline {
	return &Baseline{
		Version:     BaselineVersion,
		URL:         r.URL,
		TokenPrefix: r.TokenPrefix,
		Identities:  r.Identities,
		Requests:    r.Requests,
		Taken:       r.Started.UTC(),
		Replicas:    Primaries(r.Observations),
	}
}

// WriteTo writes b as indented JSON.
func (b *Baseline) WriteTo(w io.Writer) (int64, error) {
	out, err := json.MarshalIndent(b, "", "  ")
	if err != nil {
		return 0, fmt.Errorf("encoding baseline: %w", err)
	}
	n, err := w.Write(append(out, '\n'))
	if err != nil {
		return int64(n), fmt.Errorf("writing baseline: %w", err)
	}
	return int64(n), nil
}

// ReadBaseline decodes and checks a baseline that [Baseline.WriteTo]
// wrote.
func ReadBaseline(r io.Reader) (*Baseline, error) {
	var b Baseline
	dec := json.NewDecoder(io.LimitReader(r, 64<<20))
	if err := dec.Decode(&b); err != nil {
		return nil, fmt.Errorf("decoding baseline: %w", err)
	}
	if b.Version != BaselineVersion {
		return nil, fmt.Errorf("decoding baseline: version %d, want %d", b.Version, BaselineVersion)
	}
	if b.TokenPrefix == "" {
		return nil, errors.New("decoding baseline: no token prefix")
	}
	for id, name := range b.Replicas {
		if id < 0 || name == "" {
			return nil, fmt.Errorf("decoding baseline: bad entry %d: %q", id, name)
		}
	}
	return &b, nil
}

// Compare returns how the identities of r moved since b. The runs must
// have used the same token prefix, or their identities are not the same.
func (b *Baseline) Compare(r *Result) (Movement, error) {
	if b.TokenPrefix != r.TokenPrefix {
		return Movement{}, fmt.Errorf("comparing with baseline: it used token prefix %q, this run %q", b.TokenPrefix, r.TokenPrefix)
	}
	return Moved(b.Replicas, Primaries(r.Observations)), nil
}
