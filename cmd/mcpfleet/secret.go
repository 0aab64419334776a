package main

import (
	"context"
	"crypto/rand"
	"flag"
	"io"

	"github.com/mcpfleet/mcpfleet/internal/config"
)

// runSecret prints a fresh secret file: a session key and a routing salt.
// Every gateway process of a fleet must use the same file.
func runSecret(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("secret", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		io.WriteString(stderr, "usage: mcpfleet secret > secret.yaml && chmod 600 secret.yaml\n")
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	s, err := config.RandomSecret(rand.Reader)
	if err != nil {
		return err
	}
	return config.WriteSecretFile(stdout, s)
}
