package planner

// checkDuplicateTriggers refuses a hist trigger that an earlier statement
// of the script already writes to the same event: the kernel compares a
// new trigger's keys, values, variables, sort keys, filter and actions
// (not its size) with those already on the event, and refuses an equal
// one with EEXIST ("Hist trigger exists"), after the statements before
// it were applied. seen holds the triggers of the earlier statements.
func (p *planner) checkDuplicateTriggers(u *Unit, seen map[string]*Hist) {
	for _, h := range []*Hist{u.Start, u.End, u.Results, u.Negatives} {
		if h == nil {
			continue
		}
		c := *h
		c.Size = 0
		key := h.TriggerFile() + "\x00" + c.Spec()
		if _, dup := seen[key]; !dup {
			seen[key] = h
			continue
		}
		x := p.diags.Add(h.Pos, h.End, "an earlier statement of this script writes the same %s trigger to %s/%s; the kernel refuses the second (EEXIST, \"Hist trigger exists\")", h.Role, h.System, h.Event)
		x.Hint = "drop the repeated statement, or make it differ (a key, a value or a WHERE)"
	}
}
