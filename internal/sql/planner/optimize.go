package planner

import "github.com/weirproject/weir/internal/sql/functions"

// optimize applies the rewrite rules to a plan: filters move down towards
// the scans (through projections, into the matching side of a join), and
// stacked projections merge; then each scan learns which of its columns
// are read (projection push-down). Constant folding happens while binding.
func optimize(p Plan) Plan {
	p = mergeProjects(topN(pushFilters(p)))
	markNeededColumns(p)
	return p
}

// topN turns a filter on the rank of a window's ROW_NUMBER, RANK or
// DENSE_RANK (rownum <= N, rownum < N, rownum = 1) into a Rank node, which
// keeps only the top rows per partition: Flink's Top-N and deduplication.
func topN(p Plan) Plan {
	for i, in := range p.Inputs() {
		setInput(p, i, topN(in))
	}
	f, ok := p.(*Filter)
	if !ok {
		return p
	}
	o, ok := f.Input.(*Over)
	if !ok || len(o.Calls) != 1 || o.Calls[0].Rank == "" {
		return p
	}
	rankCol := len(o.fields) - 1
	limit := int64(-1)
	var rest []Expr
	for _, c := range conjuncts(f.Cond) {
		call, ok := c.(*Call)
		if ok && len(call.Args) == 2 {
			r, rok := call.Args[0].(*InputRef)
			l, lok := call.Args[1].(*Literal)
			if rok && lok && r.Index == rankCol && l.Value != nil {
				n := toInt(l.Value)
				switch call.Fn.Name {
				case "<=":
					limit = n
					continue
				case "<":
					limit = n - 1
					continue
				case "=":
					if n == 1 {
						limit = 1
						continue
					}
				}
			}
		}
		rest = append(rest, c)
	}
	if limit < 0 {
		return p
	}
	var out Plan = &Rank{Input: o.Input, Partition: o.Partition, Order: o.Order, Kind: o.Calls[0].Rank, Limit: limit, fields: o.fields}
	if len(rest) > 0 {
		out = &Filter{Input: out, Cond: and(functions.Builtins(), rest)}
	}
	return out
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
		case *Join:
			// WHERE over an inner join (FROM a, b WHERE a.k = b.k):
			// equalities become keys, one-sided conditions filter the
			// inputs.
			if in.Type == "INNER" && !in.Temporal {
				out := absorb(in, conjuncts(x.Cond), functions.Builtins())
				markWindowJoin(in)
				return pushFilters(out)
			}
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
	case *Over:
		x.Input = in
	case *Rank:
		x.Input = in
	case *SingleRow:
		x.Input = in
	case *Replicate:
		x.Input = in
	case *Correlate:
		x.Input = in
	case *MatchRecognize:
		x.Input = in
	}
}
