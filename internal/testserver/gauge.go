package testserver

import "sync"

// Gauge counts the tool calls running on every Server that shares it
// ([Options.Calls]), by tool, with the peak of each: what a test needs to
// show how many calls ran at once anywhere in a fleet. Its methods are safe
// for concurrent use; the zero value is ready.
type Gauge struct {
	mu      sync.Mutex // guards the maps
	running map[string]int
	peak    map[string]int
	started map[string]int
}

func (g *Gauge) enter(tool string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.running == nil {
		g.running, g.peak, g.started = map[string]int{}, map[string]int{}, map[string]int{}
	}
	g.running[tool]++
	g.started[tool]++
	g.peak[tool] = max(g.peak[tool], g.running[tool])
}

func (g *Gauge) leave(tool string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.running[tool]--
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
