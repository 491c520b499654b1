package cpu

import (
	"mstream/graph"
	"mstream/kernels"
	"mstream/status"
	"mstream/tensor"
)

func init() {
	reg("Substr", nil, nil, func(n *graph.Node) (kernels.Kernel, error) {
		utf8, err := utf8Unit(n)
		if err != nil {
			return nil, err
		}
		return kernels.KernelFunc(func(ctx *kernels.Context) error { return substr(ctx, utf8) }), nil
	})
}

// utf8Unit reads the unit attr of a string op that counts bytes or
// characters (TF's ParseCharUnit): true for UTF8_CHAR, false for BYTE,
// the default.
func utf8Unit(n *graph.Node) (bool, error) {
	unit := attrString(n, "unit", "BYTE")
	if unit != "BYTE" && unit != "UTF8_CHAR" {
		return false, status.Errorf(status.InvalidArgument, "%s: unit %q is not BYTE or UTF8_CHAR", n.Name, unit)
	}
	return unit == "UTF8_CHAR", nil
}

// trailByte is TF's IsTrailByte: a UTF-8 continuation byte (10xxxxxx),
// which does not start a character. Invalid UTF-8 is counted as TF counts
// it, byte by byte, never rejected.
func trailByte(c byte) bool { return int8(c) < -0x40 }

// forwardUTF8 and backUTF8 are TF's Forward/BackNUTF8CharPositions: move
// *pos by n characters, reporting whether all n fit in s.
func forwardUTF8(s []byte, n int64, pos *int64) bool {
	k := int64(0)
	for k < n && *pos < int64(len(s)) {
		*pos++
		for *pos < int64(len(s)) && trailByte(s[*pos]) {
			*pos++
		}
		k++
	}
	return k == n
}

func backUTF8(s []byte, n int64, pos *int64) bool {
	k := int64(0)
	for k < n && *pos > 0 {
		*pos--
		for trailByte(s[*pos]) && *pos > 0 {
			*pos--
		}
		k++
	}
	return k == n
}

// substrOne is one element of TF's Substr: the byte range the (pos, len)
// pair names, or false when pos is out of range.
func substrOne(s []byte, pos, length int64, utf8 bool) ([]byte, bool) {
	if !utf8 {
		if pos < 0 {
			pos += int64(len(s))
		}
		if pos < 0 || pos > int64(len(s)) {
			return nil, false
		}
		// TF's StringPiece::substr takes the length as size_t: a
		// negative one runs to the end.
		if length < 0 || length > int64(len(s))-pos {
			length = int64(len(s)) - pos
		}
		return s[pos : pos+length], true
	}
	var start, end int64
	if pos >= 0 {
		if !forwardUTF8(s, pos, &start) {
			return nil, false
		}
		end = start
		forwardUTF8(s, length, &end)
	} else {
		end = int64(len(s))
		skip := max(-pos-length, 0)
		if !backUTF8(s, skip, &end) {
			return nil, false
		}
		start = end
		if !backUTF8(s, -pos-skip, &start) {
			return nil, false
		}
	}
	return s[start:end], true
}

func substr(ctx *kernels.Context, utf8 bool) error {
	in, pt, lt := ctx.Input(0), ctx.Input(1), ctx.Input(2)
	if !pt.Shape.Equal(lt.Shape) {
		return ctx.Errorf(status.InvalidArgument, "pos and len should have the same shape, got: %v vs. %v", pt.Shape, lt.Shape)
	}
	pos, _ := pt.Int64s()
	lens, _ := lt.Int64s()
	outShape := in.Shape
	// inAt and pAt map an output element to its input string and (pos,
	// len) pair.
	inAt := func(i int) int { return i }
	pAt := func(i int) int { return i }
	switch {
	case len(pt.Shape) == 0:
		pAt = func(int) int { return 0 }
	case in.Shape.Equal(pt.Shape):
	default:
		rank := max(len(in.Shape), len(pt.Shape))
		a, b := padShape(in.Shape, rank), padShape(pt.Shape, rank)
		outShape = make(tensor.Shape, rank)
		for d := 0; d < rank; d++ {
			switch {
			case a[d] == b[d] || b[d] == 1:
				outShape[d] = a[d]
			case a[d] == 1:
				outShape[d] = b[d]
			default:
				return ctx.Errorf(status.InvalidArgument, "Incompatible shapes: %v vs. %v", in.Shape, pt.Shape)
			}
		}
		if rank != 1 && rank != 2 {
			return ctx.Errorf(status.Unimplemented, "Substr broadcast not implemented for %d dimensions", rank)
		}
		index := func(s tensor.Shape) func(int) int {
			return func(i int) int {
				cols := int(outShape[rank-1])
				r, c := i/max(cols, 1), i%max(cols, 1)
				if rank == 1 {
					r, c = 0, i
				}
				k := 0
				if rank == 2 && s[0] != 1 {
					k = r * int(s[1])
				}
				if s[rank-1] != 1 {
					k += c
				}
				return k
			}
		}
		inAt, pAt = index(a), index(b)
	}
	out, err := ctx.Allocate(0, outShape)
	if err != nil {
		return err
	}
	budget := ctx.StringBytes(out)
	for i := range out.Strs {
		s := in.Strs[inAt(i)]
		p, l := pos[pAt(i)], lens[pAt(i)]
		sub, ok := substrOne(s, p, l, utf8)
		if !ok {
			if utf8 {
				return ctx.Errorf(status.InvalidArgument, "pos %d out of range for string at index %d", p, i)
			}
			return ctx.Errorf(status.InvalidArgument, "pos %d out of range for string b'%s' at index %d", p, s, i)
		}
		if err := budget.Take(int64(len(sub))); err != nil {
			return err
		}
		out.Strs[i] = append([]byte{}, sub...)
	}
	return nil
}

// padShape left-pads s with ones to rank.
func padShape(s tensor.Shape, rank int) tensor.Shape {
	out := make(tensor.Shape, rank-len(s), rank)
	for i := range out {
		out[i] = 1
	}
	return append(out, s...)
}
