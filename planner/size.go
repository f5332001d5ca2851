package planner

import "github.com/sqlhist/sqlhist/source"

// checkSizeUsed warns when --size sizes nothing the script writes: it
// goes on histograms (a query without JOIN, a JOIN's aggregates, -r's
// results), not on a JOIN's start and end triggers.
func (p *planner) checkSizeUsed() {
	if p.opt.Size == 0 || len(p.diags.Errors()) > 0 {
		return
	}
	for _, u := range p.plan.Units {
		for _, h := range []*Hist{u.Start, u.End, u.Results, u.Negatives} {
			if h != nil && h.Size == p.opt.Size {
				return
			}
		}
	}
	x := p.diags.Add(source.NoPos, source.NoPos, "--size %d has no effect here: it sizes histograms (a query without JOIN, a JOIN with aggregates, the results of -r), and this script has none; a JOIN's start and end triggers keep the kernel's 2048 entries", p.opt.Size)
	x.Warning = true
}
