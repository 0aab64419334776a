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

const usage = `mcpfleet: the MCP-aware load balancer

usage: mcpfleet <command> [flags]

commands:
  serve        run the gateway in front of a fleet of MCP replicas
  demo         run a whole local fleet (three test servers and the gateway)
  testserver   run one MCP test server (official Go SDK), both protocol eras
  secret       print a new secret file (session keys, routing salt) for serve
  health       exit 0 if serve's /healthz answers 200 (the image's HEALTHCHECK)
  fleet        the fleet as several gateways see it (their admin /api/fleet), drain or resume a replica on all
  lbconfig     emit nginx or HAProxy configs that keep the fleet's rules
  tools        tools lock: print the lock of a replica's tool definitions (tools.lock_file)
  probe        prove what a load balancer does with affinity: stickiness, spread, moves
  chaos        a rolling restart under load on loopback: lost, killed and doubled calls
  load         the simulator's traffic against a real fleet, beside the simulator's prediction and where the CPU went
  lab          the simulator as a web page with missions (http://127.0.0.1:8090)
  sim          simulate a fleet on virtual time with the gateway's own routing code; missions

Run 'mcpfleet <command> -h' for a command's flags.
`

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
// success, 2 for bad usage, 1 for any other failure.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	cmds := map[string]func(context.Context, []string, io.Writer, io.Writer) error{
		"serve":      runServe,
		"demo":       runDemo,
		"testserver": runTestserver,
		"secret":     runSecret,
		"health":     runHealth,
		"probe":      runProbe,
		"sim":        runSim,
		"chaos":      runChaos,
		"load":       runLoad,
		"lab":        runLab,
		"lbconfig":   runLbconfig,
		"fleet":      runFleet,
		"tools":      runTools,
		"version":    runVersion,
	}
	if args[0] == "--version" {
		args = append([]string{"version"}, args[1:]...)
	}
	cmd, ok := cmds[args[0]]
	if !ok {
		if args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
			fmt.Fprint(stdout, usage)
			return 0
		}
		fmt.Fprintf(stderr, "mcpfleet: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	err := cmd(ctx, args[1:], stdout, stderr)
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, new(usageError)):
		fmt.Fprintf(stderr, "mcpfleet %s: %v\n", args[0], err)
		return 2
	}
	fmt.Fprintf(stderr, "mcpfleet %s: %v\n", args[0], err)
	return 1
}

// usageError marks bad flags or arguments (exit code 2).
type usageError struct{ error }

// parseFlags parses args and wraps failures as usage errors.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err}
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
