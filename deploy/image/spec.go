package main

import (
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// The image's contract with whoever runs it (the Helm chart, docs/IMAGE.md),
// stated once: the builder writes these values into the image, and the
// tests hold both that image and the root Dockerfile to them.
const (
	// binaryPath is where mcpfleet lives in the image.
	binaryPath = "/mcpfleet"
	// imageUser is the numeric uid:gid the process runs as: not root, and
	// numeric so that a runtime can check runAsNonRoot without /etc/passwd.
	imageUser = "65532:65532"
	// configPath is where serve reads its configuration; nothing is there
	// until one is mounted.
	configPath = "/etc/mcpfleet/mcpfleet.yaml"
	// caBundlePath is Debian's CA bundle, the first place Go's crypto/x509
	// looks on Linux, so https upstreams, JWKS URLs and rediss work with no
	// SSL_CERT_FILE.
	caBundlePath = "/etc/ssl/certs/ca-certificates.crt"
	// imageTitle and imageSource are the OCI title and source labels.
	imageTitle  = "mcpfleet"
	imageSource = "https://github.com/mcpfleet/mcpfleet"
)

// passwd and group name root, who owns every file, and nonroot, the uid and
// gid of imageUser, so that tools show names; nobody has a shell or a home.
const (
	passwd = "root:x:0:0:root:/root:/sbin/nologin\n" +
		"nonroot:x:65532:65532:nonroot:/nonexistent:/sbin/nologin\n"
	group = "root:x:0:\n" +
		"nonroot:x:65532:\n"
)

var (
	// entrypoint and cmd start the gateway on the mounted configuration.
	entrypoint = []string{binaryPath}
	cmd        = []string{"serve", "--config", configPath}
	// exposedPorts are the MCP listener (/mcp, /healthz, /readyz) and the
	// admin listener (/metrics); the configuration must listen on them on
	// 0.0.0.0.
	exposedPorts = []string{"8080/tcp", "9090/tcp"}
	// healthcheck runs 'mcpfleet health', which GETs /healthz on 8080: the
	// image has no shell to run curl with.
	healthcheck = v1.HealthConfig{
		Test:     []string{"CMD", binaryPath, "health"},
		Interval: 10 * time.Second,
		Timeout:  3 * time.Second,
	}
)

// imageConfig returns the runtime configuration of the image, labels
// included. Env is left empty: Go finds caBundlePath by itself, and nothing
// else is needed.
func imageConfig(labels map[string]string) v1.Config {
	ports := make(map[string]struct{}, len(exposedPorts))
	for _, p := range exposedPorts {
		ports[p] = struct{}{}
	}
	hc := healthcheck
	return v1.Config{
		User:         imageUser,
		Entrypoint:   entrypoint,
		Cmd:          cmd,
		ExposedPorts: ports,
		Healthcheck:  &hc,
		WorkingDir:   "/",
		Labels:       labels,
	}
}
