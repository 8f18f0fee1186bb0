# kubectl-cmsync. `make help` lists the targets.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
# Go lives in /usr/local/go on these machines; a login shell may not have it on PATH
export PATH := $(PATH):/usr/local/go/bin
GO ?= go
CLUSTER := hack/cluster
# the admin kubeconfig of the local cluster (hack/cluster/up.sh)
CLUSTER_KUBECONFIG = $(shell $(CLUSTER)/kubeconfig.sh)
E2E_FLAGS ?=
# make test's builds but the race detector's are static and -trimpath, as the released binary is
# (hack/release/image.sh): go vet, the e2e suite, its plugin and image, and the release's amd64 image then
# share one compile of every dependency in Go's build cache (cgo and -trimpath are part of each package's
# cache key). The race detector needs cgo, so go test -race compiles its own.
STATIC := CGO_ENABLED=0

# The oldest Kubernetes version the e2e suite runs on (make test-oldest); the default version is
# hack/cluster/lib.sh's K8S_DEFAULT_VERSION. K8S_VERSION=1.33.5 make cluster-up (with or without the v) picks
# any release from 1.30 to 1.37.
K8S_OLDEST := 1.30.14

.PHONY: help build simulate helm promtool argo-rollouts unit vet fuzz e2e release-check release-fast image test test-oldest ci-cold demo cluster-prereqs cluster-build cluster-up cluster-down cluster-status cluster2-up cluster2-down clean

help:
	@echo "build           go build -o bin/kubectl-cmsync ./cmd/kubectl-cmsync (static, -trimpath)"
	@echo "vet             gofmt check, go vet (static, as the release is built)"
	@echo "unit            vet, then go test -race ./... (the fuzz targets' seed corpora included, the chart's"
	@echo "                lint, goldens and alerting rules with helm and promtool; no cluster), and charts/monitoring's"
	@echo "                tests (a module of its own: the rules' and dashboard's metric names)"
	@echo "helm            build helm from the module proxy once into ~/.cache/kubectl-cmsync/tools (hack/tools/helm.sh)"
	@echo "promtool        build promtool from the module proxy once into ~/.cache/kubectl-cmsync/tools, for the chart's"
	@echo "                alerting rules' tests (hack/tools/promtool.sh)"
	@echo "argo-rollouts   build the Argo Rollouts controller (and keep its CRDs) from the module proxy once into"
	@echo "                ~/.cache/kubectl-cmsync/tools, for the e2e suite's Rollout test (hack/tools/argo-rollouts.sh)"
	@echo "simulate        the loop's simulator over SEEDS fresh seeds (default 10000; FROM=N the first, else drawn and"
	@echo "                printed), ending with one line: simulated N seeds, S steps, V violations in T s"
	@echo "fuzz            the fuzz targets, FUZZTIME each (default 10s, on Go FUZZ_TOOLCHAIN; FUZZTIME=5m make fuzz)"
	@echo "release-check   goreleaser check + snapshot release, krew manifest checks and an offline krew install, of all"
	@echo "                five platforms (RELEASE_PLATFORMS=host: this machine's platform only)"
	@echo "release-fast    krew's validator on plugins/krew.yaml, the image index (amd64, arm64), the chart packaged (in test)"
	@echo "image           dist/image/kubectl-cmsync.tar: the container image, built without a registry or a daemon"
	@echo "e2e             the e2e suite against the running local cluster (make cluster-up first)"
	@echo "test            unit beside the cluster prerequisites and build, start the cluster of"
	@echo "                K8S_VERSION (default below) if it is not up, e2e, and take"
	@echo "                down the cluster if this run started it (KEEP_CLUSTER=1 keeps it)"
	@echo "ci-cold         CI (.ci/run) timed on a fresh clone with every cache empty (a new HOME; APT=purge removes the"
	@echo "                cluster's Debian packages first): the cold figure (hack/ci/cold.sh; the cluster must be down)"
	@echo "demo            cluster up, build, deploy hack/demo, edit a ConfigMap, kubectl cmsync status -A"
	@echo "test-oldest     the e2e suite on Kubernetes $(K8S_OLDEST), the oldest supported (starts and stops that cluster"
	@echo "                like test; a cluster of another version must be down first)"
	@echo "cluster-up      start the local single-node cluster (root; builds Kubernetes, containerd and runc the first"
	@echo "                time, ~12 min). K8S_VERSION=1.37.2 (or v1.37.2): any release from 1.30 to 1.37; default"
	@echo "                $$(sed -n 's/^K8S_DEFAULT_VERSION=//p' hack/cluster/lib.sh). CONTAINER_RUNTIME=built (containerd 2 and runc built from"
	@echo "                the module proxy; default from 1.35) or debian (Debian's containerd 1.6; default up to 1.34)"
	@echo "cluster-down    stop it and clean the machine (whatever version runs)"
	@echo "cluster-status  is it up, and which version?"
	@echo "cluster2-up     a second control plane (etcd + kube-apiserver on 127.0.0.1:6543, no node) and"
	@echo "                a kubeconfig of three contexts (hack/cluster/cluster2-status.sh prints it)"
	@echo "cluster2-down   stop the second control plane"

build:
	$(STATIC) $(GO) build -trimpath -o bin/kubectl-cmsync ./cmd/kubectl-cmsync

# helm for the chart's tests (charts/, test/e2e): built once from the module proxy, cached by version
helm:
	@hack/tools/helm.sh >/dev/null

# promtool for the tests of the chart's alerting rules (charts/rules_test.go): built once from the module proxy,
# cached by version
promtool:
	@hack/tools/promtool.sh >/dev/null

# the Argo Rollouts controller and its CRDs for the e2e suite's Rollout test: built once from the module proxy,
# cached by version
argo-rollouts:
	@hack/tools/argo-rollouts.sh >/dev/null

unit: helm promtool vet
	$(GO) test -race ./...
	cd charts/monitoring && $(GO) vet ./... && $(GO) test ./...
	$(MAKE) --no-print-directory simulate SEEDS=$(CI_SEEDS) FROM=$(CI_FROM)

# gofmt and go vet: vet compiles every dependency, static (above), before release-fast's image build needs it
vet:
	@files=$$(gofmt -l $$(find . -name '*.go' -not -path './.git/*' -not -path './bin/*' -not -path './dist/*')); \
	if [ -n "$$files" ]; then echo "gofmt needed on:"; echo "$$files"; exit 1; fi
	$(STATIC) $(GO) vet -trimpath ./...
	$(STATIC) $(GO) vet -trimpath -tags e2e ./test/e2e/...

# the fuzz targets, FUZZTIME each (10 s; FUZZTIME=5m make fuzz for longer). Not part of make test: their seed
# corpora run in every go test, and the fuzzing itself costs a second toolchain and a build of every package
# with coverage instrumentation (14 of the cold CI's minutes): the exec-output parser, payload
# building, the pod spec walker (uses), the refresh planner, the manifest reader of lint, and the parsers of
# text a namespace's user writes: the reload hook, the restart window and Reloader's reload lists.
# They run on Go 1.27 (FUZZ_TOOLCHAIN, fetched once through the module proxy): with a duration, Go 1.26's fuzzing
# coordinator can fail a run with a bare "context deadline exceeded" and no crasher when its -fuzztime deadline
# fires (go.dev/issue/75804: the parent context is done before its child; fixed in Go 1.27, not in any 1.26.x).
# It happened here on a loaded machine (FuzzUses, FuzzPlan). FUZZ_TOOLCHAIN=local FUZZTIME=5000x uses the
# installed Go with a count of execs instead, which has no deadline to race.
FUZZTIME ?= 10s
FUZZ_TOOLCHAIN ?= go1.27.1
# Go minimizes every new interesting input for up to 60 s by default, with no execs meanwhile: that made the
# 10 s runs stall (FuzzRead: ~11 execs in 10 s). 1 s keeps them fuzzing (FuzzRead: ~4,300 execs in 10 s).
FUZZMINIMIZE ?= 1s
FUZZ = GOTOOLCHAIN=$(FUZZ_TOOLCHAIN) $(GO) test -run='^$$' -fuzztime=$(FUZZTIME) -fuzzminimizetime=$(FUZZMINIMIZE)
fuzz:
	$(FUZZ) -fuzz='^FuzzParseVerified$$' ./internal/containerread
	$(FUZZ) -fuzz='^FuzzExpectedFiles$$' ./pkg/inspect
	$(FUZZ) -fuzz='^FuzzUses$$' ./pkg/inspect
	$(FUZZ) -fuzz='^FuzzPlan$$' ./pkg/refresh
	$(FUZZ) -fuzz='^FuzzRead$$' ./pkg/lint
	$(FUZZ) -fuzz='^FuzzParseHook$$' ./pkg/refresh
	$(FUZZ) -fuzz='^FuzzParse$$' ./internal/restartwindow
	$(FUZZ) -fuzz='^FuzzReloadLists$$' ./pkg/reconcile

# the continuous engine against its simulated world (pkg/reconcile/sim_test.go), SEEDS fresh seeds on every core;
# a failing seed prints the command that replays it (-v: go test shows a passing test's output only then).
SEEDS ?= 10000
FROM ?= 0
# make test's fresh seeds (unit, after the race run, which replays the corpus): CI_SEEDS of them from CI_FROM, a
# number drawn from git's hashes of the committed trees pkg/ and internal/ (the code the simulator runs). New seeds
# whenever that code changes, none when only docs do, and the same on every machine: a seed that fails in CI replays
# anywhere with the command it prints.
CI_SEEDS ?= 2000
CI_FROM ?= $(shell h=$$(git rev-parse HEAD:pkg HEAD:internal 2>/dev/null | sha256sum | cut -c1-7); echo $$((2000000000 + 0x$${h:-0})))
simulate:
	@out=$$(mktemp); status=0; \
	$(GO) test ./pkg/reconcile -run 'TestSimulate$$' -v -count=1 -timeout 0 -sim.seeds=$(SEEDS) -sim.from=$(FROM) >$$out 2>&1 || status=$$?; \
	grep -v '^simulated ' $$out || true; grep '^simulated ' $$out || true; rm -f $$out; exit $$status

e2e:
	KUBECONFIG=$(CLUSTER_KUBECONFIG) $(STATIC) $(GO) test -trimpath -tags e2e ./test/e2e/... -count=1 -timeout 45m $(E2E_FLAGS)

# goreleaser, krew's validator and an offline krew install (hack/release/check.sh); tools cached by version
release-check:
	hack/release/check.sh

# the release's packaging without goreleaser: krew's validator on plugins/krew.yaml, the image index of both
# architectures, the chart packaged (hack/release/fast.sh); part of make test
release-fast: helm vet
	hack/release/fast.sh

# the container image (the static binary in one layer, non-root; no registry, no daemon) as a tarball;
# hack/cluster/load-image.sh dist/image/kubectl-cmsync.tar imports it into the local cluster
IMAGE_TAG ?= localhost/kubectl-cmsync:dev
image:
	mkdir -p dist/image
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags="-s -w" -o dist/image/kubectl-cmsync ./cmd/kubectl-cmsync
	$(GO) run ./hack/image -binary dist/image/kubectl-cmsync -tag $(IMAGE_TAG) -o dist/image/kubectl-cmsync.tar

# The unit suite and the Kubernetes build (the first time) run side by side, then the Argo Rollouts controller's
# build (the first time) in the first free slot: the builds' module downloads and links overlap the tests'
# compiles. The e2e suite runs alone afterwards: beside a compiler, execs into containers took over their 10 s
# timeout on 2 cores. release-fast checks the packaging beside them; release-check (goreleaser built from
# source, a snapshot release) is the release step, `make release-check`.
test:
	$(MAKE) --no-print-directory -j2 --output-sync=target unit release-fast cluster-build argo-rollouts
	$(CLUSTER)/with-cluster.sh $(MAKE) --no-print-directory e2e

test-oldest:
	K8S_VERSION=$(K8S_OLDEST) $(MAKE) --no-print-directory cluster-build
	K8S_VERSION=$(K8S_OLDEST) $(CLUSTER)/with-cluster.sh $(MAKE) --no-print-directory e2e

# CI as on a fresh machine, timed: a fresh clone, a new empty HOME (every cache), APT=purge for the packages
ci-cold:
	hack/ci/cold.sh

demo: cluster-up build
	hack/demo/run.sh

cluster-prereqs:
	$(CLUSTER)/prereqs.sh

cluster-build: cluster-prereqs
	$(CLUSTER)/build-runtime.sh
	$(CLUSTER)/build.sh

cluster-up: cluster-build
	$(CLUSTER)/up.sh

cluster-down:
	$(CLUSTER)/down.sh

cluster-status:
	$(CLUSTER)/status.sh

# a second control plane (etcd + kube-apiserver, no node) beside the cluster, for the tests across contexts
cluster2-up:
	$(CLUSTER)/cluster2-up.sh

cluster2-down:
	$(CLUSTER)/cluster2-down.sh

clean:
	rm -rf bin dist coverage.out coverage.html
