package planner

// Projection push-down: which columns of each scanned table the plan
// reads. A connector that can skip the others (a narrower SELECT list, a
// decoder that ignores fields, a columnar file that reads fewer columns)
// leaves them NULL; the plan above never looks at them. Rows keep the
// table's width, so no column index in the plan changes.

// markNeededColumns records in every Scan of the plan which of its
// columns the plan reads, given that the plan's own output is read whole.
func markNeededColumns(p Plan) {
	all := make([]bool, len(p.Fields()))
	for i := range all {
		all[i] = true
	}
	resetNeeded(p)
	markNeeded(p, all)
}

func resetNeeded(p Plan) {
	if s, ok := p.(*Scan); ok {
		s.Needed = make([]bool, len(s.fields))
	}
	for _, in := range p.Inputs() {
		resetNeeded(in)
	}
}

// markNeeded marks the columns p's inputs must provide so that p can
// compute the output columns in need.
func markNeeded(p Plan, need []bool) {
	switch p := p.(type) {
	case *Scan:
		p.markNeeded(need)
	case *Values:
	case *Project:
		in := newNeed(p.Input)
		for i, e := range p.Exprs {
			if need[i] {
				in.expr(e)
			}
		}
		markNeeded(p.Input, in)
	case *Filter:
		in := passNeed(p.Input, need)
		in.expr(p.Cond)
		markNeeded(p.Input, in)
	case *Aggregate:
		in := newNeed(p.Input)
		in.cols(p.Keys...)
		for _, a := range p.Aggs {
			in.cols(a.Args...)
			if a.Filter >= 0 {
				in.cols(a.Filter)
			}
		}
		if p.Window != nil && p.Window.Gap > 0 {
			in.cols(p.Window.TimeCol)
		}
		markNeeded(p.Input, in)
	case *WindowTVF:
		in := passNeed(p.Input, need)
		in.cols(p.TimeCol)
		markNeeded(p.Input, in)
	case *Union:
		for _, x := range p.Ins {
			markNeeded(x, passNeed(x, need))
		}
	case *Join:
		nl := len(p.Left.Fields())
		l, r := passNeed(p.Left, need), newNeed(p.Right)
		if len(need) > nl { // not a semi or anti join: the right side's columns follow
			for i := range r {
				r[i] = need[nl+i]
			}
		}
		l.cols(p.LeftKeys...)
		r.cols(p.RightKeys...)
		if p.Residual != nil {
			both := append(l, r...)
			both.expr(p.Residual)
			copy(l, both[:nl])
			copy(r, both[nl:])
		}
		markNeeded(p.Left, l)
		markNeeded(p.Right, r)
	case *Sort:
		in := passNeed(p.Input, need)
		for _, k := range p.Keys {
			in.cols(k.Index)
		}
		markNeeded(p.Input, in)
	case *Over:
		in := passNeed(p.Input, need)
		in.cols(p.Partition...)
		for _, k := range p.Order {
			in.cols(k.Index)
		}
		for _, c := range p.Calls {
			in.cols(c.Args...)
		}
		markNeeded(p.Input, in)
	case *Rank:
		in := passNeed(p.Input, need)
		in.cols(p.Partition...)
		for _, k := range p.Order {
			in.cols(k.Index)
		}
		markNeeded(p.Input, in)
	case *Replicate:
		in := passNeed(p.Input, need)
		in.cols(len(in) - 1) // the repeat count
		markNeeded(p.Input, in)
	case *SingleRow:
		markNeeded(p.Input, passNeed(p.Input, need))
	default:
		// An operator this analysis does not know reads every column.
		for _, in := range p.Inputs() {
			markNeeded(in, newNeed(in).allOf())
		}
	}
}

type needSet []bool

func newNeed(p Plan) needSet { return make(needSet, len(p.Fields())) }

// passNeed is the need of an input whose columns lead the output's.
func passNeed(in Plan, need []bool) needSet {
	n := newNeed(in)
	copy(n, need)
	return n
}

func (n needSet) cols(idx ...int) {
	for _, i := range idx {
		if i >= 0 && i < len(n) {
			n[i] = true
		}
	}
}

func (n needSet) expr(e Expr) {
	set := map[int]bool{}
	refs(e, set)
	for i := range set {
		n.cols(i)
	}
}

func (n needSet) allOf() needSet {
	for i := range n {
		n[i] = true
	}
	return n
}

// markNeeded adds what the scan itself reads: the columns its computed
// columns, watermark and pushed-down filters refer to.
func (p *Scan) markNeeded(need []bool) {
	n := needSet(p.Needed)
	for i := range n {
		n[i] = n[i] || need[i]
	}
	for _, f := range p.Filters {
		n.expr(f)
	}
	if p.Rowtime >= 0 {
		n.cols(p.Rowtime)
		if p.Watermark != nil {
			n.expr(p.Watermark)
		}
	}
	// Computed columns read physical and metadata columns only.
	for i, c := range p.Computed {
		if c != nil && n[i] {
			n.expr(c)
		}
	}
}

// neededColumns names the scan's columns that are read, or nil when all
// of them are.
func (p *Scan) neededColumns() []string {
	out := []string{}
	all := true
	for i, f := range p.fields {
		if p.Needed == nil || p.Needed[i] {
			out = append(out, f.Name)
		} else {
			all = false
		}
	}
	if all {
		return nil
	}
	return out
}
