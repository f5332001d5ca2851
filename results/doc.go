// Package results is what sqlhist shows of a run: a run's report (each
// statement's rows, totals, distributions and the engine that answered),
// its renderings (tables, JSON, CSV, folded stacks, pprof profiles, the
// --live screen, heatmaps as SVG and HTML), reading a printed JSON back,
// and merging several targets' reports (sqlhist merge, a fleet's merged
// results). It runs nothing: package live runs a plan on a target and
// hands its report here.
package results
