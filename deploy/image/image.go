package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"path"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// entry is one file or directory of a layer, owned by root.
type entry struct {
	// name is the path without the leading "/"; a directory's ends in "/".
	name string
	mode int64
	data []byte
}

// built is an assembled image and what it weighs.
type built struct {
	img v1.Image
	// tarBytes is the layers' size unpacked, as 'docker images' counts it;
	// gzipBytes is what a registry stores and a pull fetches.
	tarBytes, gzipBytes int64
}

// assemble makes the image from scratch: one layer of /etc files (passwd,
// group, the CA bundle, the empty directory the configuration is mounted
// in) and one of the binary, then the configuration of spec.go. Every time
// in it is src.created, so the same inputs give the same digest.
func assemble(binary, caBundle []byte, arch string, src source) (built, error) {
	layers := []struct {
		entries []entry
		by      string
	}{
		{etcEntries(caBundle), "deploy/image: /etc/passwd, /etc/group, " + caBundlePath + ", " + path.Dir(configPath) + "/"},
		{[]entry{{name: binaryPath[1:], mode: 0o555, data: binary}}, "deploy/image: go build -trimpath -ldflags='-s -w' ./cmd/mcpfleet (CGO_ENABLED=0)"},
	}
	var b built
	img := empty.Image
	for _, l := range layers {
		layer, size, err := tarLayer(l.entries, src.created)
		if err != nil {
			return built{}, err
		}
		gz, err := layer.Size()
		if err != nil {
			return built{}, err
		}
		b.tarBytes, b.gzipBytes = b.tarBytes+size, b.gzipBytes+gz
		img, err = mutate.Append(img, mutate.Addendum{
			Layer:   layer,
			History: v1.History{Created: v1.Time{Time: src.created}, CreatedBy: l.by},
		})
		if err != nil {
			return built{}, fmt.Errorf("adding a layer: %w", err)
		}
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return built{}, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Created = "linux", arch, v1.Time{Time: src.created}
	cf.Config = imageConfig(labels(src))
	if b.img, err = mutate.ConfigFile(img, cf); err != nil {
		return built{}, fmt.Errorf("setting the image configuration: %w", err)
	}
	return b, nil
}

// etcEntries are the files of the /etc layer: the directories (the
// configuration's empty), passwd, group and the CA bundle.
func etcEntries(caBundle []byte) []entry {
	var etc []entry
	for _, d := range []string{"etc/", path.Dir(configPath)[1:] + "/", "etc/ssl/", path.Dir(caBundlePath)[1:] + "/"} {
		etc = append(etc, entry{name: d, mode: 0o755})
	}
	return append(etc,
		entry{name: "etc/passwd", mode: 0o444, data: []byte(passwd)},
		entry{name: "etc/group", mode: 0o444, data: []byte(group)},
		entry{name: caBundlePath[1:], mode: 0o444, data: caBundle},
	)
}

// tarLayer writes entries as a gzip-compressed layer with every time set to
// mtime, and returns it with its unpacked size.
func tarLayer(entries []entry, mtime time.Time) (v1.Layer, int64, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, ModTime: mtime, Typeflag: tar.TypeReg, Size: int64(len(e.data)), Format: tar.FormatUSTAR}
		if strings.HasSuffix(e.name, "/") {
			h.Typeflag, h.Size = tar.TypeDir, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, 0, fmt.Errorf("writing %s into a layer: %w", e.name, err)
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, 0, fmt.Errorf("writing %s into a layer: %w", e.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, 0, err
	}
	raw := buf.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(raw)), nil
	}, tarball.WithCompressionLevel(gzip.BestCompression), tarball.WithCompressedCaching)
	if err != nil {
		return nil, 0, fmt.Errorf("compressing a layer: %w", err)
	}
	return layer, int64(len(raw)), nil
}

// labels are the OCI annotations of the image's configuration
// (opencontainers/image-spec annotations.md).
func labels(src source) map[string]string {
	l := map[string]string{
		"org.opencontainers.image.title":       imageTitle,
		"org.opencontainers.image.description": "The load balancer for fleets of MCP servers",
		"org.opencontainers.image.source":      imageSource,
		"org.opencontainers.image.version":     src.version,
		"org.opencontainers.image.created":     src.created.Format(time.RFC3339),
	}
	if src.revision != "" {
		l["org.opencontainers.image.revision"] = src.revision
	}
	if src.licenses != "" {
		l["org.opencontainers.image.licenses"] = src.licenses
	}
	return l
}
