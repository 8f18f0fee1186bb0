package main

import (
	"archive/tar"
	"io"
	"testing"
)

func TestImage(t *testing.T) {
	img, err := image([]byte("#!binary"), "arm64")
	if err != nil {
		t.Fatal(err)
	}
	again, err := image([]byte("#!binary"), "arm64")
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
