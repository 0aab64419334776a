package main

// helpTopic is a command's help: what writeHelp prints around its flags.
// Its flags' own text, placeholder and default come from its flag set.
type helpTopic struct {
	purpose  string // one line; "" means the command table's
	usage    string // after "mcpfleet "; "" means "NAME [flags]"
	about    string // what the command does, in a few lines
	groups   []flagGroup
	examples []string // two or three command lines
}

// flagGroup is one topic of a command's flags, in the order shown. A
// flag of the command in no group is shown under "other flags", and a
// test fails naming it.
type flagGroup struct {
	topic string
	flags []string
}

// secretPath is where the examples keep the secret file: outside any
// working tree, in a directory of its owner's only.
const secretPath = "~/.config/mcpfleet/secret.yaml"

// makeSecret writes a secret file at secretPath, readable by its owner
// only from the first byte (umask 077, not a chmod after the write).
const makeSecret = "mkdir -p -m 700 ~/.config/mcpfleet && (umask 077; mcpfleet secret > " + secretPath + ")"

// helpTopics are the commands' help, by flag set name.
var helpTopics = map[string]helpTopic{
	"serve": {
		usage: "serve [--config FILE] [--upstream URL ...] [flags]",
		about: `Routes MCP traffic (Streamable HTTP, both protocol eras) to the replicas:
sessions to the replica that minted them, new work by a salted digest of
the caller or by load, never to a draining or unhealthy replica. Every
flag is also a key of the YAML file (docs/CONFIG.md); a flag given wins
over the file. The ports are checked at start: one in use is an error
that names it.`,
		groups: []flagGroup{
			{"configuration", []string{"config"}},
			{"listeners", []string{"listen", "admin", "server", "tls-cert-file", "tls-key-file"}},
			{"replicas", []string{"upstream", "stdio", "processes", "balance"}},
			{"health and draining", []string{"health-check-interval", "drain-delay", "grace"}},
			{"sessions and streams", []string{"secret-file", "keepalive"}},
			{"limits", nil},
			{"auth", []string{"admin-token-file", "trusted-proxies", "trusted-proxy-header"}},
			{"telemetry", []string{"log-level"}},
		},
		examples: []string{
			"mcpfleet serve --upstream http://10.0.0.11:8080/mcp --upstream http://10.0.0.12:8080/mcp",
			`mcpfleet serve --stdio "npx -y @modelcontextprotocol/server-memory" --processes 3`,
			"mcpfleet serve --config /etc/mcpfleet/mcpfleet.yaml --admin 127.0.0.1:9090",
			makeSecret + " && mcpfleet serve --secret-file " + secretPath + " --upstream http://10.0.0.11:8080/mcp",
		},
	},
	"demo": {
		about: `Starts test servers on loopback behind the gateway, with the fleet page
on the admin listener, and prints how to reach them (curl, MCP Inspector).
Nothing is written to disk; Ctrl-C stops everything.`,
		groups: []flagGroup{
			{"listeners", []string{"listen", "admin"}},
			{"fleet", []string{"replicas", "stdio"}},
			{"run", []string{"for", "v"}},
		},
		examples: []string{
			"mcpfleet demo",
			"mcpfleet demo --listen 127.0.0.1:18080 --admin 127.0.0.1:19090 --replicas 5",
			"mcpfleet demo --stdio --replicas 3",
		},
	},
	"testserver": {
		about: `A real MCP server (official Go SDK) on /mcp with tools that sleep, report
progress and mutate counted state, and /health for the gateway's checks;
with --stdio, the same server on stdin and stdout, as a stdio child.`,
		groups: []flagGroup{
			{"listener", []string{"listen", "name", "stdio"}},
			{"protocol", []string{"era", "stateless", "event-store", "cache-ttl", "resource-metadata", "keepalive"}},
			{"tools", []string{"add-tool", "describe", "slots", "ledger"}},
			{"shutdown", []string{"drain-delay", "grace"}},
			{"telemetry", []string{"otlp-endpoint"}},
		},
		examples: []string{
			"mcpfleet testserver --listen 127.0.0.1:9001 --name a",
			"mcpfleet testserver --listen 127.0.0.1:9002 --era 2026 --slots 4 --drain-delay 5s",
			"mcpfleet testserver --stdio --name child-1",
		},
	},
	"secret": {
		usage: "secret > FILE",
		about: `Prints a new secret file: a session key and a routing salt. Every gateway
of a fleet reads the same file (secret_file), so that any of them opens the
sessions the others sealed. Write it where only you can read it, outside
any source tree.`,
		examples: []string{
			makeSecret,
			"mcpfleet secret | kubectl create secret generic mcpfleet-secret --from-file=secret.yaml=/dev/stdin",
		},
	},
	"health": {
		usage: "health [--timeout D] [--ca-file F | --insecure] [URL]",
		about: `Asks URL (default ` + defaultHealthURL + `) once with GET and exits 0
if it answers 200, 1 with the reason on stderr otherwise. It is the
container image's HEALTHCHECK, which has no shell and no curl (docs/IMAGE.md).
Redirects are not followed and no proxy is used.

An https URL is verified against the system's roots, or against the CA
bundle of --ca-file alone, for the URL's host: https://127.0.0.1:8080/healthz
needs a certificate that names 127.0.0.1. --insecure verifies nothing (a
self-signed certificate, or one for a DNS name, checked from inside its own
container). Both are for https URLs only.`,
		groups: []flagGroup{
			{"check", []string{"timeout"}},
			{"TLS", []string{"ca-file", "insecure"}},
		},
		examples: []string{
			"mcpfleet health",
			"mcpfleet health --ca-file /etc/mcpfleet/ca.pem https://gw.internal:8443/healthz",
		},
	},
	"fleet": {
		usage: "fleet --admin URL[,URL...] [--drain NAME | --resume NAME] [flags]",
		about: `Prints the fleet as each gateway's admin listener sees it (GET /api/fleet):
one row per replica, one column group per gateway. --drain and --resume act
on every gateway first, then print.`,
		groups: []flagGroup{
			{"gateways", []string{"admin", "token-file", "timeout"}},
			{"actions", []string{"drain", "resume"}},
			{"output", []string{"json"}},
		},
		examples: []string{
			"mcpfleet fleet --admin http://127.0.0.1:9090,http://127.0.0.1:9091",
			"mcpfleet fleet --admin http://127.0.0.1:9090 --token-file ~/.config/mcpfleet/admin-token --drain replica-a",
		},
	},
	"lbconfig": {
		usage: "lbconfig nginx|haproxy --config FILE [--salt-file FILE] [--listen ADDR]",
		about: `Prints an nginx.conf or a haproxy.cfg for the fleet in the gateway's
configuration, following the load-balancing guide (docs/LBCONFIG.md): a
consistent hash of a salted, normalised credential with an address
fallback, retries only of undelivered requests, streaming without
buffering. With services, each service gets its own upstream or backend,
chosen by its path and hosts; a request for no service is 404. The
routing salt comes from --salt-file, else the configuration's
secret_file, else it is generated (keep it stable).`,
		groups: []flagGroup{
			{"input", []string{"config", "salt-file"}},
			{"output", []string{"listen"}},
		},
		examples: []string{
			"mcpfleet lbconfig nginx --config mcpfleet.yaml > /etc/nginx/conf.d/mcp.conf",
			"mcpfleet lbconfig haproxy --config mcpfleet.yaml --listen :8080 > haproxy.cfg",
		},
	},
	"version": {
		usage: "version",
		about: `Prints the version, commit, commit time, Go version and platform of this
build: a release says its version, a plain go build "devel" and the commit
it recorded (or that it recorded none). --version prints the same.`,
		examples: []string{"mcpfleet version", "mcpfleet --version"},
	},
	"tools": {
		usage: "tools <subcommand> [flags]",
		about: `subcommands:
  lock   list a replica's tools and print the lock that accepts exactly them (tools.lock_file)

Run 'mcpfleet help tools lock' for a subcommand's flags.`,
		examples: []string{"mcpfleet tools lock --upstream http://127.0.0.1:9001/mcp > tools.lock"},
	},
	"tools lock": {
		purpose: "print the lock of a replica's tool definitions (tools.lock_file)",
		usage:   "tools lock --upstream URL [--authorization-file F] > tools.lock",
		about: `Lists the tools of the MCP endpoint at URL (tools/list, every page: in the
2026-07-28 era, or in a 2025-11-25 session when the replica refuses it) and
prints the lock that accepts exactly their definitions, for tools.lock_file
(docs/CONFIG.md, "The tools lock file"). Only the lock goes to stdout.`,
		groups: []flagGroup{
			{"replica", []string{"upstream", "authorization-file", "timeout"}},
		},
		examples: []string{
			"mcpfleet tools lock --upstream http://127.0.0.1:9001/mcp > tools.lock",
			"mcpfleet tools lock --upstream https://mcp.internal/mcp --authorization-file ~/.config/mcpfleet/probe-token > tools.lock",
		},
	},
	"probe": {
		usage: "probe --url URL [flags]",
		about: `Proves what the balancer in front of a fleet does with affinity: calls the
whoami tool as N synthetic identities (Authorization: Bearer <prefix><i>),
M times each, and reports stickiness, spread over the replicas and, given a
baseline, how many identities moved since.`,
		groups: []flagGroup{
			{"target", []string{"url", "host", "timeout"}},
			{"workload", []string{"identities", "requests", "concurrency", "token-prefix"}},
			{"report", []string{"baseline", "save", "expect", "json"}},
		},
		examples: []string{
			"mcpfleet probe --url http://127.0.0.1:8080/mcp --expect sticky",
			"mcpfleet probe --url http://127.0.0.1:8080/mcp --save before.json",
			"mcpfleet probe --url http://127.0.0.1:8080/mcp --baseline before.json",
		},
	},
	"chaos": {
		about: `The chaos preset of mcpfleet load (docs/CHAOS.md): testserver replicas
behind mcpfleet serve, SDK clients sending the lab's mix scaled down, in
real time, and a rolling restart in the middle, of the replicas or of
gateway processes behind HAProxy. The table (or JSON) goes to stdout,
progress to stderr.`,
		groups: []flagGroup{
			{"fleet", []string{"replicas", "gateways"}},
			{"rolling restart", []string{"roll", "kill", "drain-delay", "grace", "downtime"}},
			{"traffic", []string{"era", "sessions", "rate", "duration", "seed", "idempotency-keys"}},
			{"output", []string{"json", "q"}},
		},
		examples: []string{
			"mcpfleet chaos",
			"mcpfleet chaos --era 2025 --kill kill",
			"mcpfleet chaos --roll gateways --idempotency-keys",
		},
	},
	"load": {
		usage: "load (--url URL | --fleet N) [flags]",
		about: `Sends the simulator's traffic for a scenario (docs/SIM.md: the same calls,
clients and durations as mcpfleet sim draws) with official Go SDK clients,
time-compressed by --speed, to an endpoint on loopback or to a local fleet
it starts (N testserver replicas and the front --routing names: mcpfleet
serve processes, or HAProxy for round-robin and affinity; an idle-timeout
proxy in front with --idle-timeout; a rolling deploy with --deploy), and
prints the simulator's figures beside the simulator's own prediction and
where the CPU went (docs/LOAD.md). --json prints the run in the schema of
mcpfleet sim --json.

Settings are layered as mcpfleet sim's: defaults, --mission N's broken
setup (--fixed: its reference answer), --scenario FILE, the flags given.`,
		groups: append([]flagGroup{
			{"target", []string{"url", "fleet", "speed", "replica-cores", "burn"}},
			{"setup", []string{"scenario", "mission", "fixed", "calibrate"}},
			{"where the CPU goes", []string{"pids", "match"}},
			{"output", []string{"json", "q"}},
		}, scenarioGroups...),
		examples: []string{
			"mcpfleet load --fleet 3 --mission 2",
			"mcpfleet load --url http://127.0.0.1:8080/mcp --clients 20 --traffic 60",
			"mcpfleet load --fleet 3 --calibrate all",
		},
	},
	"lab": {
		usage: "lab [--listen ADDR]",
		about: `Serves the fleet lab in a browser (docs/LAB.md): one page, its assets
embedded, backed by the simulator in-process. Open the printed address.`,
		groups:   []flagGroup{{"listener", []string{"listen"}}},
		examples: []string{"mcpfleet lab", "mcpfleet lab --listen 127.0.0.1:18090"},
	},
	"sim": {
		about: `Runs the deterministic fleet simulator (docs/SIM.md): synthetic MCP
clients, a load balancer and replicas on a virtual clock, routed by the
gateway's own code. The same seed and settings give the same figures.

Settings are layered: defaults, then --mission N's broken setup, then
--scenario FILE (JSON, the keys of --json's "scenario"), then the flags
given. --sweep PARAM=a,b,c runs one setting per value side by side.`,
		groups: append([]flagGroup{
			{"setup", []string{"scenario", "mission", "sweep", "workers", "new-seed"}},
			{"output", []string{"json", "assumptions"}},
		}, scenarioGroups...),
		examples: []string{
			"mcpfleet sim --mission 1",
			"mcpfleet sim --routing mcpfleet --deploy --sweep drain=5,30,120",
			"mcpfleet sim --scenario mine.json --json",
		},
	},
}

// scenarioGroups are the simulator's scenario settings, flags of both sim
// and load.
var scenarioGroups = []flagGroup{
	{"traffic", []string{"seed", "clients", "arrival-rate", "traffic", "duration-median", "duration-sigma",
		"duration-cap", "mutate-share", "mutate-from", "mutate-to", "round-trip", "max-reissues"}},
	{"injected trouble", []string{"slow-tools", "slow-share", "slow-min", "slow-max", "progress-min",
		"progress-max", "hot-client", "hot-factor", "runaway", "runaway-rate", "new-tool", "new-tool-share"}},
	{"fleet and routing", []string{"protocol", "routing", "replicas", "slots", "gateways", "idle-timeout",
		"keep-alive", "mcpfleet-epsilon", "mcpfleet-min-load", "max-inflight", "queue-timeout", "tools-refresh"}},
	{"rolling deploy", []string{"deploy", "deploy-at", "drain", "reboot", "idempotency"}},
	{"limits", []string{"limit-store", "limit-rate", "limit-burst", "limit-concurrency"}},
}
