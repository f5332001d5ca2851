package main

// checkSize validates --size: the entries of each histogram's map
// (size=), in printed scripts, JSON plans and bootconfigs as in -r.
func (o *options) checkSize(e env, fl changed) int {
	if !fl("size") {
		return exitOK
	}
	if o.live.size < 128 || o.live.size > 131072 {
		return usageError(e, "--size %d: the kernel takes 128 to 131072 entries", o.live.size)
	}
	if o.planFile != "" {
		return usageError(e, "--plan replays the writes of a plan as they are: drop --size (give it when the plan is made)")
	}
	return exitOK
}
