package cpu

import (
	"bytes"

	"mstream/graph"
	"mstream/kernels"
	"mstream/status"
	"mstream/tensor"
)

// String kernels of feature columns and serving signatures. Strings are
// byte strings, as in TF: no kernel here assumes UTF-8 unless its op says
// so (Substr's UTF8_CHAR unit).

func init() {
	hashOp := func(op string, h func(*graph.Node) (func([]byte) uint64, error)) {
		reg(op, nil, nil, func(n *graph.Node) (kernels.Kernel, error) {
			buckets := attrInt(n, "num_buckets", 0)
			if buckets < 1 {
				return nil, status.Errorf(status.InvalidArgument, "%s: num_buckets must be at least 1, got %d", n.Name, buckets)
			}
			hash, err := h(n)
			if err != nil {
				return nil, err
			}
			return kernels.KernelFunc(func(ctx *kernels.Context) error {
				in := ctx.Input(0)
				out, err := ctx.Allocate(0, in.Shape)
				if err != nil {
					return err
				}
				o := out.I64()
				for i, s := range in.Strs {
					o[i] = int64(hash(s) % uint64(buckets))
				}
				return nil
			}), nil
		})
	}
	hashOp("StringToHashBucketFast", func(*graph.Node) (func([]byte) uint64, error) { return fingerprint64, nil })
	hashOp("StringToHashBucket", func(*graph.Node) (func([]byte) uint64, error) { return legacyHash64, nil })
	hashOp("StringToHashBucketStrong", func(n *graph.Node) (func([]byte) uint64, error) {
		key := attrInts(n, "key")
		if len(key) != 2 {
			return nil, status.Errorf(status.InvalidArgument, "%s: Key must have 2 elements", n.Name)
		}
		k0, k1 := uint64(key[0]), uint64(key[1])
		return func(s []byte) uint64 { return sipHash24(k0, k1, s) }, nil
	})
	reg("StringLength", nil, nil, func(n *graph.Node) (kernels.Kernel, error) {
		utf8, err := utf8Unit(n)
		if err != nil {
			return nil, err
		}
		return kernels.KernelFunc(func(ctx *kernels.Context) error { return stringLength(ctx, utf8) }), nil
	})
	reg("StringJoin", nil, nil, func(n *graph.Node) (kernels.Kernel, error) {
		sep := []byte(attrString(n, "separator", ""))
		return kernels.KernelFunc(func(ctx *kernels.Context) error { return stringJoin(ctx, sep) }), nil
	})
}

// stringJoin joins its inputs element by element; scalars join every
// element, every other input must have one shape.
func stringJoin(ctx *kernels.Context, sep []byte) error {
	var shape tensor.Shape
	for _, in := range ctx.Inputs {
		if len(in.Shape) == 0 {
			continue
		}
		if len(shape) == 0 {
			shape = in.Shape
		} else if !shape.Equal(in.Shape) {
			return ctx.Errorf(status.InvalidArgument, "Input shapes do not match: %v vs. %v", shape, in.Shape)
		}
	}
	out, err := ctx.Allocate(0, shape)
	if err != nil {
		return err
	}
	parts := make([][]byte, len(ctx.Inputs))
	budget := ctx.StringBytes(out)
	for i := range out.Strs {
		n := int64(len(sep)) * int64(max(len(parts)-1, 0))
		for j, in := range ctx.Inputs {
			if len(in.Shape) == 0 {
				parts[j] = in.Strs[0]
			} else {
				parts[j] = in.Strs[i]
			}
			n += int64(len(parts[j]))
		}
		if err := budget.Take(n); err != nil {
			return err
		}
		out.Strs[i] = bytes.Join(parts, sep)
	}
	return nil
}

// stringLength is each element's length in bytes or, with utf8, in
// characters: as TF's UTF8StrLen, the bytes that are not continuation
// bytes. TF's output is int32 and so is the count, as TF truncates it.
func stringLength(ctx *kernels.Context, utf8 bool) error {
	in := ctx.Input(0)
	out, err := ctx.Allocate(0, in.Shape)
	if err != nil {
		return err
	}
	o := out.I32()
	for i, s := range in.Strs {
		n := len(s)
		if utf8 {
			for _, c := range s {
				if trailByte(c) {
					n--
				}
			}
		}
		o[i] = int32(n)
	}
	return nil
}
