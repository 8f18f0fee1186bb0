// Package deploy holds the manifests users apply next to the plugin
// (rbac.yaml). Its only Go code is the test that keeps README.md's RBAC
// table equal to rbac.yaml, rule by rule.
package deploy
