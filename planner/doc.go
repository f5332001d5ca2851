// Package planner turns a parsed query into a logical plan of event joins
// and histograms: which events carry which hist triggers, their keys,
// variables, values, filters and actions, and the synthetic events the
// joins fire. It resolves every name against the event catalog, checks
// types and kernel limits, and reports problems as positioned
// [source.Diags].
//
// # Lowering a JOIN
//
// A query "SELECT … FROM a JOIN b ON a.k = b.k" becomes a synthetic event
// and two hist triggers keyed by the ON fields. The trigger on a (the
// start) saves, in variables, the start-side values the SELECT needs; the
// trigger on b (the end) computes expressions and fires the synthetic event
// with onmatch(a).trace(…). Variables are named after the synthetic event
// ("wakeup_lat_pid"), so several queries coexist on one event, and no value
// is saved that the query does not use.
//
// Its API is internal to sqlhist and not stable.
package planner
