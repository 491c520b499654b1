package cpu

import (
	"bytes"

	"mstream/graph"
	"mstream/kernels"
	"mstream/status"
	"mstream/tensor"
)

func init() {
	reg("StringSplitV2", nil, nil, func(n *graph.Node) (kernels.Kernel, error) {
		maxsplit := int(attrInt(n, "maxsplit", -1))
		return kernels.KernelFunc(func(ctx *kernels.Context) error { return stringSplitV2(ctx, maxsplit) }), nil
	})
}

// cSpace is C's isspace in the "C" locale, which TF's whitespace split
// uses.
func cSpace(c byte) bool { return c == ' ' || c >= '\t' && c <= '\r' }

// splitV2 is Python's str.split, as TF's SplitV2: with a separator every
// occurrence splits (empty pieces kept); without one, runs of whitespace
// split and leading and trailing whitespace gives no pieces. maxsplit > 0
// caps the splits, the rest of the string being the last piece.
func splitV2(s, sep []byte, maxsplit int) [][]byte {
	if maxsplit == 0 {
		return [][]byte{s}
	}
	var out [][]byte
	split := 0
	if len(sep) == 0 {
		skip := func() {
			for len(s) > 0 && cSpace(s[0]) {
				s = s[1:]
			}
		}
		skip()
		for len(s) > 0 {
			i := 0
			for i < len(s) && !cSpace(s[i]) {
				i++
			}
			out = append(out, s[:i])
			s = s[i:]
			skip()
			split++
			if maxsplit > 0 && split == maxsplit {
				return append(out, s)
			}
		}
		return out
	}
	for {
		i := bytes.Index(s, sep)
		if i < 0 {
			return append(out, s)
		}
		out = append(out, s[:i])
		s = s[i+len(sep):]
		split++
		if maxsplit > 0 && split == maxsplit {
			return append(out, s)
		}
	}
}

func stringSplitV2(ctx *kernels.Context, maxsplit int) error {
	in, sep := ctx.Input(0), ctx.Input(1)
	if len(in.Shape) != 1 {
		return ctx.Errorf(status.InvalidArgument, "input must be a vector, got shape: %v", in.Shape)
	}
	if len(sep.Shape) != 0 {
		return ctx.Errorf(status.InvalidArgument, "sep must be a scalar, got shape: %v", sep.Shape)
	}
	var tokens [][]byte
	counts := make([]int, len(in.Strs))
	widest := 0
	for i, s := range in.Strs {
		parts := splitV2(s, sep.Strs[0], maxsplit)
		counts[i] = len(parts)
		widest = max(widest, len(parts))
		tokens = append(tokens, parts...)
	}
	n := int64(len(tokens))
	idx, err := ctx.Allocate(0, tensor.Shape{n, 2})
	if err != nil {
		return err
	}
	vals, err := ctx.Allocate(1, tensor.Shape{n})
	if err != nil {
		return err
	}
	shape, err := ctx.Allocate(2, tensor.Shape{2})
	if err != nil {
		return err
	}
	shape.I64()[0], shape.I64()[1] = int64(len(in.Strs)), int64(widest)
	c := 0
	budget := ctx.StringBytes(vals)
	for i, k := range counts {
		for j := 0; j < k; j++ {
			idx.I64()[2*c], idx.I64()[2*c+1] = int64(i), int64(j)
			if err := budget.Take(int64(len(tokens[c]))); err != nil {
				return err
			}
			vals.Strs[c] = append([]byte{}, tokens[c]...)
			c++
		}
	}
	return nil
}
