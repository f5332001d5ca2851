package cli

// checkLive validates the choices of printing and of --run together
// (Choices.Check); fl reports whether a flag was given.
func (o *options) checkLive(e env, fl func(name string) bool) int {
	c := &o.live
	c.Run, c.Execute, c.Teardown, c.Initrd = o.run, o.execute, o.teardown, o.initrd
	c.PlanFile = ""
	if len(o.planFiles) > 0 {
		c.PlanFile = o.planFiles[0]
	}
	c.OutTerminal = e.IsTerminal != nil && e.IsTerminal(e.Stdout)
	if err := c.Check(fl); err != nil {
		return usageError(e, "%v", err)
	}
	return exitOK
}
