// Package envcfg declares every environment knob mstream reads (NVIDIA's
// TF_* multi-stream variables and our MSTREAM_* debug switches): name, type,
// default and doc, in one table. Load parses them once, strictly: a value
// that does not parse is an INVALID_ARGUMENT naming the variable, the value
// and what is accepted. Only package session calls Load; lower layers get
// the typed Config.
//
// Invariants: Knobs is the one list of variables (the README's knob table is
// MarkdownTable's output, kept equal by envcfg/cmd/knobs's test); a Config is
// read-only once Load returns; an alias and the knob it spells may not both be
// set to different values.
package envcfg
