package sim

import (
	"math"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/balance"
	"github.com/mcpfleet/mcpfleet/internal/health"
	"github.com/mcpfleet/mcpfleet/internal/tools"
)

// The new-tool injection (Scenario.NewTool): the rolling deploy adds a
// tool. A replica serves it from the moment it is back from its reboot
// with the new version; until the deploy has passed every replica the
// fleet is mixed, and a call of the new tool that reaches a replica
// without it is answered "unknown tool" (a JSON-RPC error: the call fails
// at its client).
//
// Clients learn of the tool from a tools/list answered by a replica that
// serves it, and their tools/list reaches a replica only through the
// balancer: so they know of it from the moment the first replica with it
// takes new work. With round-robin and affinity the deploy puts a replica
// back in rotation when its reboot ends; with mcpfleet, when a gateway's
// health brings it back up.
//
// Under mcpfleet each gateway's tool watcher (docs/GATEWAY.md, "Tools
// across the fleet") lists every replica every tools_refresh_s, and a
// replica when its health brings it back up (the gateway looks every
// second for replicas just back); a tools/call then goes
// only among the replicas it knows to declare the tool, when at least one
// eligible replica does (tools.Declares). Round-robin and affinity have no
// filter.

// newToolName is the tool the deploy adds; every other call is of a tool
// every replica serves.
const newToolName = "new_tool"

// never is a time no run reaches.
const never = time.Duration(math.MaxInt64)

// toolRule is the routing rule of tool-aware routing, the gateway's own:
// a variable only so a test can watch the engine call it.
var toolRule = tools.Declares

// toolsOn reports whether the gateways route calls by their tools: under
// mcpfleet with the tool watcher on, and with a tool some replicas lack.
func (s *Scenario) toolsOn() bool { return s.NewTool && s.Routing == Fleet && s.ToolsRefresh > 0 }

// toolLook is how often a gateway's watcher looks for replicas just back
// up, as the gateway's does: every second, or every refresh if shorter
// (tools_refresh_s is at least 1 s, as tools.refresh is).
func (s *Scenario) toolLook() time.Duration { return min(time.Second, seconds(s.ToolsRefresh)) }

// ceilTo returns the first multiple of step at or after t.
func ceilTo(t, step time.Duration) time.Duration {
	if step <= 0 {
		return t
	}
	return (t + step - 1) / step * step
}

// newGatewayTools gives each gateway what its watcher knows: that no
// replica declares the new tool yet.
func newGatewayTools(gws []gateway, replicas int) {
	for g := range gws {
		gws[g].toolsAt = make([]time.Duration, replicas)
		for r := range gws[g].toolsAt {
			gws[g].toolsAt[r] = never
		}
	}
}

// upgraded is replica r back from its reboot with the new version: it
// serves the new tool; each gateway's watcher lists it at its next refresh
// (the listings during the reboot failed and kept its old tools); and with
// round-robin or affinity, back in rotation, it can tell clients of it.
func (e *engine) upgraded(r int) {
	e.reps[r].newTool = true
	if e.s.toolsOn() {
		at := ceilTo(e.now, seconds(e.s.ToolsRefresh))
		for g := range e.gws {
			e.gws[g].toolsAt[r] = min(e.gws[g].toolsAt[r], at)
		}
	}
	e.announce(r)
}

// cameUp is gateway g's health bringing replica r back up: its watcher
// lists it at its next look for replicas just back.
func (e *engine) cameUp(g, r int) {
	if !e.reps[r].newTool {
		return
	}
	if e.s.toolsOn() {
		gw := &e.gws[g]
		gw.toolsAt[r] = min(gw.toolsAt[r], ceilTo(e.now, e.s.toolLook()))
	}
	e.announce(r)
}

// announce lets clients know of the new tool once replica r, which
// serves it, takes new work through the balancer: at once with
// round-robin or affinity, when a gateway's health has it up with mcpfleet.
func (e *engine) announce(r int) {
	if e.toolOut || !e.s.NewTool || !e.reps[r].newTool {
		return
	}
	if e.s.Routing == Fleet {
		up := false
		for g := range e.gws {
			up = up || e.gws[g].seen[r].State == health.StateUp
		}
		if !up {
			return
		}
	}
	e.toolOut = true
}

// declares reports whether gateway g's watcher knows replica r to declare
// tool now: every replica declares the tools every version serves.
func (e *engine) declares(g, r int, tool string) bool {
	if tool != newToolName {
		return true
	}
	return e.gws[g].toolsAt[r] <= e.now
}

// toolFilter returns which replicas call c may go to through gateway g by
// their tools, as the gateway's toolFilter does with tools.Declares over
// its view; nil when any may (no tool-aware routing, or not a call of the
// new tool).
func (e *engine) toolFilter(c int32, g int) func(int) bool {
	if c < 0 || !e.calls[c].newTool || !e.s.toolsOn() {
		return nil
	}
	gw := &e.gws[g]
	return toolRule(len(e.reps), newToolName, gw.view.Eligible, func(i int, tool string) bool { return e.declares(g, i, tool) })
}

// toolView is a gateway's view with a call's tool filter: a replica the
// filter refuses is not eligible, as the gateway's filtered snapshot has it.
type toolView struct {
	balance.View
	ok func(int) bool
}

// Eligible reports whether replica i takes new work and the filter allows it.
func (v toolView) Eligible(i int) bool { return v.View.Eligible(i) && v.ok(i) }

// unknownTool is call c of the new tool reaching a replica without it: the
// replica answers a JSON-RPC error at once, and the client gives the call
// up (an error answer is not re-sent).
func (e *engine) unknownTool(c int32) {
	e.res.UnknownTool++
	e.fail(c)
}
