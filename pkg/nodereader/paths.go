package nodereader

import (
	"fmt"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/containerread"
)

// nodeBatch is everything one exec on one node reads: the containers (by
// container ID) and the paths, each as the reader pod sees it.
type nodeBatch struct {
	node       string
	containers []containerPaths
	// paths are the reader-side paths in argument order (deduplicated:
	// two containers of a pod mounting one volume read it once).
	paths []string
}

// containerPaths is one request on its node.
type containerPaths struct {
	req int    // index in the requests
	id  string // container ID (hex), without the runtime prefix
	env bool
	// view maps the path the exec reader would read (the mount path in the
	// container) to the reader-side path.
	view map[string]string
}

// The kubelet's directory names of the volume plugins cmsync reads.
var pluginDirs = map[string]string{
	"configMap": "kubernetes.io~configmap",
	"secret":    "kubernetes.io~secret",
	"projected": "kubernetes.io~projected",
}

var (
	hexID   = regexp.MustCompile(`^[0-9a-f]{12,128}$`)
	podUID  = regexp.MustCompile(`^[0-9a-fA-F-]{1,64}$`)
	volName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
)

// batchByNode groups the requests by node. dir is the exec's scratch
// directory: dir/k links to the kubelet's root directory, dir/c/ID to the
// root of container ID. A request that cannot be read this way gets its
// failure in failed.
func batchByNode(reqs []containerread.Request, dir string) (nodes []*nodeBatch, failed map[int]*containerread.VerifyError) {
	failed = map[int]*containerread.VerifyError{}
	byNode := map[string]*nodeBatch{}
	for i, q := range reqs {
		cp, node, err := pathsOf(q, dir)
		if err != nil {
			failed[i] = err
			continue
		}
		cp.req = i
		nr := byNode[node]
		if nr == nil {
			nr = &nodeBatch{node: node}
			byNode[node] = nr
			nodes = append(nodes, nr)
		}
		nr.containers = append(nr.containers, cp)
	}
	for _, nr := range nodes {
		seen := map[string]bool{}
		for _, cp := range nr.containers {
			for _, p := range sortedValues(cp.view) {
				if !seen[p] {
					seen[p] = true
					nr.paths = append(nr.paths, p)
				}
			}
		}
	}
	sort.Slice(nodes, func(a, b int) bool { return nodes[a].node < nodes[b].node })
	return nodes, failed
}

func sortedValues(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}

// pathsOf finds the container's ID and node, and where each of its
// paths is seen from the node: a whole configMap, secret or projected
// volume in the kubelet's directory, anything else (a subPath mount) in
// the container's root.
func pathsOf(q containerread.Request, dir string) (containerPaths, string, *containerread.VerifyError) {
	p := q.Pod
	if p == nil {
		return containerPaths{}, "", &containerread.VerifyError{Reason: containerread.VerifyFailed, Message: "the pod is not in the snapshot"}
	}
	if p.Spec.NodeName == "" {
		return containerPaths{}, "", &containerread.VerifyError{Reason: containerread.VerifyNotRunning, Message: "the pod is not on a node"}
	}
	id, err := runningContainerID(p, q.Container)
	if err != nil {
		return containerPaths{}, "", err
	}
	c := findContainer(p, q.Container)
	cp := containerPaths{id: id, env: q.Env, view: map[string]string{}}
	for _, pr := range q.Paths {
		hp, ok := volumeDir(p, c, pr.Path, dir)
		if !ok {
			hp, ok = subPathDir(p, c, pr.Path, dir)
		}
		if !ok {
			// never through the container's root: a symlink the container
			// planted on the way would be followed in the reader's root,
			// which sees the node's processes
			return containerPaths{}, "", &containerread.VerifyError{Reason: containerread.VerifyFailed,
				Message: fmt.Sprintf("%s is neither a volume nor a subPath mount the kubelet made; --reader=exec reads it", pr.Path)}
		}
		cp.view[pr.Path] = hp
	}
	return cp, p.Spec.NodeName, nil
}

// subPathDir is the reader-side path of the subPath mount at mountPath (or
// of a path below it): the kubelet bind-mounts each container's subPath at
// pods/UID/volume-subpaths/VOLUME/CONTAINER/INDEX of its own directory
// (INDEX: the mount's place in the container's volumeMounts), and the
// runtime mounts that into the container. Read there, it is what the
// container sees, and no path inside the container is ever followed.
func subPathDir(p *corev1.Pod, c *corev1.Container, target, dir string) (string, bool) {
	if c == nil || !podUID.MatchString(string(p.UID)) || !volName.MatchString(c.Name) {
		return "", false
	}
	for i, m := range c.VolumeMounts {
		if (m.SubPath == "" && m.SubPathExpr == "") || !volName.MatchString(m.Name) {
			continue
		}
		mp := path.Clean("/" + m.MountPath)
		rest, ok := strings.CutPrefix(path.Clean("/"+target), mp)
		if !ok || (rest != "" && !strings.HasPrefix(rest, "/")) {
			continue
		}
		return dir + "/k/pods/" + string(p.UID) + "/volume-subpaths/" + m.Name + "/" + c.Name + "/" + strconv.Itoa(i) + rest, true
	}
	return "", false
}

// volumeDir is the reader-side path of the whole volume mounted at
// mountPath, when it is one the kubelet writes to its own directory.
func volumeDir(p *corev1.Pod, c *corev1.Container, mountPath, dir string) (string, bool) {
	if c == nil || !podUID.MatchString(string(p.UID)) {
		return "", false
	}
	for _, m := range c.VolumeMounts {
		if m.MountPath != mountPath || m.SubPath != "" || m.SubPathExpr != "" {
			continue
		}
		for _, v := range p.Spec.Volumes {
			if v.Name != m.Name || !volName.MatchString(v.Name) {
				continue
			}
			plugin := ""
			switch {
			case v.ConfigMap != nil:
				plugin = pluginDirs["configMap"]
			case v.Secret != nil:
				plugin = pluginDirs["secret"]
			case v.Projected != nil:
				plugin = pluginDirs["projected"]
			}
			if plugin == "" {
				return "", false
			}
			return dir + "/k/pods/" + string(p.UID) + "/volumes/" + plugin + "/" + v.Name, true
		}
	}
	return "", false
}

// runningContainerID is the ID of the running container from the pod's
// status ("containerd://ID" -> "ID").
func runningContainerID(p *corev1.Pod, name string) (string, *containerread.VerifyError) {
	for _, sts := range [][]corev1.ContainerStatus{p.Status.ContainerStatuses, p.Status.InitContainerStatuses, p.Status.EphemeralContainerStatuses} {
		for _, s := range sts {
			if s.Name != name {
				continue
			}
			if s.State.Running == nil || s.ContainerID == "" {
				return "", &containerread.VerifyError{Reason: containerread.VerifyNotRunning, Message: "container " + name + " is not running"}
			}
			_, id, ok := strings.Cut(s.ContainerID, "://")
			if !ok || !hexID.MatchString(id) {
				return "", &containerread.VerifyError{Reason: containerread.VerifyFailed, Message: fmt.Sprintf("container ID %q is not one the node reader can find", s.ContainerID)}
			}
			return id, nil
		}
	}
	return "", &containerread.VerifyError{Reason: containerread.VerifyNotRunning, Message: "container " + name + " has no status"}
}

func findContainer(p *corev1.Pod, name string) *corev1.Container {
	for _, cs := range [][]corev1.Container{p.Spec.Containers, p.Spec.InitContainers} {
		for i := range cs {
			if cs[i].Name == name {
				return &cs[i]
			}
		}
	}
	for i := range p.Spec.EphemeralContainers {
		if p.Spec.EphemeralContainers[i].Name == name {
			c := corev1.Container(p.Spec.EphemeralContainers[i].EphemeralContainerCommon)
			return &c
		}
	}
	return nil
}
