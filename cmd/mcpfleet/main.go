// Command mcpfleet is the load balancer, gateway and lab for fleets of MCP
// servers that speak Streamable HTTP.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// command is one of mcpfleet's commands.
type command struct {
	name    string
	purpose string // one line, for mcpfleet help
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

// commands are mcpfleet's commands, in the order help lists them. Each
// command's help (helptext.go) groups its flags by topic.
var commands = []command{
	{"serve", "run the gateway in front of a fleet of MCP replicas", runServe},
	{"demo", "run a whole local fleet (three test servers and the gateway)", runDemo},
	{"testserver", "run one MCP test server (official Go SDK), both protocol eras", runTestserver},
	{"secret", "print a new secret file (session keys, routing salt) for serve", runSecret},
	{"health", "exit 0 if serve's /healthz answers 200 (the image's HEALTHCHECK)", runHealth},
	{"fleet", "the fleet as several gateways see it (their admin /api/fleet), drain or resume a replica on all", runFleet},
	{"lbconfig", "emit nginx or HAProxy configs that keep the fleet's rules", runLbconfig},
	{"tools", "tools lock: print the lock of a replica's tool definitions (tools.lock_file)", runTools},
	{"probe", "prove what a load balancer does with affinity: stickiness, spread, moves", runProbe},
	{"chaos", "a rolling restart under load on loopback: lost, killed and doubled calls", runChaos},
	{"load", "the simulator's traffic against a real fleet, beside the simulator's prediction and where the CPU went", runLoad},
	{"lab", "the simulator as a web page with missions (http://127.0.0.1:8090)", runLab},
	{"sim", "simulate a fleet on virtual time with the gateway's own routing code; missions", runSim},
	{"version", "print this build's version, commit, commit time, Go version and platform", runVersion},
}

// findCommand returns the command called name, or nil.
func findCommand(name string) *command {
	for i := range commands {
		if commands[i].name == name {
			return &commands[i]
		}
	}
	return nil
}

// commandPurpose is the purpose line of the command called name.
func commandPurpose(name string) string {
	if c := findCommand(name); c != nil {
		return c.purpose
	}
	return ""
}

// writeUsage lists the commands.
func writeUsage(w io.Writer) {
	fmt.Fprint(w, "mcpfleet: the MCP-aware load balancer\n\nusage: mcpfleet <command> [flags]\n\ncommands:\n")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-12s %s\n", c.name, c.purpose)
	}
	fmt.Fprint(w, "\nRun 'mcpfleet help <command>' (or 'mcpfleet <command> -h') for a command's flags and examples.\n")
}

func main() {
	ctx, stop := signalContext()
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// signalContext ends on Ctrl-C or SIGTERM.
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// run dispatches a command and returns the process's exit code: 0 on
// success and for help (on stdout), 2 for bad usage, 1 for any other
// failure (errors on stderr).
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		writeUsage(stderr)
		return 2
	}
	name, rest := args[0], args[1:]
	if name == "--version" {
		name = "version"
	}
	switch name {
	case "help", "-h", "-help", "--help":
		if len(rest) == 0 {
			writeUsage(stdout)
			return 0
		}
		// mcpfleet help CMD [SUBCOMMAND] is CMD [SUBCOMMAND] -h.
		name, rest = rest[0], append(rest[1:len(rest):len(rest)], "-h")
	}
	cmd := findCommand(name)
	if cmd == nil {
		fmt.Fprintf(stderr, "mcpfleet: unknown command %q\nRun 'mcpfleet help' for the commands.\n", name)
		return 2
	}
	err := cmd.run(ctx, rest, stdout, stderr)
	var help helpRequest
	switch {
	case err == nil:
		return 0
	case errors.As(err, &help):
		writeHelp(stdout, help.fs)
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, new(usageError)):
		fmt.Fprintf(stderr, "mcpfleet %s: %v\nRun 'mcpfleet help %s' for its usage and flags.\n", name, err, name)
		return 2
	}
	fmt.Fprintf(stderr, "mcpfleet %s: %v\n", name, err)
	return 1
}

// usageError marks bad flags or arguments (exit code 2).
type usageError struct{ error }

// parseFlags parses args, which must hold flags only: -h is a
// helpRequest, anything wrong a usageError.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	}
	return nil
}

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return fmt.Sprint(*l) }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }
