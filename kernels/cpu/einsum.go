package cpu

import (
	"slices"
	"sort"
	"strings"

	"mstream/graph"
	"mstream/kernels"
	"mstream/kernels/cpu/blas"
	"mstream/kernels/cpu/vec"
	"mstream/status"
	"mstream/tensor"
)

// Einsum with one or two operands, as TF's EinsumOp: labels a-z/A-Z and
// one ellipsis per subscript (broadcast like NumPy), an explicit or
// implicit output. The work is reduced to data movement, sums and one
// batched GEMM: each operand's repeated labels become a diagonal, labels
// that appear in neither the other operand nor the output are summed out,
// and the rest is arranged as [batch, free, contracted] x [batch,
// contracted, free] and multiplied with the same GEMM as BatchMatMul. A
// device that reads through strides (the CPU's) skips the arranging when
// each operand's free and contracted labels are contiguous runs, one of
// them innermost, and multiplies the operands where they lie, writing the
// output in place (transposed when that is how the output holds it):
// Keras's attention einsums then copy nothing ("aecd,abcd->acbe", B=16:
// 8.6-15.7 -> 1.2-5.1 ms per call at load average 13-17, serial).
// RunEinsum is that algorithm; an EinsumDevice does the work, so the GPU
// kernel (kernels/cuda) runs the same steps with device primitives.

func init() {
	reg("Einsum", []tensor.DType{tensor.Float, tensor.Double, tensor.Half, tensor.Bfloat16, tensor.Int32, tensor.Int64}, nil, func(n *graph.Node) (kernels.Kernel, error) {
		spec, err := ParseEinsum(n)
		if err != nil {
			return nil, err
		}
		dev := cpuEinsum{w: packedFor(n)}
		return kernels.KernelFunc(func(ctx *kernels.Context) error { return RunEinsum(ctx, spec, dev) }), nil
	})
	reg("_MstreamEinsumBias", []tensor.DType{tensor.Float}, nil, func(n *graph.Node) (kernels.Kernel, error) {
		spec, err := parseEinsum(attrString(n, "equation", ""), 2)
		if err != nil {
			return nil, nodeErr(n, status.InvalidArgument, "%v", err)
		}
		w := packedFor(n)
		return fusedKernel(n, func(ctx *kernels.Context) error { return einsumBias(ctx, spec, w) }), nil
	})
}

// einsumBias is _MstreamEinsumBias, package optimize's fusion of an
// Einsum of two operands and the Add of a bias over its output's
// trailing dimensions (Keras' EinsumDense): the bias goes into the packed
// GEMM's epilogue when the product runs there, else it is added after
// Einsum's own algorithm, as the Add did.
func einsumBias(ctx *kernels.Context, spec *EinsumSpec, w *packedWeights) error {
	bias := ctx.Input(2)
	b := bias.F32()
	applied := false
	if err := RunEinsum(ctx, spec, cpuEinsum{w: w, bias: b, applied: &applied}); err != nil {
		return err
	}
	o := ctx.Outputs[0]
	r := len(o.Shape) - len(bias.Shape)
	if r < 0 || !o.Shape[r:].Equal(bias.Shape) {
		return ctx.Errorf(status.InvalidArgument, "bias of shape %v does not match the trailing dimensions of the product's %v", bias.Shape, o.Shape)
	}
	if !applied && len(b) > 0 && o.NumElements() > 0 {
		vec.MapBinaryRows(vec.Add, o.F32(), b, o.F32(), len(b), false)
	}
	return nil
}

// ParseEinsum parses n's equation (INVALID_ARGUMENT naming the node when
// it is malformed or does not fit the inputs).
func ParseEinsum(n *graph.Node) (*EinsumSpec, error) {
	spec, err := parseEinsum(attrString(n, "equation", ""), len(n.InTypes))
	if err != nil {
		return nil, nodeErr(n, status.InvalidArgument, "%v", err)
	}
	return spec, nil
}

// EinsumDevice does Einsum's work on one device. Tensors come from Alloc
// (scratch) or are the node's inputs and output; strides are in elements.
type EinsumDevice interface {
	Alloc(ctx *kernels.Context, dt tensor.DType, s tensor.Shape) (*tensor.Tensor, error)
	// Gather fills dst (row-major over its shape) from src: element (i0,
	// ..., ir) is read at sum(ik * stride[k]), so a stride of 0
	// broadcasts and a sum of two dims' strides reads a diagonal.
	Gather(ctx *kernels.Context, dst, src *tensor.Tensor, stride []int64) error
	// Sum fills dst with src summed over the dims marked reduced; dst's
	// shape is src's other dims, in order.
	Sum(ctx *kernels.Context, dst, src *tensor.Tensor, reduced []bool) error
	// Gemm fills dst ([nb, m, n] elements) with the batched product of a
	// ([nb, m, k]) and b ([nb, k, n]); zeros when k is 0.
	Gemm(ctx *kernels.Context, dst, a, b *tensor.Tensor, nb, m, n, k int64) error
}

// Labels are small ints: 0..51 for letters; ellipsis dims get labels
// from ellBase up, numbered from the right (ellBase is the last dim).
const ellBase = 1000

// EinsumSpec is a parsed equation.
type EinsumSpec struct {
	in       [][]int // labels per input, -1 for the ellipsis
	out      []int
	explicit bool
}

func labelOf(c rune) (int, bool) {
	switch {
	case c >= 'a' && c <= 'z':
		return int(c - 'a'), true
	case c >= 'A' && c <= 'Z':
		return int(c-'A') + 26, true
	}
	return 0, false
}

func parseSub(s string) ([]int, error) {
	var out []int
	ell := false
	for i := 0; i < len(s); i++ {
		if s[i] == '.' {
			if !strings.HasPrefix(s[i:], "...") || ell {
				return nil, status.Errorf(status.InvalidArgument, "Invalid ellipsis in subscript %q", s)
			}
			ell = true
			out = append(out, -1)
			i += 2
			continue
		}
		l, ok := labelOf(rune(s[i]))
		if !ok {
			return nil, status.Errorf(status.InvalidArgument, "Character '%c' is not a valid subscript label in %q", s[i], s)
		}
		out = append(out, l)
	}
	return out, nil
}

func parseEinsum(eq string, nIn int) (*EinsumSpec, error) {
	eq = strings.ReplaceAll(eq, " ", "")
	lhs, rhs, explicit := strings.Cut(eq, "->")
	subs := strings.Split(lhs, ",")
	if len(subs) != 1 && len(subs) != 2 {
		return nil, status.Errorf(status.InvalidArgument, "Expecting 1 or 2 input subscripts in equation '%s' but got: %d", eq, len(subs))
	}
	if len(subs) != nIn {
		return nil, status.Errorf(status.InvalidArgument, "Expecting %d inputs but got: %d", len(subs), nIn)
	}
	spec := &EinsumSpec{explicit: explicit}
	count := map[int]int{}
	anyEll := false
	for _, s := range subs {
		l, err := parseSub(s)
		if err != nil {
			return nil, err
		}
		for _, x := range l {
			if x >= 0 {
				count[x]++
			} else {
				anyEll = true
			}
		}
		spec.in = append(spec.in, l)
	}
	if explicit {
		out, err := parseSub(rhs)
		if err != nil {
			return nil, err
		}
		seen := map[int]bool{}
		for _, x := range out {
			if x < 0 {
				if !anyEll {
					return nil, status.Errorf(status.InvalidArgument, "Output subscript contains ellipsis but no input subscript does: %q", eq)
				}
				continue
			}
			if seen[x] {
				return nil, status.Errorf(status.InvalidArgument, "Output subscript contains repeated labels: %q", rhs)
			}
			seen[x] = true
			if count[x] == 0 {
				return nil, status.Errorf(status.InvalidArgument, "Output subscript contains a label that does not appear in the inputs: %q", eq)
			}
		}
		spec.out = out
	} else {
		// Implicit output: the ellipsis, then labels used once, sorted.
		if anyEll {
			spec.out = append(spec.out, -1)
		}
		var once []int
		for l, c := range count {
			if c == 1 {
				once = append(once, l)
			}
		}
		sort.Ints(once)
		spec.out = append(spec.out, once...)
	}
	return spec, nil
}

// operand is a tensor with one label per dim.
type operand struct {
	t      *tensor.Tensor
	labels []int
}

// expandEllipsis replaces -1 by labels for the dims it covers, numbered
// from the right so that broadcasting lines them up.
func expandEllipsis(labels []int, rank int) ([]int, int, bool) {
	named := 0
	for _, l := range labels {
		if l >= 0 {
			named++
		}
	}
	var out []int
	ne := 0
	for _, l := range labels {
		if l >= 0 {
			out = append(out, l)
			continue
		}
		ne = rank - named
		if ne < 0 {
			return nil, 0, false
		}
		for k := ne - 1; k >= 0; k-- {
			out = append(out, ellBase+k)
		}
	}
	return out, ne, len(out) == rank
}

// RunEinsum computes ctx's Einsum node as spec says, on dev.
func RunEinsum(ctx *kernels.Context, spec *EinsumSpec, dev EinsumDevice) error {
	ops := make([]operand, len(spec.in))
	maxEll := 0
	dims := map[int]int64{}
	for i, labels := range spec.in {
		t := ctx.Input(i)
		l, ne, ok := expandEllipsis(labels, len(t.Shape))
		if !ok {
			return ctx.Errorf(status.InvalidArgument, "Input %d has rank %d, which does not match subscript %d labels", i, len(t.Shape), len(labels))
		}
		maxEll = max(maxEll, ne)
		for k, lab := range l {
			d := t.Shape[k]
			if old, ok := dims[lab]; ok && old != d {
				if lab >= ellBase && (old == 1 || d == 1) {
					dims[lab] = max(old, d)
					continue
				}
				return ctx.Errorf(status.InvalidArgument, "Expected dimension %d at axis %d of input %d shaped %v but got dimension %d", old, k, i, t.Shape, d)
			}
			if _, ok := dims[lab]; !ok {
				dims[lab] = d
			}
		}
		ops[i] = operand{t, l}
	}
	var outLabels []int
	for _, l := range spec.out {
		if l >= 0 {
			outLabels = append(outLabels, l)
			continue
		}
		for k := maxEll - 1; k >= 0; k-- {
			outLabels = append(outLabels, ellBase+k)
		}
	}
	inOut := map[int]bool{}
	for _, l := range outLabels {
		inOut[l] = true
	}
	outShape := make(tensor.Shape, len(outLabels))
	for k, l := range outLabels {
		outShape[k] = dims[l]
	}
	o, err := ctx.Allocate(0, outShape)
	if err != nil {
		return err
	}
	if o.NumElements() == 0 {
		return nil
	}
	e := einsumRun{ctx, dev, dims}
	// Ellipsis dims missing from the output (explicit output without
	// "...") are summed out like other labels.
	for i := range ops {
		if ops[i], err = e.diagonal(ops[i]); err != nil {
			return err
		}
		other := map[int]bool{}
		if len(ops) == 2 {
			for _, l := range ops[1-i].labels {
				other[l] = true
			}
		}
		drop := make([]bool, len(ops[i].labels))
		sumAny := false
		for k, l := range ops[i].labels {
			drop[k] = !inOut[l] && !other[l]
			sumAny = sumAny || drop[k]
		}
		if sumAny {
			if ops[i], err = e.sumOut(ops[i], drop); err != nil {
				return err
			}
		}
	}
	res := ops[0]
	if len(ops) == 2 {
		if res, err = e.contract(ops[0], ops[1], inOut, o, outLabels); err != nil {
			return err
		}
		if res.t == o {
			return nil // the GEMM wrote the output in place
		}
	}
	// res has exactly the output labels (possibly fewer broadcast 1s);
	// move them into output order, broadcasting size-1 dims.
	pos := map[int]int{}
	for k, l := range res.labels {
		pos[l] = k
	}
	st := strides(res.t.Shape)
	src := make([]int64, len(outLabels))
	for k, l := range outLabels {
		if p, ok := pos[l]; ok && res.t.Shape[p] == outShape[k] {
			src[k] = st[p]
		}
	}
	return dev.Gather(ctx, o, res.t, src)
}

// einsumRun is one Run's state: the device and every label's size.
type einsumRun struct {
	ctx  *kernels.Context
	dev  EinsumDevice
	dims map[int]int64
}

// gather returns a scratch tensor of shape filled from src through stride.
func (e einsumRun) gather(src *tensor.Tensor, shape tensor.Shape, stride []int64) (*tensor.Tensor, error) {
	t, err := e.dev.Alloc(e.ctx, src.DType, shape)
	if err != nil {
		return nil, err
	}
	return t, e.dev.Gather(e.ctx, t, src, stride)
}

// diagonal merges repeated labels of an operand (TF: "ii->i").
func (e einsumRun) diagonal(op operand) (operand, error) {
	first := map[int]int{}
	var labels []int
	var shape tensor.Shape
	st := strides(op.t.Shape)
	var src []int64
	for k, l := range op.labels {
		if j, ok := first[l]; ok {
			src[j] += st[k]
			continue
		}
		first[l] = len(labels)
		labels = append(labels, l)
		shape = append(shape, op.t.Shape[k])
		src = append(src, st[k])
	}
	if len(labels) == len(op.labels) {
		return op, nil
	}
	t, err := e.gather(op.t, shape, src)
	return operand{t, labels}, err
}

// sumOut sums op over the dims marked in drop.
func (e einsumRun) sumOut(op operand, drop []bool) (operand, error) {
	var shape tensor.Shape
	var labels []int
	for k, l := range op.labels {
		if !drop[k] {
			shape = append(shape, op.t.Shape[k])
			labels = append(labels, l)
		}
	}
	t, err := e.dev.Alloc(e.ctx, op.t.DType, shape)
	if err != nil {
		return operand{}, err
	}
	return operand{t, labels}, e.dev.Sum(e.ctx, t, op.t, drop)
}

// contract multiplies two operands whose remaining labels are batch (in
// both and the output), contracted (in both, not the output) or free (in
// one and the output). The result's labels are batch, free a, free b; when
// that is the output's order and shape, the product is written into o.
func (e einsumRun) contract(a, b operand, inOut map[int]bool, o *tensor.Tensor, outLabels []int) (operand, error) {
	dims := e.dims
	inB := map[int]bool{}
	for _, l := range b.labels {
		inB[l] = true
	}
	inA := map[int]bool{}
	for _, l := range a.labels {
		inA[l] = true
	}
	var batch, con, freeA, freeB []int
	for _, l := range a.labels {
		switch {
		case inB[l] && inOut[l]:
			batch = append(batch, l)
		case inB[l]:
			con = append(con, l)
		default:
			freeA = append(freeA, l)
		}
	}
	for _, l := range b.labels {
		if !inA[l] {
			freeB = append(freeB, l)
		}
	}
	if sd, ok := e.dev.(einsumStridedDevice); ok && len(outLabels) == len(batch)+len(freeA)+len(freeB) {
		g, ok := e.stridedGemm(a, b, o, outLabels, batch, con, freeA, freeB)
		if ok {
			return operand{o, outLabels}, sd.GemmStrided(e.ctx, g)
		}
	}
	// Broadcast batch dims of size 1 to the common size and arrange
	// [batch, freeA, con] and [batch, con, freeB].
	arrange := func(op operand, order []int) (operand, error) {
		same := len(order) == len(op.labels)
		for i, l := range order {
			same = same && op.labels[i] == l && op.t.Shape[i] == dims[l]
		}
		if same {
			return op, nil
		}
		pos := map[int]int{}
		for k, l := range op.labels {
			pos[l] = k
		}
		st := strides(op.t.Shape)
		shape := make(tensor.Shape, len(order))
		src := make([]int64, len(order))
		for i, l := range order {
			shape[i] = dims[l]
			if op.t.Shape[pos[l]] == dims[l] {
				src[i] = st[pos[l]]
			}
		}
		t, err := e.gather(op.t, shape, src)
		return operand{t, order}, err
	}
	orderA := append(append(append([]int{}, batch...), freeA...), con...)
	orderB := append(append(append([]int{}, batch...), con...), freeB...)
	A, err := arrange(a, orderA)
	if err != nil {
		return operand{}, err
	}
	B, err := arrange(b, orderB)
	if err != nil {
		return operand{}, err
	}
	prod := func(ls []int) int64 {
		p := int64(1)
		for _, l := range ls {
			p *= dims[l]
		}
		return p
	}
	nb, m, k, n := prod(batch), prod(freeA), prod(con), prod(freeB)
	labels := append(append(append([]int{}, batch...), freeA...), freeB...)
	shape := make(tensor.Shape, len(labels))
	for i, l := range labels {
		shape[i] = dims[l]
	}
	out := o
	if !slices.Equal(labels, outLabels) || !shape.Equal(o.Shape) {
		if out, err = e.dev.Alloc(e.ctx, a.t.DType, shape); err != nil {
			return operand{}, err
		}
	}
	return operand{out, labels}, e.dev.Gemm(e.ctx, out, A.t, B.t, nb, m, n, k)
}

// einsumStridedDevice is an EinsumDevice whose GEMM reads its operands
// and writes its result in place, through strides: contract then needs no
// rearranging copies when each operand's row and column labels are
// contiguous groups and one of them is innermost (Keras's attention
// einsums, "aecd,abcd->acbe" and "acbe,aecd->abcd", are).
type einsumStridedDevice interface {
	GemmStrided(ctx *kernels.Context, g *gemmViews) error
}

// gemmViews is a batch of row-major GEMMs over views of three tensors:
// for every index of the batch dims, C = op(A) op(B) with A, B and C
// starting at the sum of the index times each tensor's batch strides.
type gemmViews struct {
	a, b, c       *tensor.Tensor
	batch         []int64 // batch dim sizes
	sa, sb, sc    []int64 // batch strides of a, b and c
	ta, tb        bool
	m, n, k       int
	lda, ldb, ldc int
}

// groupStride merges a group of labels into one matrix dim: its size and
// its stride in a tensor whose labels have strides st (0 where a size-1
// dim broadcasts), or ok false when the labels are not one contiguous run
// in this order.
func (e einsumRun) groupStride(group []int, st map[int]int64) (size, stride int64, ok bool) {
	size, stride = 1, 1
	first := true
	for i := len(group) - 1; i >= 0; i-- {
		l := group[i]
		d := e.dims[l]
		if d == 1 {
			continue
		}
		if first {
			stride, first = st[l], false
		} else if st[l] != stride*size {
			return 0, 0, false
		}
		size *= d
	}
	return size, stride, true
}

// matLayout is a BLAS row-major layout for an r x c matrix with row stride
// rs and column stride cs: transposed or not and the leading dimension.
func matLayout(r, rs, c, cs int64) (trans bool, ld int64, ok bool) {
	if c == 1 {
		cs = 1
	}
	switch {
	case r == 1 && cs == 1:
		return false, max(c, 1), true
	case cs == 1 && rs >= max(c, 1):
		return false, rs, true
	case (rs == 1 || r == 1) && cs >= max(r, 1):
		return true, cs, true
	}
	return false, 0, false
}

// stridedGemm lays the contraction out as gemmViews over a, b and the
// output o when every group is contiguous (see einsumStridedDevice).
func (e einsumRun) stridedGemm(a, b operand, o *tensor.Tensor, outLabels, batch, con, freeA, freeB []int) (*gemmViews, bool) {
	if a.t.DType != tensor.Float && a.t.DType != tensor.Double {
		return nil, false
	}
	labelStrides := func(op operand) map[int]int64 {
		st := strides(op.t.Shape)
		m := map[int]int64{}
		for k, l := range op.labels {
			if op.t.Shape[k] == e.dims[l] {
				m[l] = st[k]
			} // else a size-1 dim that broadcasts: stride 0
		}
		return m
	}
	sa, sb, so := labelStrides(a), labelStrides(b), labelStrides(operand{o, outLabels})
	m, rsA, ok1 := e.groupStride(freeA, sa)
	k, csA, ok2 := e.groupStride(con, sa)
	k2, rsB, ok3 := e.groupStride(con, sb)
	n, csB, ok4 := e.groupStride(freeB, sb)
	_, rsC, ok5 := e.groupStride(freeA, so)
	_, csC, ok6 := e.groupStride(freeB, so)
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) || k != k2 || k == 0 {
		return nil, false
	}
	ta, lda, okA := matLayout(m, rsA, k, csA)
	tb, ldb, okB := matLayout(k, rsB, n, csB)
	g := &gemmViews{a: a.t, b: b.t, c: o, ta: ta, tb: tb, m: int(m), n: int(n), k: int(k), lda: int(lda), ldb: int(ldb)}
	for _, l := range batch {
		g.batch = append(g.batch, e.dims[l])
		g.sa, g.sb, g.sc = append(g.sa, sa[l]), append(g.sb, sb[l]), append(g.sc, so[l])
	}
	if tc, ldc, ok := matLayout(m, rsC, n, csC); ok && !tc && okA && okB {
		g.ldc = int(ldc)
		return g, true
	}
	// C^T = op(B)^T op(A)^T when the output holds the product transposed.
	ta2, lda2, okA2 := matLayout(k, csA, m, rsA)
	tb2, ldb2, okB2 := matLayout(n, csB, k, rsB)
	tc, ldc, ok := matLayout(n, csC, m, rsC)
	if !ok || tc || !okA2 || !okB2 {
		return nil, false
	}
	*g = gemmViews{a: b.t, b: a.t, c: o, batch: g.batch, sa: g.sb, sb: g.sa, sc: g.sc,
		ta: tb2, tb: ta2, m: int(n), n: int(m), k: int(k), lda: int(ldb2), ldb: int(lda2), ldc: int(ldc)}
	return g, true
}

// cpuEinsum is the host's EinsumDevice. w, set when package optimize
// marked the node's second operand a Const the plan does not feed (Keras'
// EinsumDense kernel), holds that operand packed for vec.GemmPacked: a
// lone float32 product that reads it in place as B runs on the packed
// kernel, where sgemmOn would pack B again in every block of rows.
type cpuEinsum struct {
	w *packedWeights
	// bias, for _MstreamEinsumBias, is added by the packed product,
	// which then sets *applied.
	bias    []float32
	applied *bool
}

func (cpuEinsum) Alloc(ctx *kernels.Context, dt tensor.DType, s tensor.Shape) (*tensor.Tensor, error) {
	return kernels.NewTensor(ctx, dt, s)
}

func (cpuEinsum) Gather(ctx *kernels.Context, dst, src *tensor.Tensor, stride []int64) error {
	copyStrided(ctx, dst, src, stride)
	return nil
}

// Sum moves the dropped dims last, then sums rows.
func (cpuEinsum) Sum(ctx *kernels.Context, dst, src *tensor.Tensor, reduced []bool) error {
	var keep, drop []int
	for k, r := range reduced {
		if r {
			drop = append(drop, k)
		} else {
			keep = append(keep, k)
		}
	}
	perm := append(keep, drop...)
	st := strides(src.Shape)
	shape := make(tensor.Shape, len(perm))
	from := make([]int64, len(perm))
	for i, p := range perm {
		shape[i], from[i] = src.Shape[p], st[p]
	}
	p, err := kernels.NewTensor(ctx, src.DType, shape)
	if err != nil {
		return err
	}
	copyStrided(ctx, p, src, from)
	rows := dst.NumElements()
	inner := int64(1)
	for _, d := range shape[len(keep):] {
		inner *= d
	}
	switch dst.DType {
	case tensor.Float:
		sumRowsF(p.F32(), dst.F32(), rows, inner)
	case tensor.Double:
		sumRowsF(p.F64(), dst.F64(), rows, inner)
	case tensor.Half, tensor.Bfloat16:
		out := make([]float32, rows)
		sumRowsF(toF32(p), out, rows, inner)
		storeF32(dst, out)
	case tensor.Int32:
		sumRowsI(p.I32(), dst.I32(), rows, inner)
	case tensor.Int64:
		sumRowsI(p.I64(), dst.I64(), rows, inner)
	}
	return nil
}

func (d cpuEinsum) GemmStrided(ctx *kernels.Context, g *gemmViews) error {
	if d.packed(ctx, g) {
		return nil
	}
	if g.c.DType == tensor.Double {
		runEinsumGemm(ctx, blas.Dgemm, g, g.a.F64(), g.b.F64(), g.c.F64())
	} else {
		runEinsumGemm(ctx, sgemm, g, g.a.F32(), g.b.F32(), g.c.F32())
	}
	return nil
}

// packed runs g on the packed kernel when it is one float32 product whose
// B is the node's constant second operand where it lies, and says so.
func (d cpuEinsum) packed(ctx *kernels.Context, g *gemmViews) bool {
	if d.w == nil || g.c.DType != tensor.Float || len(g.batch) > 0 || g.b != ctx.Input(1) || g.ldc != g.n ||
		!usePacked(g.ta, true, g.m, g.k, 1, 0) {
		return false
	}
	var bias []float32
	if d.applied != nil && len(d.bias) == g.n {
		bias, *d.applied = d.bias, true
	}
	gemmPacked(ctx, g.m, g.a.F32(), g.lda, d.w.get(g.tb, g.k, g.n, g.b.F32(), g.ldb), g.c.F32(), bias, -1)
	return true
}

func runEinsumGemm[T float32 | float64](ctx *kernels.Context, gemm gemmFn[T], g *gemmViews, a, b, c []T) {
	nb := int64(1)
	for _, d := range g.batch {
		nb *= d
	}
	if nb == 1 {
		singleGemm(ctx, gemm)(g.ta, g.tb, g.m, g.n, g.k, 1, a, g.lda, b, g.ldb, 0, c, g.ldc)
		return
	}
	batchedGemm(ctx, int(nb), 2*float64(g.m)*float64(g.n)*float64(g.k), func(i int) {
		oa := stridedOffset(int64(i), g.batch, g.sa)
		ob := stridedOffset(int64(i), g.batch, g.sb)
		oc := stridedOffset(int64(i), g.batch, g.sc)
		gemm(g.ta, g.tb, g.m, g.n, g.k, 1, a[oa:], g.lda, b[ob:], g.ldb, 0, c[oc:], g.ldc)
	})
}

func (cpuEinsum) Gemm(ctx *kernels.Context, dst, a, b *tensor.Tensor, nb, m, n, k int64) error {
	if k == 0 {
		clear(dst.Buf)
		return nil
	}
	B, M, N, K := int(nb), int(m), int(n), int(k)
	switch dst.DType {
	case tensor.Float:
		einsumGemm(ctx, sgemm, B, M, N, K, a.F32(), b.F32(), dst.F32())
	case tensor.Double:
		einsumGemm(ctx, blas.Dgemm, B, M, N, K, a.F64(), b.F64(), dst.F64())
	case tensor.Half, tensor.Bfloat16:
		o, err := kernels.Scratch[float32](ctx, dst.NumElements())
		if err != nil {
			return err
		}
		einsumGemm(ctx, sgemm, B, M, N, K, toF32(a), toF32(b), o)
		storeF32(dst, o)
	case tensor.Int32:
		batchGemm(B, M, N, K, a.I32(), b.I32(), dst.I32(), intGemmNN[int32])
	case tensor.Int64:
		batchGemm(B, M, N, K, a.I64(), b.I64(), dst.I64(), intGemmNN[int64])
	}
	return nil
}

// gatherStridedElems is copyStrided one element at a time, for strings,
// variants and odd element sizes.
func gatherStridedElems(dst, src *tensor.Tensor, srcStride []int64) {
	n := dst.NumElements()
	if n == 0 {
		return
	}
	r := len(dst.Shape)
	if r == 0 {
		copyElems(dst, 0, src, 0, 1)
		return
	}
	idx := make([]int64, r)
	off := int64(0)
	for k := int64(0); k < n; k++ {
		copyElems(dst, int(k), src, int(off), 1)
		for d := r - 1; d >= 0; d-- {
			idx[d]++
			off += srcStride[d]
			if idx[d] < dst.Shape[d] {
				break
			}
			off -= srcStride[d] * idx[d]
			idx[d] = 0
		}
	}
}

func sumRowsF[T float32 | float64](x, o []T, rows, inner int64) {
	for r := int64(0); r < rows; r++ {
		var s float64
		for _, v := range x[r*inner : (r+1)*inner] {
			s += float64(v)
		}
		o[r] = T(s)
	}
}

func sumRowsI[T int32 | int64](x, o []T, rows, inner int64) {
	for r := int64(0); r < rows; r++ {
		var s T
		for _, v := range x[r*inner : (r+1)*inner] {
			s += v
		}
		o[r] = s
	}
}

// einsumGemm is the batched row-major product [nb,m,k] x [nb,k,n] on the
// intra-op pool (k > 0).
func einsumGemm[T float32 | float64](ctx *kernels.Context, gemm gemmFn[T], nb, m, n, k int, a, b, c []T) {
	pairs := make([][2]int, nb)
	for i := range pairs {
		pairs[i] = [2]int{i, i}
	}
	matmulBatches(ctx, gemm, pairs, false, false, m, n, k, a, k, m*k, b, n, k*n, c, m*n)
}

func batchGemm[T any](nb, m, n, k int, a, b, c []T, gemm gemmNN[T]) {
	for i := 0; i < nb; i++ {
		if k == 0 {
			continue // c is zeroed; BLAS wants lda >= 1
		}
		gemm(m, n, k, a[i*m*k:], k, b[i*k*n:], n, c[i*m*n:], n)
	}
}
