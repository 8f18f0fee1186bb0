package main

import (
	"archive/tar"
	"io"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

func TestImage(t *testing.T) {
	img, err := image([]byte("#!binary"), "arm64", types.DockerLayer)
	if err != nil {
		t.Fatal(err)
	}
	again, err := image([]byte("#!binary"), "arm64", types.DockerLayer)
	if err != nil {
		t.Fatal(err)
	}
	d1, err1 := img.Digest()
	d2, err2 := again.Digest()
	if err1 != nil || err2 != nil {
		t.Fatalf("digests: %v, %v", err1, err2)
	}
	if d1 != d2 {
		t.Fatalf("the same binary gave two digests: %s %s", d1, d2)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.OS != "linux" || cf.Architecture != "arm64" || cf.Config.User != "65532:65532" ||
		len(cf.Config.Entrypoint) != 1 || cf.Config.Entrypoint[0] != "/kubectl-cmsync" {
		t.Fatalf("config: os %s arch %s user %s entrypoint %v", cf.OS, cf.Architecture, cf.Config.User, cf.Config.Entrypoint)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers: %d %v", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	hdr, err := tr.Next()
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(tr)
	if hdr.Name != "kubectl-cmsync" || hdr.Mode != 0o755 || string(body) != "#!binary" {
		t.Fatalf("layer entry %s mode %o content %q", hdr.Name, hdr.Mode, body)
	}
	if _, err := tr.Next(); err != io.EOF {
		t.Fatalf("more than one entry in the layer: %v", err)
	}
}

// The release's index: one image per architecture, each platform in the
// index and in its image's config, each layer the binary of its
// architecture; written as an OCI layout under the tag, and pushed as is to
// a registry (an in-memory one here).
func TestIndex(t *testing.T) {
	dir := t.TempDir()
	var bins []string
	for _, a := range []string{"amd64", "arm64"} {
		p := filepath.Join(dir, a)
		if err := os.WriteFile(p, []byte("#!"+a), 0o755); err != nil {
			t.Fatal(err)
		}
		bins = append(bins, a+"="+p)
	}
	srv := httptest.NewServer(registry.New())
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	tag := u.Host + "/kubectl-cmsync/kubectl-cmsync:v0.0.1"
	out := filepath.Join(dir, "oci")
	if err := buildIndex(bins, "", tag, out, true); err != nil {
		t.Fatal(err)
	}
	p, err := layout.FromPath(out)
	if err != nil {
		t.Fatal(err)
	}
	top, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	im, err := top.IndexManifest()
	if err != nil || len(im.Manifests) != 1 || im.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != tag {
		t.Fatalf("the layout's index: %+v %v, want one index named %s", im, err, tag)
	}
	idx, err := top.ImageIndex(im.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	checkIndex(t, "layout", idx)

	ref, _ := name.ParseReference(tag)
	pushed, err := remote.Index(ref)
	if err != nil {
		t.Fatalf("the pushed index: %v", err)
	}
	d1, _ := idx.Digest()
	d2, _ := pushed.Digest()
	if d1 != d2 {
		t.Errorf("pushed %s, built %s", d2, d1)
	}
	checkIndex(t, "registry", pushed)
	for _, platform := range []string{"linux/amd64", "linux/arm64"} {
		pl, _ := v1.ParsePlatform(platform)
		img, err := remote.Image(ref, remote.WithPlatform(*pl))
		if err != nil {
			t.Errorf("pull of %s for %s: %v", tag, platform, err)
			continue
		}
		if cf, err := img.ConfigFile(); err != nil || cf.Architecture != pl.Architecture {
			t.Errorf("pull for %s resolved to %+v %v", platform, cf, err)
		}
	}

	if err := buildIndex([]string{bins[0], bins[0]}, "", tag, out, false); err == nil || !strings.Contains(err.Error(), "two binaries for amd64") {
		t.Errorf("two binaries of one architecture: %v", err)
	}
}

func checkIndex(t *testing.T, where string, idx v1.ImageIndex) {
	t.Helper()
	mt, _ := idx.MediaType()
	im, err := idx.IndexManifest()
	if err != nil || mt != types.OCIImageIndex || len(im.Manifests) != 2 {
		t.Fatalf("%s: index %s %+v %v, want an OCI index of 2 manifests", where, mt, im, err)
	}
	for i, arch := range []string{"amd64", "arm64"} {
		desc := im.Manifests[i]
		if desc.Platform == nil || desc.Platform.OS != "linux" || desc.Platform.Architecture != arch || desc.MediaType != types.OCIManifestSchema1 {
			t.Errorf("%s: manifest %d: %s %+v, want an OCI manifest for linux/%s", where, i, desc.MediaType, desc.Platform, arch)
			continue
		}
		img, err := idx.Image(desc.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil || cf.OS != "linux" || cf.Architecture != arch || cf.Config.User != nonRoot {
			t.Errorf("%s: linux/%s's config: %+v %v", where, arch, cf, err)
		}
		layers, err := img.Layers()
		if err != nil || len(layers) != 1 {
			t.Fatalf("%s: linux/%s: %d layers %v", where, arch, len(layers), err)
		}
		if lt, _ := layers[0].MediaType(); lt != types.OCILayer {
			t.Errorf("%s: linux/%s's layer is %s", where, arch, lt)
		}
		rc, err := layers[0].Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(rc)
		if _, err := tr.Next(); err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(tr)
		rc.Close()
		if string(body) != "#!"+arch {
			t.Errorf("%s: linux/%s's binary is %q", where, arch, body)
		}
	}
}
