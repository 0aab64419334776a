package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/mcpfleet/mcpfleet/internal/config"
	"github.com/mcpfleet/mcpfleet/internal/lbconfig"
)

// runLbconfig runs the lbconfig command (its help: helptext.go).
func runLbconfig(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("lbconfig")
	file := fs.String("config", "", "the gateway's YAML configuration `file` (required)")
	saltFile := fs.String("salt-file", "", "secret `file` whose routing_salt salts the key (default: the config's secret_file)")
	listen := fs.String("listen", "", "the balancer's listen `address` (default: the config's listen)")
	var kind string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		kind, args = args[0], args[1:]
	}
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if kind == "" && fs.NArg() > 0 {
		// The kind after some flags: parse the flags that follow it too.
		kind = fs.Arg(0)
		if err := parseFlags(fs, fs.Args()[1:]); err != nil {
			return err
		}
	} else if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	}
	emit := map[string]func(lbconfig.Spec) ([]byte, error){"nginx": lbconfig.Nginx, "haproxy": lbconfig.HAProxy}[kind]
	switch {
	case emit == nil:
		return usageError{fmt.Errorf("want nginx or haproxy, got %q", kind)}
	case *file == "":
		return usageError{errors.New("--config: required")}
	}
	c, err := config.Load(*file)
	if err != nil {
		return err
	}
	salt, generated, err := routingSalt(*saltFile, c.SecretFile)
	if err != nil {
		return err
	}
	spec, err := lbconfig.FromConfig(c, salt, generated, *listen)
	if err != nil {
		return err
	}
	out, err := emit(spec)
	if err != nil {
		return err
	}
	if generated {
		fmt.Fprintln(stderr, "mcpfleet lbconfig: no secret file: generated a routing salt; keep the emitted salt stable")
	}
	_, err = stdout.Write(out)
	return err
}

// routingSalt reads the routing salt from saltFile, else secretFile, else
// makes a random one and says so.
func routingSalt(saltFile, secretFile string) (salt []byte, generated bool, err error) {
	if saltFile == "" {
		saltFile = secretFile
	}
	if saltFile == "" {
		s, err := config.RandomSecret(rand.Reader)
		if err != nil {
			return nil, false, err
		}
		return s.Salt, true, nil
	}
	s, err := config.ReadSecret(saltFile)
	if err != nil {
		return nil, false, err
	}
	return s.Salt, false, nil
}
