package main

import (
	"context"
	"fmt"
	"io"

	"github.com/mcpfleet/mcpfleet/internal/version"
	"github.com/prometheus/client_golang/prometheus"
)

// runVersion prints which build this is: version, commit, commit time, Go
// version and platform (mcpfleet version, mcpfleet --version).
func runVersion(_ context.Context, args []string, stdout, _ io.Writer) error {
	fs := newFlagSet("version")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	fmt.Fprint(stdout, version.Get())
	return nil
}

// buildInfoGauge is mcpfleet_build_info: 1, labelled with the build's
// version, commit and Go version, so that a dashboard can tell which
// gateways run which build (the Prometheus convention of an info metric).
func buildInfoGauge(in version.Info) prometheus.Collector {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "mcpfleet_build_info",
		Help: "Which build is running: always 1, labelled with its version, commit and Go version.",
		ConstLabels: prometheus.Labels{
			"version": in.Version, "commit": in.Commit, "goversion": in.GoVersion,
		},
	})
	g.Set(1)
	return g
}
