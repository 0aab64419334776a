package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// writeLayout writes img as the only image of an OCI image layout at dir,
// named by tag's tag (org.opencontainers.image.ref.name), for skopeo's and
// podman's oci: transport. A layout already at dir is replaced; any other
// non-empty directory is refused.
func writeLayout(dir string, img v1.Image, tag name.Tag) error {
	if err := clearLayout(dir); err != nil {
		return err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("writing the OCI layout: %w", err)
	}
	ann := map[string]string{"org.opencontainers.image.ref.name": tag.TagStr()}
	if err := p.AppendImage(img, layout.WithAnnotations(ann)); err != nil {
		return fmt.Errorf("writing the OCI layout: %w", err)
	}
	return nil
}

// clearLayout makes dir ready for a new layout: absent or empty is fine, a
// previous layout (it has an oci-layout file) is removed, anything else is
// left alone and refused.
func clearLayout(dir string) error {
	names, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && len(names) == 0) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading --out: %w", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "oci-layout")); err != nil {
		return fmt.Errorf("--out %s is neither empty nor an OCI layout", dir)
	}
	for _, n := range []string{"blobs", "index.json", "oci-layout"} {
		if err := os.RemoveAll(filepath.Join(dir, n)); err != nil {
			return fmt.Errorf("replacing the layout at %s: %w", dir, err)
		}
	}
	return nil
}

// writeArchive writes img tagged tag as a 'docker save' archive at file,
// which docker load, podman load and kind load image-archive read.
func writeArchive(file string, img v1.Image, tag name.Tag) error {
	tmp := file + ".tmp"
	if err := tarball.WriteToFile(tmp, tag, img); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing the image archive: %w", err)
	}
	if err := os.Rename(tmp, file); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing the image archive: %w", err)
	}
	return nil
}
