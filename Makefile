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

.PHONY: help build unit fuzz e2e release-check test demo cluster-prereqs cluster-build cluster-up cluster-down cluster-status clean

help:
	@echo "build           go build -o bin/kubectl-cmsync ./cmd/kubectl-cmsync"
	@echo "unit            gofmt check, go vet, go test -race ./..., the fuzz targets 5,000 execs each (no cluster)"
	@echo "fuzz            the fuzz targets, FUZZTIME each (default 5000x execs; FUZZTIME=5m make fuzz)"
	@echo "release-check   goreleaser check + snapshot release, krew manifest checks and an offline krew install"
	@echo "e2e             the e2e suite against the running local cluster (make cluster-up first)"
	@echo "test            unit, release-check beside the cluster prerequisites and build, start the cluster if it is not up, e2e, and take"
	@echo "                down the cluster if this run started it (KEEP_CLUSTER=1 keeps it)"
	@echo "demo            cluster up, build, deploy hack/demo, edit a ConfigMap, kubectl cmsync status -A"
	@echo "cluster-up      start the local single-node cluster (root; builds Kubernetes the first time, ~8 min)"
	@echo "cluster-down    stop it and clean the machine"
	@echo "cluster-status  is it up?"

build:
	$(GO) build -o bin/kubectl-cmsync ./cmd/kubectl-cmsync

unit:
	@files=$$(gofmt -l $$(find . -name '*.go' -not -path './.git/*' -not -path './bin/*' -not -path './dist/*')); \
	if [ -n "$$files" ]; then echo "gofmt needed on:"; echo "$$files"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags e2e ./test/e2e/...
	$(GO) test -race ./...
	$(MAKE) --no-print-directory fuzz

# the fuzz targets, 5,000 execs each (FUZZTIME=5m make fuzz for longer): the exec-output parser, payload building,
# the pod spec walker (uses), the refresh planner and the manifest reader of lint
# A count of execs, not a duration: with a duration, Go's fuzzing coordinator can fail the run with a bare
# "context deadline exceeded" (no crasher) when its deadline races a worker still busy with an input, which
# happened here on a loaded machine (FuzzUses, FuzzPlan). FUZZTIME=5m make fuzz still fuzzes for 5 minutes.
FUZZTIME ?= 5000x
# Go minimizes every new interesting input for up to 60 s by default, with no execs meanwhile: that made the
# 10 s runs stall (FuzzRead: ~11 execs in 10 s) and fail with "context deadline exceeded" when fuzztime ended
# during a minimization. 1 s keeps them fuzzing (FuzzRead: ~4,300 execs in 10 s).
FUZZMINIMIZE ?= 1s
fuzz:
	$(GO) test -run='^$$' -fuzz='^FuzzParseObservation$$' -fuzztime=$(FUZZTIME) -fuzzminimizetime=$(FUZZMINIMIZE) ./pkg/inspect
	$(GO) test -run='^$$' -fuzz='^FuzzExpectedFiles$$' -fuzztime=$(FUZZTIME) -fuzzminimizetime=$(FUZZMINIMIZE) ./pkg/inspect
	$(GO) test -run='^$$' -fuzz='^FuzzUses$$' -fuzztime=$(FUZZTIME) -fuzzminimizetime=$(FUZZMINIMIZE) ./pkg/inspect
	$(GO) test -run='^$$' -fuzz='^FuzzPlan$$' -fuzztime=$(FUZZTIME) -fuzzminimizetime=$(FUZZMINIMIZE) ./pkg/refresh
	$(GO) test -run='^$$' -fuzz='^FuzzRead$$' -fuzztime=$(FUZZTIME) -fuzzminimizetime=$(FUZZMINIMIZE) ./pkg/lint

e2e:
	KUBECONFIG=$(CLUSTER_KUBECONFIG) $(GO) test -tags e2e ./test/e2e/... -count=1 -timeout 30m $(E2E_FLAGS)

# goreleaser, krew's validator and an offline krew install (hack/release/check.sh); tools cached by version
release-check:
	hack/release/check.sh

# release-check and the Kubernetes build (the first time) compile side by side; the e2e suite runs alone
# afterwards: beside a compiler, execs into containers took over their 10 s timeout on 2 cores
test: unit
	$(MAKE) --no-print-directory -j2 --output-sync=target release-check cluster-build
	$(CLUSTER)/with-cluster.sh $(MAKE) --no-print-directory e2e

demo: cluster-up build
	hack/demo/run.sh

cluster-prereqs:
	$(CLUSTER)/prereqs.sh

cluster-build: cluster-prereqs
	$(CLUSTER)/build.sh

cluster-up: cluster-build
	$(CLUSTER)/up.sh

cluster-down:
	$(CLUSTER)/down.sh

cluster-status:
	$(CLUSTER)/status.sh

clean:
	rm -rf bin dist coverage.out coverage.html
