package planner

import (
	"slices"

	"github.com/clinksql/clinksql/catalog"
	"github.com/clinksql/clinksql/connectors"
	"github.com/clinksql/clinksql/exec/expr"
)

// Column pruning (projection pushdown). prune walks the logical plan from the root down with the set of columns
// each node's parent reads, and rebuilds every node so that it carries only what is read above it or by its own
// conditions, keys and time attributes:
//
//   - a projection drops the expressions nobody reads (it keeps one when nobody reads any, so a batch keeps its
//     row count in a column);
//   - a filter adds its condition's columns; a window assignment its time column and SESSION partition;
//   - a stateful operator (a join of any strategy, a Top-N, an aggregate) gets inputs of exactly the columns it
//     needs: its keys, condition, time bounds or window columns, sort and partition keys, plus what is read above
//     it. Where its input carries more, a projection is put under it, so its state and the exchange before it
//     hold only those columns. Both a row and its retraction pass the same projection, so a retraction still
//     matches the (narrower) row it retracts; operators keep copy counts, so rows that become equal stay distinct
//     copies;
//   - a scan of a connector that builds only the columns it is given, by name (SourceCapabilities.ColumnSubset), is
//     narrowed: the source generates fewer columns. The WATERMARK FOR column always stays. Other scans keep their
//     columns and the projection above them narrows the rows.
//
// An aggregate's output, a union's inputs' shape and a VALUES list are kept as they are (their consumers'
// indexes are the operator's own); the root keeps every column. pushdown runs again afterwards to fuse the
// projections put in with the ones already there.
//
// Each rebuilt node comes with m: m[i] is the new index of the old column i, -1 when it was dropped; a column
// the parent reads is never dropped.

// columnSubset reports whether a scan may ask its source for fewer columns.
func (n *scanNode) columnSubset() bool {
	if n.updating || n.obj.Kind != catalog.Stream {
		return false
	}
	if len(n.obj.PrimaryKey) > 0 {
		return false
	}
	for _, c := range n.obj.Columns {
		if c.MetadataKey != "" || c.Virtual {
			return false
		}
	}
	c, ok := connectors.LookupSource(n.obj.Connector())
	return ok && c.Capabilities(dataOptions(n.obj.Options)).ColumnSubset
}

// pruneRoot prunes a plan whose every output column is read; the result has the same columns.
func pruneRoot(root node) node {
	used := make([]bool, len(root.columns()))
	for i := range used {
		used[i] = true
	}
	n, m := prune(root, used)
	if !identity(m) {
		n, _ = narrow(n, m, used)
	}
	return pushdown(n)
}

func identity(m []int) bool {
	for i, j := range m {
		if i != j {
			return false
		}
	}
	return true
}

func identityMap(n int) []int {
	m := make([]int, n)
	for i := range m {
		m[i] = i
	}
	return m
}

func allUsed(n int) []bool {
	u := make([]bool, n)
	for i := range u {
		u[i] = true
	}
	return u
}

// markColumns sets used[i] for every column e reads (shifted by -base), within [0, len(used)).
func markColumns(used []bool, base int, es ...expr.Expr) {
	for _, c := range expr.Columns(es...) {
		if i := c - base; i >= 0 && i < len(used) {
			used[i] = true
		}
	}
}

// remap rewrites e's column references through m.
func remap(e expr.Expr, m []int) expr.Expr {
	if e == nil {
		return nil
	}
	return expr.RemapColumns(e, func(i int) int { return m[i] })
}

// narrow puts a projection over n (whose old columns map through m) that gives exactly the old columns used, in
// their order, unless n already has exactly those. It returns the node and the map of old columns to its columns.
func narrow(n node, m []int, used []bool) (node, []int) {
	out := make([]int, len(m))
	cols := n.columns()
	var exprs []expr.Expr
	var outCols []Col
	exact := true
	for i, j := range m {
		out[i] = -1
		if !used[i] {
			continue
		}
		if j != len(exprs) {
			exact = false
		}
		out[i] = len(exprs)
		exprs = append(exprs, expr.Column(j, cols[j].Name, cols[j].Type))
		outCols = append(outCols, cols[j])
	}
	if exact && len(exprs) == len(cols) {
		return n, out
	}
	return &projectNode{in: n, exprs: exprs, out: outCols}, out
}

// prune rebuilds n to carry at least the columns used marks (see the comment at the top of the file).
func prune(n node, used []bool) (node, []int) {
	switch n := n.(type) {
	case *scanNode:
		return pruneScan(n, used)
	case *filterNode:
		u := append([]bool{}, used...)
		markColumns(u, 0, n.cond)
		in, m := prune(n.in, u)
		return &filterNode{in: in, cond: remap(n.cond, m)}, m
	case *projectNode:
		keep := make([]int, 0, len(n.exprs))
		for i := range n.exprs {
			if used[i] {
				keep = append(keep, i)
			}
		}
		if len(keep) == 0 && len(n.exprs) > 0 {
			keep = append(keep, 0)
			for i, e := range n.exprs {
				if _, ok := expr.ColumnIndex(e); ok {
					keep[0] = i
					break
				}
			}
		}
		u := make([]bool, len(n.in.columns()))
		for _, i := range keep {
			markColumns(u, 0, n.exprs[i])
		}
		in, im := prune(n.in, u)
		p := &projectNode{in: in}
		m := make([]int, len(n.exprs))
		for i := range m {
			m[i] = -1
		}
		for k, i := range keep {
			p.exprs = append(p.exprs, remap(n.exprs[i], im))
			p.out = append(p.out, n.out[i])
			if i < len(n.pos) {
				p.pos = append(p.pos, n.pos[i])
			}
			m[i] = k
		}
		if len(p.pos) != len(p.exprs) {
			p.pos = nil
		}
		return p, m
	case *joinNode:
		return pruneJoin(n, used)
	case *unnestNode:
		// Its input's columns are its own but the array: all kept (the operator takes the array last).
		return &unnestNode{in: pruneEach([]node{n.in})[0], cfg: n.cfg, pos: n.pos, out: n.out}, identityMap(len(n.out))
	case *overNode:
		nIn := len(n.in.columns())
		u := append([]bool{}, used[:nIn]...)
		for _, p := range n.cfg.Partition {
			u[p] = true
		}
		u[n.cfg.TimeCol] = true
		for _, f := range n.cfg.Funcs {
			for _, c := range []int{f.Arg, f.Filter, f.Default} {
				if c >= 0 {
					u[c] = true
				}
			}
		}
		in, im := prune(n.in, u)
		in, im = narrow(in, im, u)
		c := *n
		c.in = in
		c.cfg.Partition = make([]int, len(n.cfg.Partition))
		for k, p := range n.cfg.Partition {
			c.cfg.Partition[k] = im[p]
		}
		c.cfg.TimeCol = im[n.cfg.TimeCol]
		c.cfg.Funcs = slices.Clone(n.cfg.Funcs)
		remapCol := func(i int) int {
			if i < 0 {
				return i
			}
			return im[i]
		}
		for k := range c.cfg.Funcs {
			f := &c.cfg.Funcs[k]
			f.Arg, f.Filter, f.Default = remapCol(f.Arg), remapCol(f.Filter), remapCol(f.Default)
		}
		c.out = append(append([]Col{}, in.columns()...), n.out[nIn:]...)
		m := append([]int{}, im...)
		for k := range n.out[nIn:] {
			m = append(m, len(in.columns())+k)
		}
		return &c, m
	case *replicateNode:
		// Every column is part of the rows it repeats.
		return &replicateNode{in: pruneEach([]node{n.in})[0], out: n.out}, identityMap(len(n.out))
	case *topNNode:
		nIn := len(n.in.columns())
		u := append([]bool{}, used[:nIn]...)
		for _, p := range n.cfg.Partition {
			u[p] = true
		}
		for _, o := range n.cfg.Order {
			u[o.Col] = true
		}
		in, im := prune(n.in, u)
		in, im = narrow(in, im, u)
		c := *n
		c.in = in
		c.cfg.Partition = make([]int, len(n.cfg.Partition))
		for k, p := range n.cfg.Partition {
			c.cfg.Partition[k] = im[p]
		}
		c.cfg.Order = append(c.cfg.Order[:0:0], n.cfg.Order...)
		for k := range c.cfg.Order {
			c.cfg.Order[k].Col = im[c.cfg.Order[k].Col]
		}
		c.out = append(append([]Col{}, in.columns()...), n.out[nIn])
		m := append(append([]int{}, im...), len(in.columns()))
		return &c, m
	case *aggNode:
		c := *n
		c.pre = prunePre(n.pre)
		return &c, identityMap(len(n.out))
	case *unionNode:
		u := &unionNode{}
		m := make([]int, len(n.out))
		k := 0
		for i := range m {
			m[i] = -1
			if used[i] {
				m[i] = k
				u.out = append(u.out, n.out[i])
				k++
			}
		}
		if k == 0 {
			return &unionNode{inputs: pruneEach(n.inputs), out: n.out}, identityMap(len(n.out))
		}
		for _, in := range n.inputs {
			p, pm := prune(in, used)
			p, _ = narrow(p, pm, used)
			u.inputs = append(u.inputs, p)
		}
		return u, m
	case *assignNode:
		t := *n.tvf
		nIn := len(t.in.columns())
		u := append([]bool{}, used[:nIn]...)
		u[t.win.TimeCol] = true
		for _, p := range t.partition {
			u[p] = true
		}
		// A window assignment copies each row into every window it falls in (HOP: size/slide copies): narrow
		// its input to what is read.
		in, im := prune(t.in, u)
		in, im = narrow(in, im, u)
		t.in = in
		t.win.TimeCol = im[n.tvf.win.TimeCol]
		t.partition = nil
		for _, p := range n.tvf.partition {
			t.partition = append(t.partition, im[p])
		}
		w := len(in.columns())
		t.out = append(append([]Col{}, in.columns()...), n.tvf.out[nIn:]...)
		m := append(append([]int{}, im...), w, w+1)
		return &assignNode{tvf: &t}, m
	}
	// Anything else keeps its columns; what it reads is pruned as if every column were read.
	return n, identityMap(len(n.columns()))
}

func pruneEach(ins []node) []node {
	out := make([]node, len(ins))
	for i, in := range ins {
		p, m := prune(in, allUsed(len(in.columns())))
		if !identity(m) {
			p, _ = narrow(p, m, allUsed(len(m)))
		}
		out[i] = p
	}
	return out
}

// prunePre prunes the input of an aggregate's pre-projection, whose expressions are all read by the operator.
func prunePre(pre *projectNode) *projectNode {
	u := make([]bool, len(pre.in.columns()))
	markColumns(u, 0, pre.exprs...)
	in, m := prune(pre.in, u)
	p := &projectNode{in: in, out: pre.out, pos: pre.pos}
	for _, e := range pre.exprs {
		p.exprs = append(p.exprs, remap(e, m))
	}
	return p
}

// pruneScan narrows a scan whose source builds any subset of its columns; others keep every column.
func pruneScan(n *scanNode, used []bool) (node, []int) {
	if !n.columnSubset() {
		return n, identityMap(len(n.out))
	}
	u := append([]bool{}, used...)
	if n.wm != nil {
		markColumns(u, 0, n.wm)
	}
	if n.obj.Watermark != nil {
		for i, c := range n.out {
			if c.Name == n.obj.Watermark.Column {
				u[i] = true
			}
		}
	}
	any := false
	for _, b := range u {
		any = any || b
	}
	if !any {
		u[0] = true
	}
	m := make([]int, len(n.out))
	c := *n
	c.out = nil
	for i, col := range n.out {
		m[i] = -1
		if u[i] {
			m[i] = len(c.out)
			c.out = append(c.out, col)
		}
	}
	if len(c.out) == len(n.out) {
		return n, m
	}
	c.wm = remap(n.wm, m)
	return &c, m
}

// pruneJoin keeps of each side the columns read above, its keys, the residual condition's columns and the time
// or window columns of its strategy, and gives each side exactly those (the join stores its inputs' rows).
func pruneJoin(j *joinNode, used []bool) (node, []int) {
	nl, nr := len(j.left.columns()), len(j.right.columns())
	lu, ru := append([]bool{}, used[:nl]...), append([]bool{}, used[nl:nl+nr]...)
	for k := range j.leftKeys {
		lu[j.leftKeys[k]], ru[j.rightKeys[k]] = true, true
	}
	if j.residual != nil {
		markColumns(lu, 0, j.residual)
		markColumns(ru, nl, j.residual)
	}
	switch j.strategy {
	case joinInterval, joinTemporal:
		lu[j.leftTime], ru[j.rightTime] = true, true
	case joinLookup:
		lu[j.leftTime] = true // EXPLAIN names it
		for i := range ru {
			ru[i] = true // the table is queried for the stream's columns as declared
		}
	case joinWindow:
		lu[j.leftStart], lu[j.leftEnd] = true, true
		ru[j.rightStart], ru[j.rightEnd] = true, true
	}
	left, lm := prune(j.left, lu)
	left, lm = narrow(left, lm, lu)
	right, rm := prune(j.right, ru)
	right, rm = narrow(right, rm, ru)
	c := *j
	c.left, c.right = left, right
	nl2 := len(left.columns())
	m := make([]int, nl+nr)
	for i := range m {
		switch {
		case i < nl:
			m[i] = lm[i]
		case rm[i-nl] >= 0:
			m[i] = nl2 + rm[i-nl]
		default:
			m[i] = -1
		}
	}
	c.leftKeys, c.rightKeys = make([]int, len(j.leftKeys)), make([]int, len(j.rightKeys))
	for k := range j.leftKeys {
		c.leftKeys[k], c.rightKeys[k] = lm[j.leftKeys[k]], rm[j.rightKeys[k]]
	}
	c.residual = remap(j.residual, m)
	switch j.strategy {
	case joinInterval, joinTemporal:
		c.leftTime, c.rightTime = lm[j.leftTime], rm[j.rightTime]
	case joinLookup:
		c.leftTime = lm[j.leftTime] // the table's columns are all kept
	case joinWindow:
		c.leftStart, c.leftEnd = lm[j.leftStart], lm[j.leftEnd]
		c.rightStart, c.rightEnd = rm[j.rightStart], rm[j.rightEnd]
	}
	c.out = append(append([]Col{}, left.columns()...), right.columns()...)
	return &c, m
}
