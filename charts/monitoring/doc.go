// Package monitoring checks the chart's monitoring against the controller:
// every metric, histogram series and label that the alerting rules
// (kubectl-cmsync/files/rules.yaml) and the dashboard name is one that
// controller.Families says the controller exports, and
// kubectl-cmsync/files/metric-names.txt, the names the e2e suite looks for
// on a real controller's /metrics, is the list of them.
package monitoring
