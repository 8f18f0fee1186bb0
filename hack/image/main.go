// Command image builds the container image of kubectl-cmsync without a
// registry or a container daemon: one layer holding a static binary (built
// by the caller with CGO_ENABLED=0) at /kubectl-cmsync, its entrypoint, run
// as a non-root user, written as a tarball that `ctr images import` and
// `docker load` read. Timestamps are fixed, so the same binary gives the same
// image digest.
//
//	go run ./hack/image -binary dist/image/kubectl-cmsync -tag localhost/kubectl-cmsync:dev -o dist/image/kubectl-cmsync.tar
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// nonRoot is the user the image runs as (the distroless "nonroot" user).
const nonRoot = "65532:65532"

func main() {
	binary := flag.String("binary", "", "the static kubectl-cmsync binary to put in the image (required)")
	tag := flag.String("tag", "localhost/kubectl-cmsync:dev", "the image's name and tag")
	out := flag.String("o", "", "the tarball to write (required)")
	arch := flag.String("arch", runtime.GOARCH, "the binary's architecture (linux only)")
	flag.Parse()
	if err := build(*binary, *tag, *out, *arch); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func build(binary, tag, out, arch string) error {
	if binary == "" || out == "" {
		return fmt.Errorf("-binary and -o are required")
	}
	ref, err := name.NewTag(tag)
	if err != nil {
		return fmt.Errorf("-tag %q: %v", tag, err)
	}
	content, err := os.ReadFile(binary)
	if err != nil {
		return err
	}
	img, err := image(content, arch)
	if err != nil {
		return err
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	if err := tarball.Write(ref, img, f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// image is the one-layer image of the binary.
func image(binary []byte, arch string) (v1.Image, error) {
	layerTar, err := layer(binary)
	if err != nil {
		return nil, err
	}
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	})
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(empty.Image, l)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", arch
	cf.Created = v1.Time{Time: time.Unix(0, 0).UTC()}
	cf.Config.Entrypoint = []string{"/kubectl-cmsync"}
	cf.Config.User = nonRoot
	cf.Config.Env = []string{"PATH=/"}
	cf.Config.Labels = map[string]string{"org.opencontainers.image.title": "kubectl-cmsync"}
	return mutate.ConfigFile(img, cf)
}

// layer is a tar of the binary at /kubectl-cmsync (mode 0755, owned by
// root, fixed time).
func layer(binary []byte) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	hdr := &tar.Header{Name: "kubectl-cmsync", Mode: 0o755, Size: int64(len(binary)),
		Typeflag: tar.TypeReg, ModTime: time.Unix(0, 0), Format: tar.FormatPAX}
	if err := tw.WriteHeader(hdr); err != nil {
		return nil, err
	}
	if _, err := tw.Write(binary); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
