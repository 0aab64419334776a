package gateway

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// seriesCache keeps the metric series in use by their labels, so that a
// request records into them without building (and, in Prometheus,
// hashing and checking) its label values each time. Past maxSeries
// entries a series is built per use and not kept.
type seriesCache[K comparable, V any] struct {
	mu sync.RWMutex
	m  map[K]V
}

// maxSeries bounds a seriesCache.
const maxSeries = 4096

// get returns k's series, made by build on first use.
func (c *seriesCache[K, V]) get(k K, build func(K) V) V {
	c.mu.RLock()
	s, ok := c.m[k]
	c.mu.RUnlock()
	if ok {
		return s
	}
	s = build(k)
	c.mu.Lock()
	if c.m == nil {
		c.m = make(map[K]V)
	}
	if len(c.m) < maxSeries {
		c.m[k] = s
	}
	c.mu.Unlock()
	return s
}

// reqKey is a request's labels on mcpfleet_requests_total (the duration
// histogram takes the first two).
type reqKey struct{ method, era, replica, outcome string }

// reqSeries are a request's counter and its duration histogram.
type reqSeries struct {
	count    prometheus.Counter
	duration prometheus.Observer
}

func (m *Metrics) reqSeries(k reqKey) reqSeries {
	return reqSeries{
		count:    m.requests.WithLabelValues(k.method, k.era, k.replica, k.outcome),
		duration: m.duration.WithLabelValues(k.method, k.era),
	}
}
