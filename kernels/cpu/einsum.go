package cpu

import (
	"sort"
	"strings"

	"mstream/graph"
	"mstream/kernels"
	"mstream/status"
	"mstream/tensor"
)

// Einsum with one or two operands, as TF's EinsumOp: labels a-z/A-Z and
// one ellipsis per subscript (broadcast like NumPy), an explicit or
// implicit output. The work is reduced to data movement and one batched
// GEMM: each operand's repeated labels become a diagonal, labels that
// appear in neither the other operand nor the output are summed out, and
// the rest is transposed to [batch, free, contracted] x [batch,
// contracted, free] and multiplied with the same GEMM as BatchMatMul.

func init() {
	reg("Einsum", []tensor.DType{tensor.Float, tensor.Double, tensor.Half, tensor.Bfloat16, tensor.Int32, tensor.Int64}, nil, func(n *graph.Node) (kernels.Kernel, error) {
		eq := attrString(n, "equation", "")
		nIn := len(n.InTypes)
		spec, err := parseEinsum(eq, nIn)
		if err != nil {
			return nil, nodeErr(n, status.InvalidArgument, "%v", err)
		}
		return kernels.KernelFunc(func(ctx *kernels.Context) error { return einsum(ctx, spec) }), nil
	})
}

// Labels are small ints: 0..51 for letters; ellipsis dims get labels
// from ellBase up, numbered from the right (ellBase is the last dim).
const ellBase = 1000

type einsumSpec struct {
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

func parseEinsum(eq string, nIn int) (*einsumSpec, error) {
	eq = strings.ReplaceAll(eq, " ", "")
	lhs, rhs, explicit := strings.Cut(eq, "->")
	subs := strings.Split(lhs, ",")
	if len(subs) != 1 && len(subs) != 2 {
		return nil, status.Errorf(status.InvalidArgument, "Expecting 1 or 2 input subscripts in equation '%s' but got: %d", eq, len(subs))
	}
	if len(subs) != nIn {
		return nil, status.Errorf(status.InvalidArgument, "Expecting %d inputs but got: %d", len(subs), nIn)
	}
	spec := &einsumSpec{explicit: explicit}
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

func einsum(ctx *kernels.Context, spec *einsumSpec) error {
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
	// Ellipsis dims missing from the output (explicit output without
	// "...") are summed out like other labels.
	for i := range ops {
		ops[i] = diagonal(ops[i])
		other := map[int]bool{}
		if len(ops) == 2 {
			for _, l := range ops[1-i].labels {
				other[l] = true
			}
		}
		var drop []int
		for k, l := range ops[i].labels {
			if !inOut[l] && !other[l] {
				drop = append(drop, k)
			}
		}
		if len(drop) > 0 {
			ops[i] = sumOut(ops[i], drop)
		}
	}
	outShape := make(tensor.Shape, len(outLabels))
	for k, l := range outLabels {
		outShape[k] = dims[l]
	}
	o, err := ctx.Allocate(0, outShape)
	if err != nil {
		return err
	}
	var res operand
	if len(ops) == 1 {
		res = ops[0]
	} else {
		res = contract(ops[0], ops[1], inOut, dims)
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
	gatherStrided(o, res.t, src)
	return nil
}

// gatherStrided fills dst (row-major over its shape) from src where the
// element at index (i0, ..., ir) is read at sum(ik * srcStride[k]): a
// transpose, a diagonal or a broadcast depending on the strides.
func gatherStrided(dst, src *tensor.Tensor, srcStride []int64) {
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

// diagonal merges repeated labels of an operand (TF: "ii->i").
func diagonal(op operand) operand {
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
		return op
	}
	t := tensor.New(op.t.DType, shape)
	gatherStrided(t, op.t, src)
	return operand{t, labels}
}

// permute returns op with its dims in the order of perm.
func permute(op operand, perm []int) operand {
	ident := true
	for i, p := range perm {
		if p != i {
			ident = false
		}
	}
	if ident {
		return op
	}
	st := strides(op.t.Shape)
	shape := make(tensor.Shape, len(perm))
	src := make([]int64, len(perm))
	labels := make([]int, len(perm))
	for i, p := range perm {
		shape[i], src[i], labels[i] = op.t.Shape[p], st[p], op.labels[p]
	}
	t := tensor.New(op.t.DType, shape)
	gatherStrided(t, op.t, src)
	return operand{t, labels}
}

// sumOut sums op over the dims in drop.
func sumOut(op operand, drop []int) operand {
	isDrop := map[int]bool{}
	for _, d := range drop {
		isDrop[d] = true
	}
	var keep, perm []int
	for k := range op.labels {
		if !isDrop[k] {
			keep = append(keep, k)
		}
	}
	perm = append(append(perm, keep...), drop...)
	p := permute(op, perm)
	var shape tensor.Shape
	var labels []int
	for i := range keep {
		shape = append(shape, p.t.Shape[i])
		labels = append(labels, p.labels[i])
	}
	rows := shape.NumElements()
	inner := int64(1)
	for _, d := range p.t.Shape[len(keep):] {
		inner *= d
	}
	t := tensor.New(op.t.DType, shape)
	switch t.DType {
	case tensor.Float:
		sumRowsF(p.t.F32(), t.F32(), rows, inner)
	case tensor.Double:
		sumRowsF(p.t.F64(), t.F64(), rows, inner)
	case tensor.Half, tensor.Bfloat16:
		out := make([]float32, rows)
		sumRowsF(toF32(p.t), out, rows, inner)
		storeF32(t, out)
	case tensor.Int32:
		sumRowsI(p.t.I32(), t.I32(), rows, inner)
	case tensor.Int64:
		sumRowsI(p.t.I64(), t.I64(), rows, inner)
	}
	return operand{t, labels}
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

// contract multiplies two operands whose remaining labels are batch (in
// both and the output), contracted (in both, not the output) or free (in
// one and the output). The result's labels are batch, free a, free b.
func contract(a, b operand, inOut map[int]bool, dims map[int]int64) operand {
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
	// Broadcast batch dims of size 1 to the common size and arrange
	// [batch, freeA, con] and [batch, con, freeB].
	arrange := func(op operand, order []int) operand {
		same := len(order) == len(op.labels)
		for i, l := range order {
			same = same && op.labels[i] == l && op.t.Shape[i] == dims[l]
		}
		if same {
			return op
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
		t := tensor.New(op.t.DType, shape)
		gatherStrided(t, op.t, src)
		return operand{t, order}
	}
	orderA := append(append(append([]int{}, batch...), freeA...), con...)
	orderB := append(append(append([]int{}, batch...), con...), freeB...)
	A, B := arrange(a, orderA), arrange(b, orderB)
	prod := func(ls []int) int {
		p := int64(1)
		for _, l := range ls {
			p *= dims[l]
		}
		return int(p)
	}
	nb, m, k, n := prod(batch), prod(freeA), prod(con), prod(freeB)
	labels := append(append(append([]int{}, batch...), freeA...), freeB...)
	shape := make(tensor.Shape, len(labels))
	for i, l := range labels {
		shape[i] = dims[l]
	}
	out := tensor.New(a.t.DType, shape)
	if out.NumElements() > 0 {
		switch out.DType {
		case tensor.Float:
			batchGemm(nb, m, n, k, A.t.F32(), B.t.F32(), out.F32(), sgemmNN)
		case tensor.Double:
			batchGemm(nb, m, n, k, A.t.F64(), B.t.F64(), out.F64(), dgemmNN)
		case tensor.Half, tensor.Bfloat16:
			o := make([]float32, out.NumElements())
			batchGemm(nb, m, n, k, toF32(A.t), toF32(B.t), o, sgemmNN)
			storeF32(out, o)
		case tensor.Int32:
			batchGemm(nb, m, n, k, A.t.I32(), B.t.I32(), out.I32(), intGemmNN[int32])
		case tensor.Int64:
			batchGemm(nb, m, n, k, A.t.I64(), B.t.I64(), out.I64(), intGemmNN[int64])
		}
	}
	return operand{out, labels}
}

func batchGemm[T any](nb, m, n, k int, a, b, c []T, gemm gemmNN[T]) {
	for i := 0; i < nb; i++ {
		if k == 0 {
			continue // c is zeroed; BLAS wants lda >= 1
		}
		gemm(m, n, k, a[i*m*k:], k, b[i*k*n:], n, c[i*m*n:], n)
	}
}
