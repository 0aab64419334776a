package sim

// assumptions are the model's decisions where the description of the lab
// leaves a choice open. Every Result lists them.
var assumptions = []string{
	"network time is zero except one round trip (round_trip_s) for a re-initialization, a reconnect, and the pause before a re-issue",
	"a client initializes its session before its first call, outside that call's latency, in one exchange; later initializes are re-initializations (a real SDK client sends initialize and notifications/initialized as two requests, which a round-robin balancer sends to two replicas: more 404s and failures than here)",
	"a client holds one session; a 404 drops it, and the next send re-initializes through the balancer before re-issuing",
	"every re-send of a call, for any cause (404, cancel by a cut or kill, stream out of reach, 503, 429), counts against max_reissues; the call is given up when one more would be needed, so a runaway agent's refused calls end too",
	"a reconnect (GET with Last-Event-ID) is not a re-issue and costs no budget",
	"a stream's first byte is sent when the replica accepts the request, waiting or not; ordinary calls send no progress; slow calls send progress every progress interval from their start (measured against real runs: a Go SDK replica sends nothing, headers included, before its first event, so a queued or silent call behind an idle timeout is cut more often than here, and a 2025-11-25 one cut before any event cannot be resumed; docs/SIM.md, calibration)",
	"a keep-alive at most as long as the idle timeout prevents every cut; a longer one never does (the cut comes first)",
	"a 2025-11-25 stream that is abandoned (re-issued instead of resumed) is not cancelled: its execution runs on and its mutation counts",
	"with local sessions a stream is resumable only on its own replica, in the same generation, under the client's current session",
	"with a shared store a resume of a killed call finds it gone and the client re-issues it; resumes count only streams reattached",
	"draining and rebooting replicas take no new work in every routing mode (the deploy takes them out of the balancer's rotation)",
	"mcpfleet with local sessions sends a session's requests to the replica its sealed ID names, as the gateway's route does; a draining replica refuses new work (503 draining) and a rebooting one the connection, and the gateway answers 404 so the client re-initializes elsewhere",
	"a resume (GET with Last-Event-ID) of a running call is not new work: a draining replica serves it when the balancer sends it there (mcpfleet does for sealed sessions; round-robin and affinity take draining replicas out of rotation for every request)",
	"mcpfleet learns of a drain or a reboot through package health's state machine with the gateway's defaults (check every 2 s, fall 2, rise 2): a check or a forwarded request answered 503 draining takes the replica out at once; a rebooting replica refuses connections, and fall failed connects or checks in a row take it out; after its reboot, rise ok checks bring it back; only then does balance.Pick avoid or use it for new work",
	"the gateways' active checks run at the same instants (every 2 s from the start); a check answers at once (a refused connection fails it without waiting for the timeout)",
	"affinity and mcpfleet hash the client's identity; the session belongs to the client, so the hash of the client is the hash of its session",
	"a kill ends running and waiting executions alike; each counts as killed",
	"the rolling deploy drains replicas in index order, the next one starting when the previous is back up; deploy events after the last call is resolved are not run",
	"a request the balancer can place nowhere gets 503 and is re-issued after 1 s",
	"mutations are counted per logical call; with idempotency a re-execution of a call that already mutated does not mutate again; a record costs nothing in the model, where measured in Redis it is 2 round trips a keyed call (claim, settle) and 65 µs of redis-server CPU (docs/BENCHMARKS.md, what each feature costs)",
	"latency percentiles are over completed calls only (nearest rank); failed calls are counted apart",
	"utilization is busy slot-time within the traffic window over slot-time of that window",
	"cost (replica-seconds) is replicas times the time the last call was resolved, reboots included",
	"the hot client is drawn uniformly from the clients, from its own random stream, and its extra calls from that stream",
	"the runaway agent is drawn the same way from a stream of its own (it may be the hot client), its extra calls a Poisson stream of runaway_rate from that stream; runaway admitted counts every admission of that client, its normal calls and re-sends included, and its rate is the admissions within the traffic window over traffic_s",
	"with several gateways each request (a call's send, a resume) reaches a gateway drawn uniformly from a stream of its own, as an L4 balancer spreads new connections; the initialize before a call goes through the call's gateway; a sealed session opens at any gateway",
	"each gateway has its own health view, its own in-flight counts (the executions it sent, until they end) for bounded loads, and its own pick counter; nothing else is shared between gateways but the limit store when it is shared",
	"limits govern tools/call only and are checked by the gateway before it routes (initializes and resumes are never refused), with package limit's Table: one per gateway (limit_store local) or one for all (shared, the Redis store without latency or outages); the caller is the client; a check costs nothing in the model, where measured through a gateway (docs/BENCHMARKS.md, what each feature costs) an admission in Redis is 2 round trips (the script, then the concurrency lease's release) and 98 µs of redis-server CPU, so that one Redis core admits about 10,000 calls/s (docs/DEPLOY.md, sizing)",
	"a refused call gets 429 and its client re-sends it after the decision's RetryAfter",
	"max_inflight applies to mcpfleet routing only, to calls (not resumes or initializes), with package limit's Table holding each replica's places under its name, per gateway (limit_store local) or for all (shared); a pick whose replica is full moves on without counting as a retry; a call that finds every replica full waits at its gateway holding its admission lease, asking again every 100 ms (the gateway also wakes on a place of its own freeing, which the model does not), until queue_timeout_s, then gets 503 and its client re-sends after 250 ms; the queue's size (queue_size) is not modelled",
	"an admitted call holds its concurrency lease until its execution ends (done, killed, cancelled), a 2025-11-25 execution its client abandoned too; a call that reaches no replica (404, 503) gives it back at once; held leases never lapse (the gateway renews them while the call runs)",
	"limits apply in every routing mode: round-robin and affinity stand for balancer replicas with limiters of their own",
	"the new tool (new_tool) is served by a replica from the moment it is back from its reboot in the rolling deploy (the new version); without a deploy no replica serves it and no call calls it",
	"clients learn of the new tool from a tools/list answered by a replica that serves it, and that list reaches a replica through the balancer: they know of it from the moment the first upgraded replica takes new work (round-robin and affinity: its reboot's end; mcpfleet: when a gateway's health brings it back up); from then each call first sent calls it with probability new_tool_share, drawn from a stream of its own (one number per call, whatever the fleet), and its re-sends call it too; earlier calls never do",
	"under mcpfleet each gateway's tool watcher lists every replica every tools_refresh_s from the run's start, all at the same instants, and a replica at its next look for replicas just back up (every second) once its health brings it back; a listing takes no time; a listing during a reboot fails and keeps the old tools; tools_refresh_s 0 turns the watcher, and tool-aware routing, off (otherwise 1 to 86400, as tools.refresh)",
	"under mcpfleet a call of the new tool is picked only among the replicas the gateway knows to declare it when at least one eligible replica does, otherwise as before (tools.Declares over the gateway's view); the last resort when health has taken every replica out is not filtered, as in the gateway; a session pinned to its replica (2025-11-25 local) goes there whatever its tools; round-robin and affinity do not filter",
	"a call of the new tool that reaches a replica without it is answered unknown tool at once (a JSON-RPC error: no slot, no execution counted); the client does not re-send an error answer, so the call fails (counted in failed and in unknown_tool) and its admission lease and replica place are given back",
	"a slow call's duration (slow_min_s to slow_max_s) replaces its ordinary one and is not capped by duration_cap_s",
	"the idle timeout applies to every stream, a resumed one too; a cut ends only the client's reading, never a 2025-11-25 execution",
	"a call's executions all run the same drawn duration and mutate at the same point of their run",
	"the timeline samples in flight and queues at the start of each second; its counts are of events within the second (a duplicate mutation at the time of the second mutation)",
	"mission stars use the mission's seed and the five seeds after it, whatever --seed says",
}

// Assumptions returns the model's decisions where the lab's description
// leaves a choice open.
func Assumptions() []string {
	out := make([]string, len(assumptions))
	copy(out, assumptions)
	return out
}
