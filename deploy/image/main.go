// Command image builds mcpfleet's container image with no Docker daemon and
// no network: it compiles cmd/mcpfleet as a static Linux binary and
// assembles, with go-containerregistry, the image the root Dockerfile
// describes (FROM scratch, the binary, /etc/passwd and /etc/group, Debian's
// CA bundle). See docs/IMAGE.md.
//
//	cd deploy/image && go run . --out DIR    # an OCI image layout
//	cd deploy/image && go run . --tar FILE   # an archive for docker/podman load
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
)

const usage = `usage: go run . [--out DIR] [--tar FILE] [--tag NAME:TAG] [--arch ARCH] [--version V]

Builds mcpfleet's container image offline (docs/IMAGE.md): at least one of
--out (an OCI image layout: skopeo copy oci:DIR ..., podman pull oci:DIR)
and --tar (a docker save archive: docker load -i, podman load -i,
kind load image-archive). The same tree builds the same digest.

flags:
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// options are the builder's flags.
type options struct {
	out, tar, tag, arch, src, caBundle string
	// version, when set, is the release's: the image's version label,
	// its default tag and what the binary's version command says.
	version string
}

// run builds the image and returns the exit code: 0, 2 for bad usage, 1 for
// a failed build.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usage)
		fs.PrintDefaults()
	}
	var o options
	fs.StringVar(&o.out, "out", "", "write an OCI image layout to `DIR` (empty, absent, or a layout to replace)")
	fs.StringVar(&o.tar, "tar", "", "write a docker save archive to `FILE`")
	fs.StringVar(&o.tag, "tag", "", "the image's name in the archive and layout (default mcpfleet:VERSION)")
	fs.StringVar(&o.arch, "arch", runtime.GOARCH, "GOARCH of the binary and the image: amd64 or arm64")
	fs.StringVar(&o.src, "src", "", "the mcpfleet module's `directory` (default: found above the working directory)")
	fs.StringVar(&o.version, "version", "", "the release's `version` (0.2.0): label, default tag and the binary's own (default: git describe, the binary says devel)")
	fs.StringVar(&o.caBundle, "ca-bundle", caBundlePath, "the CA bundle `file` to ship (Debian's ca-certificates)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if err := o.check(fs); err != nil {
		fmt.Fprintf(stderr, "image: %v\n", err)
		return 2
	}
	if err := build(ctx, o, stdout); err != nil {
		fmt.Fprintf(stderr, "image: %v\n", err)
		return 1
	}
	return 0
}

// check refuses flags that cannot make an image.
func (o options) check(fs *flag.FlagSet) error {
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case o.out == "" && o.tar == "":
		return errors.New("nothing to write: give --out DIR, --tar FILE or both")
	case o.arch != "amd64" && o.arch != "arm64":
		return fmt.Errorf("--arch %q: amd64 or arm64", o.arch)
	}
	return nil
}

// build compiles the binary, assembles the image and writes it where o
// says, then prints its digest and size.
func build(ctx context.Context, o options, stdout io.Writer) error {
	start := time.Now()
	if o.src == "" {
		var err error
		if o.src, err = findRoot("."); err != nil {
			return err
		}
	}
	src, err := readSource(ctx, o.src)
	if err != nil {
		return err
	}
	release := o.version != ""
	if release {
		src.version = o.version
	}
	if o.tag == "" {
		o.tag = imageTitle + ":" + src.version
	}
	tag, err := name.NewTag(o.tag, name.WithDefaultRegistry(""))
	if err != nil {
		return fmt.Errorf("--tag %q: %w", o.tag, err)
	}
	ca, err := os.ReadFile(o.caBundle)
	if err != nil {
		return fmt.Errorf("reading the CA bundle (apt-get install ca-certificates, or pass --ca-bundle): %w", err)
	}
	tmp, err := os.MkdirTemp("", "mcpfleet-image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bin, err := compile(ctx, src.dir, o.arch, tmp, src.stamps(release))
	if err != nil {
		return err
	}
	binary, err := os.ReadFile(bin)
	if err != nil {
		return err
	}
	b, err := assemble(binary, ca, o.arch, src)
	if err != nil {
		return err
	}
	if o.out != "" {
		if err := writeLayout(o.out, b.img, tag); err != nil {
			return err
		}
	}
	if o.tar != "" {
		if err := writeArchive(o.tar, b.img, tag); err != nil {
			return err
		}
	}
	digest, err := b.img.Digest()
	if err != nil {
		return err
	}
	const mib = 1 << 20
	fmt.Fprintf(stdout, "%s linux/%s %s: %.1f MiB unpacked, %.1f MiB compressed, built in %s\n",
		tag, o.arch, digest, float64(b.tarBytes)/mib, float64(b.gzipBytes)/mib, time.Since(start).Round(100*time.Millisecond))
	return nil
}
