// Package deploy holds the manifests users apply next to the plugin:
// rbac.yaml, and the in-cluster controller (controller/) with its node
// reader overlay (controller-node-reader/). Its Go code is their tests:
// rbac_test.go keeps the RBAC table of docs/rbac.md equal to rbac.yaml,
// rule by rule, and rbac.yaml equal to pkg/rbac; controller_test.go checks
// the controller's manifests.
package deploy
