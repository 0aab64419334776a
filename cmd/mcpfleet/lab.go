package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/lab"
)

// runLab runs the lab command (its help: helptext.go).
func runLab(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("lab")
	listen := fs.String("listen", "127.0.0.1:8090", "address to serve the lab on")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	ln, err := listenTCP("--listen", *listen)
	if err != nil {
		return err
	}
	srv := lab.NewServer(*listen, lab.New(nil))
	fmt.Fprintf(stdout, "mcpfleet lab: open http://%s/ (Ctrl-C to stop)\n", ln.Addr())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return fmt.Errorf("serving the lab: %w", err)
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		return fmt.Errorf("stopping the lab: %w", err)
	}
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving the lab: %w", err)
	}
	return nil
}
