// Command image builds the container image of kubectl-cmsync without a
// registry or a container daemon: one layer holding a static binary (built
// by the caller with CGO_ENABLED=0) at /kubectl-cmsync, its entrypoint, run
// as a non-root user. Timestamps are fixed, so the same binary gives the same
// image digest.
//
// With one binary it writes a tarball of that image that `ctr images import`
// and `docker load` read (what make image builds for the local cluster):
//
//	go run ./hack/image -binary dist/image/kubectl-cmsync -tag localhost/kubectl-cmsync:dev -o dist/image/kubectl-cmsync.tar
//
// With -layout it writes an OCI image layout holding an image index of one
// image per binary, each given as ARCH=PATH (linux only), the index named
// -tag (what the release publishes, hack/release/image.sh):
//
//	go run ./hack/image -binary amd64=dist/image/linux_amd64/kubectl-cmsync -binary arm64=dist/image/linux_arm64/kubectl-cmsync \
//	  -tag ghcr.io/kubectl-cmsync/kubectl-cmsync:v0.1.0 -layout dist/image/oci
//
// -push then copies that index to the registry of -tag (credentials from
// REGISTRY_USER and REGISTRY_PASSWORD, or none).
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// nonRoot is the user the image runs as (the distroless "nonroot" user).
const nonRoot = "65532:65532"

// binaries is the repeated -binary flag: PATH, or ARCH=PATH.
type binaries []string

func (b *binaries) String() string     { return strings.Join(*b, ",") }
func (b *binaries) Set(v string) error { *b = append(*b, v); return nil }

func main() {
	var bins binaries
	flag.Var(&bins, "binary", "the static kubectl-cmsync binary to put in the image: PATH (of -arch), or ARCH=PATH; repeat it for an index (required)")
	tag := flag.String("tag", "localhost/kubectl-cmsync:dev", "the image's (or the index's) name and tag")
	out := flag.String("o", "", "the tarball to write (one binary)")
	lay := flag.String("layout", "", "the OCI image layout directory to write the image index to")
	push := flag.Bool("push", false, "with -layout: push the index to the registry of -tag")
	arch := flag.String("arch", runtime.GOARCH, "the architecture of a -binary given without ARCH= (linux only)")
	flag.Parse()
	var err error
	switch {
	case *lay != "":
		err = buildIndex(bins, *arch, *tag, *lay, *push)
	case *push:
		err = fmt.Errorf("-push needs -layout")
	case len(bins) != 1:
		err = fmt.Errorf("a tarball holds one image: give one -binary, or -layout for an index")
	default:
		err = build(bins[0], *tag, *out, *arch)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

// splitBinary reads a -binary value: ARCH=PATH, or PATH of arch.
func splitBinary(v, arch string) (string, string) {
	if a, p, ok := strings.Cut(v, "="); ok {
		return a, p
	}
	return arch, v
}

func build(binary, tag, out, arch string) error {
	arch, binary = splitBinary(binary, arch)
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
	img, err := image(content, arch, types.DockerLayer)
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

// buildIndex writes the index of bins to an OCI layout at dir, and pushes
// it to tag's registry when push is set.
func buildIndex(bins []string, defArch, tag, dir string, push bool) error {
	if len(bins) == 0 {
		return fmt.Errorf("-layout needs at least one -binary")
	}
	ref, err := name.NewTag(tag)
	if err != nil {
		return fmt.Errorf("-tag %q: %v", tag, err)
	}
	byArch := map[string][]byte{}
	for _, b := range bins {
		arch, path := splitBinary(b, defArch)
		if _, dup := byArch[arch]; dup {
			return fmt.Errorf("two binaries for %s", arch)
		}
		if byArch[arch], err = os.ReadFile(path); err != nil {
			return err
		}
	}
	idx, err := index(byArch)
	if err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": ref.String(),
	})); err != nil {
		return err
	}
	if !push {
		return nil
	}
	auth := authn.Anonymous
	if u := os.Getenv("REGISTRY_USER"); u != "" {
		auth = &authn.Basic{Username: u, Password: os.Getenv("REGISTRY_PASSWORD")}
	}
	return remote.WriteIndex(ref, idx, remote.WithAuth(auth))
}

// index is the OCI image index of one image per architecture (linux), in
// the order of the architectures' names.
func index(byArch map[string][]byte) (v1.ImageIndex, error) {
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, a := range slices.Sorted(maps.Keys(byArch)) {
		img, err := image(byArch[a], a, types.OCILayer)
		if err != nil {
			return nil, err
		}
		// OCI media types throughout, as an OCI index expects of its manifests
		img = mutate.ConfigMediaType(mutate.MediaType(img, types.OCIManifestSchema1), types.OCIConfigJSON)
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img,
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: a}}})
	}
	return idx, nil
}

// image is the one-layer image of the binary, the layer of media type lt.
func image(binary []byte, arch string, lt types.MediaType) (v1.Image, error) {
	layerTar, err := layer(binary)
	if err != nil {
		return nil, err
	}
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(lt))
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
