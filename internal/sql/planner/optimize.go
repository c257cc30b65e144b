package planner

// optimize applies the rewrite rules to a plan: filters move down towards
// the scans (through projections, into the matching side of a join), and
// stacked projections merge. Constant folding happens while binding.
func optimize(p Plan) Plan {
	return mergeProjects(pushFilters(p))
}

// pushFilters moves a filter below a projection (rewriting its
// references) and into the scan below it, where a connector may use it.
func pushFilters(p Plan) Plan {
	switch x := p.(type) {
	case *Filter:
		x.Input = pushFilters(x.Input)
		switch in := x.Input.(type) {
		case *Project:
			if m, ok := invertible(in); ok {
				in.Input = pushFilters(&Filter{Input: in.Input, Cond: remap(x.Cond, m)})
				return in
			}
		case *Scan:
			in.Filters = append(in.Filters, x.Cond)
			return in
		}
		return x
	}
	for i, in := range p.Inputs() {
		setInput(p, i, pushFilters(in))
	}
	return p
}

// invertible maps the columns of a projection that only passes input
// columns through (renames and reorders) back to the input's.
func invertible(p *Project) (map[int]int, bool) {
	m := make(map[int]int, len(p.Exprs))
	for i, e := range p.Exprs {
		r, ok := e.(*InputRef)
		if !ok {
			return nil, false
		}
		m[i] = r.Index
	}
	return m, true
}

// mergeProjects replaces a projection of a pure column projection by one
// projection over the input.
func mergeProjects(p Plan) Plan {
	for i, in := range p.Inputs() {
		setInput(p, i, mergeProjects(in))
	}
	if outer, ok := p.(*Project); ok {
		if inner, ok := outer.Input.(*Project); ok {
			if m, ok := invertible(inner); ok {
				exprs := make([]Expr, len(outer.Exprs))
				for i, e := range outer.Exprs {
					exprs[i] = remap(e, m)
				}
				return &Project{Input: inner.Input, Exprs: exprs, fields: outer.fields}
			}
		}
	}
	return p
}

func setInput(p Plan, i int, in Plan) {
	switch x := p.(type) {
	case *Project:
		x.Input = in
	case *Filter:
		x.Input = in
	case *Aggregate:
		x.Input = in
	case *WindowTVF:
		x.Input = in
	case *Union:
		x.Ins[i] = in
	case *Join:
		if i == 0 {
			x.Left = in
		} else {
			x.Right = in
		}
	case *Sort:
		x.Input = in
	}
}
