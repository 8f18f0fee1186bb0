package inspect

import (
	"path"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/containerread"
)

// useInputs is what one use is compared with, computed once per use: the
// object as the API has it and, for a volume use, the kubelet's payload.
type useInputs struct {
	obj   Object
	pl    Payload
	plErr error
}

func inputsFor(it Use, obj Object) useInputs {
	in := useInputs{obj: obj}
	switch it.Mode {
	case ModeVolume, ModeItems, ModeProjected, ModeSubPath, ModeSubPathExpr:
		in.pl, in.plErr = ItemPayload(it, obj)
	}
	return in
}

// requestFor says what to read in the container for one use.
func requestFor(it Use, pod *corev1.Pod, in useInputs, lookup func(ObjectKey) Object) ([]containerread.PathRequest, bool) {
	pl := in.pl
	switch it.Mode {
	case ModeEnv, ModeEnvFrom:
		return nil, true
	case ModeVolume, ModeItems, ModeProjected:
		pr := containerread.PathRequest{Path: it.Volume.MountPath, List: len(it.KeyPaths) == 0}
		for _, f := range pl.Files {
			pr.Expect = append(pr.Expect, f.Path)
		}
		for _, kp := range it.KeyPaths {
			if ValidPayloadPath(kp.Path) {
				pr.Expect = unionStrings(pr.Expect, []string{path.Clean(kp.Path)})
			}
		}
		return []containerread.PathRequest{pr}, false
	case ModeSubPath, ModeSubPathExpr:
		pr := containerread.PathRequest{Path: it.Volume.MountPath, Expect: []string{""}}
		sub := it.Volume.SubPath
		if it.Mode == ModeSubPathExpr {
			// Only for the no-shell fallback's list of files to read: the
			// comparison expands it from what the container shows.
			sub, _ = ExpandSubPathExpr(it.Volume.SubPathExpr, specEnv(pod, it.Container.Name, lookup))
		}
		sub = cleanSubPath(sub)
		for _, f := range pl.Files {
			if rel, ok := strings.CutPrefix(f.Path, sub+"/"); ok {
				pr.Expect = append(pr.Expect, rel)
			}
		}
		return []containerread.PathRequest{pr}, it.Mode == ModeSubPathExpr
	}
	return nil, false
}

// cleanSubPath normalises a subPath to a payload path: relative, cleaned,
// through the ..data link.
func cleanSubPath(sub string) string {
	sub = path.Clean("/" + sub)[1:]
	if sub == "..data" {
		return ""
	}
	return strings.TrimPrefix(sub, "..data/")
}
