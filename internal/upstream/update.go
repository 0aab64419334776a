package upstream

// Change says how an Update changed the fleet's membership, for logging.
// A name whose URL changed is in both lists: its old replica left and a new
// one joined.
type Change struct {
	// Added names the replicas that joined, in spec order.
	Added []string
	// Removed names the replicas that left, in their old order.
	Removed []string
}

// Empty reports whether nothing joined or left.
func (c Change) Empty() bool { return len(c.Added) == 0 && len(c.Removed) == 0 }

// Update replaces the fleet's membership with specs, validated as New
// validates them; on error the fleet is unchanged. A replica whose name and
// URL are both unchanged keeps its *Replica, so its in-flight count and
// health carry over and requests in flight are unaffected; new replicas
// start up. Readers holding an older Snapshot keep a consistent view of it.
// Update is safe for concurrent use with itself and with Snapshot.
func (f *Fleet) Update(specs []Spec) (Change, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ch, err := f.build(specs, f.snap.Load())
	if err != nil {
		return Change{}, err
	}
	f.snap.Store(s)
	return ch, nil
}

// lookup is Lookup on a snapshot that may be nil.
func (s *Snapshot) lookup(name string) *Replica {
	if s == nil {
		return nil
	}
	return s.Lookup(name)
}

// all returns the replicas of a snapshot that may be nil.
func (s *Snapshot) all() []*Replica {
	if s == nil {
		return nil
	}
	return s.replicas
}
