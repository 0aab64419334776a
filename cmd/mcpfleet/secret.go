package main

import (
	"context"
	"crypto/rand"
	"io"

	"github.com/mcpfleet/mcpfleet/internal/config"
)

// runSecret prints a fresh secret file: a session key and a routing salt.
// Every gateway process of a fleet must use the same file.
func runSecret(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("secret")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	s, err := config.RandomSecret(rand.Reader)
	if err != nil {
		return err
	}
	return config.WriteSecretFile(stdout, s)
}
