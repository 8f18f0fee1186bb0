package containerread

import (
	"strings"
	"testing"
)

func TestParseVerified(t *testing.T) {
	n := "cmsync-test"
	rec := func(fields ...string) string { return strings.Join(fields, "\x00") + "\x00" }
	paths := []string{"/a", "/b"}
	ok := rec("P", "0", "A", testTS, "D", "d", "F", "d/f", "-rw-r--r--", "3", "C") + "a\x00b" + rec(n) +
		rec("F", "big", "-r--------", "9999", "H", strings.Repeat("ab", 32)) +
		rec("F", "nosum", "?", "9999", "S") +
		rec("Q", testTS) +
		rec("P", "1", "K", "f", "F", "", "-rwsr-sr-t", "0", "C") + rec(n) + rec("Q", "") +
		"V\x00HOME=/root\x00A=b=c\x00" + rec(n) + rec("Z", n)
	obs, err := ParseVerified([]byte(ok), n, paths)
	if err != nil {
		t.Fatal(err)
	}
	a := obs.Paths["/a"]
	if a.Kind != PathAtomic || string(a.Files["d/f"].Data) != "a\x00b" || a.Files["d/f"].Mode != 0o644 {
		t.Errorf("a = %+v %+v", a, a.Files["d/f"])
	}
	if a.Files["big"].SHA256 == "" || a.Files["big"].Mode != 0o400 || a.Files["nosum"].Unread == "" || a.Files["nosum"].Mode != -1 {
		t.Errorf("big/nosum = %+v %+v", a.Files["big"], a.Files["nosum"])
	}
	if b := obs.Paths["/b"]; b.Kind != PathFile || !b.Files[""].HasData || b.Files[""].Mode != 0o7777&^0o022 {
		t.Errorf("b = %+v %+v", b, b.Files[""])
	}
	if obs.Env["A"] != "b=c" || obs.Env["HOME"] != "/root" {
		t.Errorf("env = %v", obs.Env)
	}

	// Truncated anywhere: an error, never a partial success.
	for i := 0; i < len(ok)-1; i++ {
		if _, err := ParseVerified([]byte(ok[:i]), n, paths); err == nil {
			t.Fatalf("truncated at %d parsed", i)
		}
	}
	// Wrong nonce at the end.
	if _, err := ParseVerified([]byte(strings.Replace(ok, rec("Z", n), rec("Z", "other"), 1)), n, paths); err == nil {
		t.Error("bad final nonce accepted")
	}
	// A file that changed size while read: resynchronised, marked unread.
	short := rec("P", "0", "A", testTS, "F", "f", "-rw-r--r--", "10", "C") + "abc" + rec(n) + rec("F", "g", "-rw-r--r--", "1", "C") + "g" + rec(n) + rec("Q", testTS, "Z", n)
	obs, err = ParseVerified([]byte(short), n, paths)
	if err != nil {
		t.Fatal(err)
	}
	if f := obs.Paths["/a"].Files["f"]; f.HasData || f.Unread == "" {
		t.Errorf("f = %+v", f)
	}
	if g := obs.Paths["/a"].Files["g"]; string(g.Data) != "g" {
		t.Errorf("g = %+v", g)
	}
	// ..data moved during every attempt: unstable; a stable retry wins.
	moved := rec("P", "0", "A", testTS, "Q", "..2024_05_06_07_08_10.1", "P", "0", "A", "..2024_05_06_07_08_10.1", "Q", "..2024_05_06_07_08_10.1", "Z", n)
	obs, err = ParseVerified([]byte(moved), n, paths)
	if err != nil || obs.Paths["/a"].Unstable || obs.Paths["/a"].Target != "..2024_05_06_07_08_10.1" {
		t.Errorf("moved: %v %+v", err, obs.Paths["/a"])
	}
	unstable := rec("P", "0", "A", testTS, "Q", "..x", "Z", n)
	obs, err = ParseVerified([]byte(unstable), n, paths)
	if err != nil || !obs.Paths["/a"].Unstable {
		t.Errorf("unstable: %v %+v", err, obs.Paths["/a"])
	}
	for _, bad := range []string{
		rec("P", "7", "Q", "", "Z", n),           // index out of range
		rec("F", "x", "-", "1", "C") + "x",       // file outside a path
		rec("P", "0", "K", "z", "Q", "", "Z", n), // unknown kind
		rec("P", "0", "Z", n),                    // unterminated path
		rec("?"),
	} {
		if _, err := ParseVerified([]byte(bad), n, paths); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

func TestParseLsMode(t *testing.T) {
	for in, want := range map[string]int32{
		"-rw-r--r--":  0o644,
		"-rw-r--r--.": 0o644,
		"-r--r-----+": 0o440,
		"-rwxr-xr-x":  0o755,
		"-rwSr-Sr-T":  0o7644,
		"-rwsr-sr-t":  0o7755,
		"drwxrwxrwx":  0o777,
		"?":           -1,
		"-rw-r--r-Q":  -1,
		"":            -1,
	} {
		if got := ParseLsMode(in); got != want {
			t.Errorf("ParseLsMode(%q) = %o, want %o", in, got, want)
		}
	}
}

func TestParseEnvLines(t *testing.T) {
	env := parseEnvLines([]byte("A=1\nB=two\nlines\nC=x=y\n"))
	if env["A"] != "1" || env["B"] != "two\nlines" || env["C"] != "x=y" {
		t.Errorf("env = %q", env)
	}
}

// FuzzParseVerified: the parser must never panic or loop, whatever the
// container prints.
func FuzzParseVerified(f *testing.F) {
	n := "cmsync-f"
	f.Add([]byte("P\x000\x00A\x00..2024_05_06_07_08_09.1\x00F\x00a\x00-rw-r--r--\x001\x00C\x00x" + n + "\x00Q\x00..2024_05_06_07_08_09.1\x00Z\x00" + n + "\x00"))
	f.Add([]byte("P\x001\x00K\x00f\x00F\x00\x00?\x00-1\x00U\x00Q\x00\x00V\x00A=1\x00" + n + "\x00Z\x00" + n + "\x00"))
	f.Add([]byte("P\x000\x00K\x00d\x00D\x00x\x00L\x00y\x00O\x00z\x00F\x00x/a\x00-rw-------\x0099999999999\x00C\x00"))
	f.Add([]byte("Z\x00" + n + "\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		obs, err := ParseVerified(data, n, []string{"/a", "/b"})
		if err == nil && obs == nil {
			t.Fatal("nil observation without error")
		}
		if err == nil {
			for p, op := range obs.Paths {
				if p != "/a" && p != "/b" {
					t.Fatalf("unexpected path %q", p)
				}
				for _, f := range op.Files {
					if f.HasData && f.Size >= 0 && int64(len(f.Data)) != f.Size {
						t.Fatalf("content of %q has %d bytes, size says %d", f.Path, len(f.Data), f.Size)
					}
				}
			}
		}
	})
}

// A batch whose contents do not add up (a file changed between stat and
// cat) leaves every file of the batch unread and the rest of the output
// parsed.
func TestParseBatchThatChangedWhileRead(t *testing.T) {
	n := "cmsync-abc"
	rec := func(fields ...string) string { return strings.Join(fields, "\x00") + "\x00" }
	ok := rec("P", "0", "K", "d", "G", "", "2", "a", "b", "-rw-r--r--", "2", "-rw-------", "3", "C") + "xxyyy" + rec(n, "Q", "", "Z", n)
	obs, err := ParseVerified([]byte(ok), n, []string{"/v"})
	if err != nil {
		t.Fatal(err)
	}
	if a, b := obs.Paths["/v"].Files["a"], obs.Paths["/v"].Files["b"]; string(a.Data) != "xx" || string(b.Data) != "yyy" || b.Mode != 0o600 {
		t.Errorf("batch = %+v %+v", a, b)
	}
	short := rec("P", "0", "K", "d", "G", "p/", "2", "a", "b", "-rw-r--r--", "2", "-rw-------", "3", "C") + "xxyy" + rec(n, "Q", "", "Z", n)
	obs, err = ParseVerified([]byte(short), n, []string{"/v"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"p/a", "p/b"} {
		if f := obs.Paths["/v"].Files[p]; f == nil || f.HasData || f.Unread == "" {
			t.Errorf("%s = %+v, want unread", p, f)
		}
	}
	for _, bad := range []string{
		rec("P", "0", "G", "", "99999", "a") + rec("Z", n),
		rec("P", "0", "G", "", "1", "a", "-rw-r--r--", "-5", "C") + rec(n, "Q", "", "Z", n),
		rec("P", "0", "G", "", "1", "a", "-rw-r--r--", "1", "X") + rec(n, "Q", "", "Z", n),
	} {
		if _, err := ParseVerified([]byte(bad), n, []string{"/v"}); err == nil {
			t.Errorf("%q parsed, want an error", bad)
		}
	}
}

// testTS is a ..data target name of the kubelet's atomic writer.
const testTS = "..2024_05_06_07_08_09.123456789"
