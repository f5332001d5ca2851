// Package exporter serves runs' results as Prometheus metrics (sqlhist
// -r --metrics) and draws a Grafana dashboard of them (--metrics-dashboard).
// It is the only package of sqlhist that imports the Prometheus client.
package exporter
