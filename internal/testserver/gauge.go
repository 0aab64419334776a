package testserver

import "sync"

// Gauge counts what every Server that shares it ([Options.Calls]) handles:
// the tool calls running, by tool, with the peak of each, which is what a
// test needs to show how many calls ran at once anywhere in a fleet; and
// the MCP requests handled, by method and, for resources/read, by URI,
// which is what a test needs to show how many requests a cache in front of
// the fleet let through. Its methods are safe for concurrent use; the zero
// value is ready.
type Gauge struct {
	mu      sync.Mutex     // guards the maps
	running map[string]int // tool calls running, by tool
	peak    map[string]int // most tool calls running at once, by tool
	started map[string]int // tool calls started, by tool
	methods map[string]int // requests handled, by method
	reads   map[string]int // resources/read requests handled, by URI
}

// initLocked makes the maps of a zero Gauge.
func (g *Gauge) initLocked() {
	if g.running == nil {
		g.running, g.peak, g.started = map[string]int{}, map[string]int{}, map[string]int{}
		g.methods, g.reads = map[string]int{}, map[string]int{}
	}
}

func (g *Gauge) enter(tool string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.initLocked()
	g.running[tool]++
	g.started[tool]++
	g.peak[tool] = max(g.peak[tool], g.running[tool])
}

func (g *Gauge) leave(tool string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.running[tool]--
}

// handled counts one request of method; uri is the resource of a
// resources/read request and "" for every other method.
func (g *Gauge) handled(method, uri string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.initLocked()
	g.methods[method]++
	if method == methodReadResource {
		g.reads[uri]++
	}
}

// Peak returns the most calls of tool that ran at once.
func (g *Gauge) Peak(tool string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.peak[tool]
}

// Started returns how many calls of tool started.
func (g *Gauge) Started(tool string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.started[tool]
}

// Running returns how many calls of tool run now.
func (g *Gauge) Running(tool string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.running[tool]
}

// Method returns how many requests of method ("tools/list",
// "resources/read", "server/discover", ...) the servers sharing g have
// handled, whatever their outcome. Notifications are not counted.
func (g *Gauge) Method(method string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.methods[method]
}

// Read returns how many resources/read requests of uri the servers sharing
// g have handled, whatever their outcome.
func (g *Gauge) Read(uri string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.reads[uri]
}
