package probe

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
)

// ErrNotSticky reports a run that disproves affinity: an identity met more
// than one replica, or a request failed.
var ErrNotSticky = errors.New("affinity not proven")

// Observation is what one identity saw over its requests.
type Observation struct {
	// Answers counts the successful answers per replica name.
	Answers map[string]int
	// Errors counts the requests that failed.
	Errors int
}

// record counts one answer from replica.
func (o *Observation) record(replica string) {
	if o.Answers == nil {
		o.Answers = make(map[string]int, 1)
	}
	o.Answers[replica]++
}

// Primary returns the replica that answered o most often, the one with the
// smallest name among ties, or "" when none answered.
func (o Observation) Primary() string {
	best, most := "", 0
	for name, n := range o.Answers {
		if n > most || (n == most && name < best) {
			best, most = name, n
		}
	}
	return best
}

// ReplicaShare is one replica's part of the spread.
type ReplicaShare struct {
	// Name is the replica's name, as whoami answered it.
	Name string `json:"name"`
	// Identities counts the identities this replica answered most.
	Identities int `json:"identities"`
	// Requests counts all the requests this replica answered.
	Requests int `json:"requests"`
}

// Summary aggregates a run's observations.
type Summary struct {
	// Identities is the number of identities observed.
	Identities int `json:"identities"`
	// Requests counts the requests made, answered or failed.
	Requests int `json:"requests"`
	// Errors counts the failed requests.
	Errors int `json:"errors"`
	// ErrorIdentities counts the identities with at least one failure.
	ErrorIdentities int `json:"error_identities"`
	// CleanIdentities counts the identities with answers and no failure:
	// the ones stickiness is measured over.
	CleanIdentities int `json:"clean_identities"`
	// StickyIdentities counts the clean identities that one replica
	// answered every time.
	StickyIdentities int `json:"sticky_identities"`
	// Stickiness is StickyIdentities / CleanIdentities, from 0 to 1; zero
	// when CleanIdentities is zero.
	Stickiness float64 `json:"stickiness"`
	// Replicas is the spread: every replica that answered, by name, with
	// the identities it answered most.
	Replicas []ReplicaShare `json:"replicas"`
	// MeanIdentities is the mean of Replicas[i].Identities.
	MeanIdentities float64 `json:"mean_identities"`
	// MinOverMean and MaxOverMean are the fewest and most identities a
	// replica has, over MeanIdentities; zero when no replica answered.
	MinOverMean float64 `json:"min_over_mean"`
	MaxOverMean float64 `json:"max_over_mean"`
}

// Summarize aggregates observations, one per identity.
func Summarize(obs []Observation) Summary {
	s := Summary{Identities: len(obs)}
	shares := make(map[string]*ReplicaShare)
	share := func(name string) *ReplicaShare {
		if shares[name] == nil {
			shares[name] = &ReplicaShare{Name: name}
		}
		return shares[name]
	}
	for _, o := range obs {
		s.Requests += o.Errors
		s.Errors += o.Errors
		for name, n := range o.Answers {
			s.Requests += n
			share(name).Requests += n
		}
		if p := o.Primary(); p != "" {
			share(p).Identities++
		}
		switch {
		case o.Errors > 0:
			s.ErrorIdentities++
		case len(o.Answers) > 0:
			s.CleanIdentities++
			if len(o.Answers) == 1 {
				s.StickyIdentities++
			}
		}
	}
	if s.CleanIdentities > 0 {
		s.Stickiness = float64(s.StickyIdentities) / float64(s.CleanIdentities)
	}
	s.spread(slices.Collect(maps.Values(shares)))
	return s
}

// spread sets the replica shares and their balance.
func (s *Summary) spread(shares []*ReplicaShare) {
	slices.SortFunc(shares, func(a, b *ReplicaShare) int { return cmp.Compare(a.Name, b.Name) })
	s.Replicas = make([]ReplicaShare, 0, len(shares))
	total, lo, hi := 0, -1, 0
	for _, r := range shares {
		s.Replicas = append(s.Replicas, *r)
		total += r.Identities
		if lo < 0 || r.Identities < lo {
			lo = r.Identities
		}
		hi = max(hi, r.Identities)
	}
	if len(shares) == 0 || total == 0 {
		return
	}
	s.MeanIdentities = float64(total) / float64(len(shares))
	s.MinOverMean = float64(lo) / s.MeanIdentities
	s.MaxOverMean = float64(hi) / s.MeanIdentities
}

// ExpectSticky returns nil when the run proves affinity: every request
// answered, and every identity answered by one replica throughout. Otherwise
// it returns an error wrapping [ErrNotSticky] that says what fell short.
func (s Summary) ExpectSticky() error {
	switch {
	case s.Requests == 0:
		return notSticky("no requests made")
	case s.CleanIdentities == 0:
		return notSticky(fmt.Sprintf("no identity answered without errors (%d of %d requests failed)", s.Errors, s.Requests))
	case s.StickyIdentities < s.CleanIdentities:
		return notSticky(fmt.Sprintf("stickiness %s < 100%%", Percent(s.Stickiness)))
	case s.Errors > 0:
		return notSticky(fmt.Sprintf("%d of %d requests failed", s.Errors, s.Requests))
	}
	return nil
}

// notSticky is an [ErrNotSticky] whose message says what fell short.
type notSticky string

func (e notSticky) Error() string        { return string(e) }
func (e notSticky) Is(target error) bool { return target == ErrNotSticky }

// Percent formats a share from 0 to 1 as a percentage with one decimal,
// never rounding a share short of 1 up to "100.0%".
func Percent(share float64) string {
	p := share * 100
	if share < 1 && p > 99.9 {
		p = 99.9
	}
	return fmt.Sprintf("%.1f%%", p)
}

// Movement compares the replica each identity met in two runs.
type Movement struct {
	// Compared counts the identities present in both runs.
	Compared int `json:"compared"`
	// Moved counts the compared identities whose replica changed.
	Moved int `json:"moved"`
	// Share is Moved / Compared; zero when Compared is zero.
	Share float64 `json:"share"`
	// From counts the moved identities by the replica they had before.
	From map[string]int `json:"from"`
}

// Moved compares the primary replica of each identity in a baseline run
// with the one in the current run; both map identity index to replica name.
func Moved(baseline, current map[int]string) Movement {
	m := Movement{From: make(map[string]int)}
	for id, was := range baseline {
		now, ok := current[id]
		if !ok {
			continue
		}
		m.Compared++
		if now != was {
			m.Moved++
			m.From[was]++
		}
	}
	if m.Compared > 0 {
		m.Share = float64(m.Moved) / float64(m.Compared)
	}
	return m
}

// Primaries maps each identity index that had an answer to its primary
// replica ([Observation.Primary]).
func Primaries(obs []Observation) map[int]string {
	out := make(map[int]string, len(obs))
	for i, o := range obs {
		if p := o.Primary(); p != "" {
			out[i] = p
		}
	}
	return out
}
