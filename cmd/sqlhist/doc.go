// Command sqlhist compiles SQL over Linux trace events into the tracefs
// commands that create ftrace synthetic events and hist triggers, and
// prints them, applies them (-e) or runs them end to end (-r).
//
// Usage:
//
//	sqlhist [flags] [SQL ...]
//	sqlhist merge [-o table|json|csv] FILE.json ...
//	sqlhist read [-o table|json|csv] [FILE|-]
//	sqlhist man | completion bash|zsh|fish
//
// `sqlhist --help` lists the flags, `sqlhist man` prints the man page
// sqlhist(1) (its prose is manual.txt; its options are the flags --help
// lists), and README.md and docs/ teach the language. Its code is in
// cmd/sqlhist/internal/cli, which parses the flags and wires this machine
// (or a --via target) to the packages that do the work and that Go
// programs can use directly: live runs a plan on a target, results shows
// and merges what a run read, exporter serves it to Prometheus.
//
// Exit status: 0 ok, 1 bad query or failed apply, 2 bad usage.
package main
