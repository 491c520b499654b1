package cuda

import (
	"sort"
	"strings"

	cu "mstream/device/cuda"
	"mstream/graph"
	"mstream/kernels"
	"mstream/status"
	"mstream/tensor"
)

// Einsum on the GPU for the two-operand equations that are one batched
// GEMM (the attention and dense-layer forms Keras emits, e.g.
// "abc,cde->abde", "aecd,abcd->acbe"): every label appears once per
// subscript and in both inputs (batch or contracted) or in one input and
// the output (free). Each operand is moved to [batch, free, contracted] /
// [batch, contracted, free] with move.cu's strided map (skipped when
// already in that order), multiplied by one strided-batched cuBLAS GEMM,
// and the result moved to the output's label order. Other equations
// (one operand, ellipses, diagonals, labels summed out of one input) and
// non-float dtypes get a factory error, which placement answers by running
// the node on the CPU.

type einsumGPU struct {
	a, b, out []byte // labels
}

func init() {
	reg("Einsum", "T", floatTypes, nil, func(n *graph.Node) (kernels.Kernel, error) {
		eq := ""
		if a := n.Attrs["equation"]; a != nil {
			eq = string(a.GetS())
		}
		e, why := parseEinsumGPU(eq, len(n.InTypes))
		if why != "" {
			return nil, status.Errorf(status.Unimplemented, "node '%s': Einsum %q on the GPU: %s", n.Name, eq, why)
		}
		return fn(func(k kctx) error { return e.compute(k) })(n)
	})
}

// parseEinsumGPU accepts the batched-GEMM subset; why says what is not.
func parseEinsumGPU(eq string, nIn int) (*einsumGPU, string) {
	eq = strings.ReplaceAll(eq, " ", "")
	lhs, rhs, explicit := strings.Cut(eq, "->")
	subs := strings.Split(lhs, ",")
	if len(subs) != 2 || nIn != 2 {
		return nil, "two operands only"
	}
	letter := func(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
	once := func(s string) bool {
		for i := 0; i < len(s); i++ {
			if !letter(s[i]) || strings.IndexByte(s[i+1:], s[i]) >= 0 {
				return false
			}
		}
		return true
	}
	a, b := subs[0], subs[1]
	if !once(a) || !once(b) {
		return nil, "ellipses and repeated labels are not supported"
	}
	out := rhs
	if !explicit {
		// Labels used once, in label order (a-z, then A-Z).
		var ls []byte
		for _, s := range []string{a, b} {
			for i := 0; i < len(s); i++ {
				if strings.Count(a+b, s[i:i+1]) == 1 {
					ls = append(ls, s[i])
				}
			}
		}
		rank := func(c byte) int {
			if c >= 'a' {
				return int(c - 'a')
			}
			return int(c-'A') + 26
		}
		sort.Slice(ls, func(i, j int) bool { return rank(ls[i]) < rank(ls[j]) })
		out = string(ls)
	}
	if !once(out) {
		return nil, "the output has an ellipsis or repeated labels"
	}
	for _, s := range []string{a, b} {
		other := b
		if s == b {
			other = a
		}
		for i := 0; i < len(s); i++ {
			c := s[i : i+1]
			if !strings.Contains(other, c) && !strings.Contains(out, c) {
				return nil, "a label summed out of one operand"
			}
		}
	}
	for i := 0; i < len(out); i++ {
		if !strings.Contains(a+b, out[i:i+1]) {
			return nil, "an output label not in the inputs"
		}
	}
	return &einsumGPU{[]byte(a), []byte(b), []byte(out)}, ""
}

func (e *einsumGPU) compute(k kctx) error {
	ta, tb := k.Input(0), k.Input(1)
	dims := map[byte]int64{}
	for i, pair := range []struct {
		t  *tensor.Tensor
		ls []byte
	}{{ta, e.a}, {tb, e.b}} {
		if len(pair.t.Shape) != len(pair.ls) {
			return k.Errorf(status.InvalidArgument, "Input %d has rank %d, which does not match subscript %d labels", i, len(pair.t.Shape), len(pair.ls))
		}
		for ax, l := range pair.ls {
			d := pair.t.Shape[ax]
			if old, ok := dims[l]; ok && old != d {
				return k.Errorf(status.InvalidArgument, "Expected dimension %d at axis %d of input %d shaped %v but got dimension %d", old, ax, i, pair.t.Shape, d)
			}
			dims[l] = d
		}
	}
	in := func(ls []byte, c byte) bool {
		for _, x := range ls {
			if x == c {
				return true
			}
		}
		return false
	}
	// Label groups, batch and free in output order, contracted in a's.
	var batch, freeA, freeB, con []byte
	for _, l := range e.out {
		switch {
		case in(e.a, l) && in(e.b, l):
			batch = append(batch, l)
		case in(e.a, l):
			freeA = append(freeA, l)
		default:
			freeB = append(freeB, l)
		}
	}
	for _, l := range e.a {
		if in(e.b, l) && !in(e.out, l) {
			con = append(con, l)
		}
	}
	prod := func(ls []byte) int64 {
		p := int64(1)
		for _, l := range ls {
			p *= dims[l]
		}
		return p
	}
	nb, m, n, kk := prod(batch), prod(freeA), prod(freeB), prod(con)
	outShape := make(tensor.Shape, len(e.out))
	for i, l := range e.out {
		outShape[i] = dims[l]
	}
	o, err := k.Allocate(0, outShape)
	if err != nil {
		return err
	}
	if o.NumElements() == 0 {
		return nil
	}
	if kk == 0 {
		return k.memset(ptr(o), 0, len(o.Buf))
	}
	if nb > 1<<31-1 || m > 1<<31-1 || n > 1<<31-1 || kk > 1<<31-1 {
		return k.Errorf(status.Unimplemented, "Einsum GEMM of %d x %d x %d x %d on the GPU", nb, m, n, kk)
	}
	// arrange gives t with its labels in order want: t itself when they
	// already are, else a scratch copy through the strided map.
	arrange := func(t *tensor.Tensor, have, want []byte) (*tensor.Tensor, error) {
		if string(have) == string(want) {
			return t, nil
		}
		st := rowStrides(t.Shape)
		shape := make(tensor.Shape, len(want))
		md := make([]mdim, len(want))
		for i, l := range want {
			ax := strings.IndexByte(string(have), l)
			shape[i] = t.Shape[ax]
			md[i] = mdim{out: t.Shape[ax], istr: st[ax], step: 1}
		}
		s, err := k.Alloc(t.DType, shape)
		if err != nil {
			return nil, k.Errorf(status.CodeOf(err), "Einsum scratch: %v", err)
		}
		return s, moveLaunch(k, s, t, nil, md)
	}
	cat := func(parts ...[]byte) []byte {
		var r []byte
		for _, p := range parts {
			r = append(r, p...)
		}
		return r
	}
	a2, err := arrange(ta, e.a, cat(batch, freeA, con))
	if err != nil {
		return err
	}
	b2, err := arrange(tb, e.b, cat(batch, con, freeB))
	if err != nil {
		return err
	}
	res := o
	natural := cat(batch, freeA, freeB)
	if string(natural) != string(e.out) {
		shape := make(tensor.Shape, len(natural))
		for i, l := range natural {
			shape[i] = dims[l]
		}
		if res, err = k.Alloc(o.DType, shape); err != nil {
			return k.Errorf(status.CodeOf(err), "Einsum scratch: %v", err)
		}
	}
	g := cu.GemmArgs{Double: ta.DType == tensor.Double, TF32: allowTF32.Load(), M: int(m), N: int(n), K: int(kk),
		A: ptr(a2), B: ptr(b2), C: ptr(res), Batch: int(nb), StrideA: m * kk, StrideB: kk * n, StrideC: m * n}
	if err := k.gemm(g); err != nil {
		return err
	}
	if res == o {
		return nil
	}
	// The product is [batch, freeA, freeB]; move it to the output order.
	st := rowStrides(res.Shape)
	md := make([]mdim, len(e.out))
	for i, l := range e.out {
		ax := strings.IndexByte(string(natural), l)
		md[i] = mdim{out: res.Shape[ax], istr: st[ax], step: 1}
	}
	return moveLaunch(k, o, res, nil, md)
}
