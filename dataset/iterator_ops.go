package dataset

import (
	"mstream/graph"
	"mstream/kernels"
	"mstream/resource"
	"mstream/status"
	"mstream/tensor"
)

// elemTypes is an iterator op's output_types attr: its elements' dtypes.
func elemTypes(n *graph.Node) []tensor.DType {
	var ts []tensor.DType
	for _, t := range n.Attrs["output_types"].GetList().GetType() {
		ts = append(ts, tensor.DType(t))
	}
	return ts
}

func handleOf(container, name string) *tensor.Tensor {
	return resource.Handle{Container: container, Name: name, Kind: Kind}.Tensor()
}

func registerIterators() {
	for _, op := range []string{"Iterator", "IteratorV2"} {
		register(op, func(n *graph.Node, b kernels.Binding) (kernels.Kernel, error) {
			c, name := iteratorName(n)
			return kernels.KernelFunc(func(ctx *kernels.Context) error {
				b.Resources.LookupOrCreate(c, name, Kind, func() resource.Resource { return &iteratorRes{types: elemTypes(n)} })
				ctx.SetOutput(0, handleOf(c, name))
				return nil
			}), nil
		})
	}
	for _, op := range []string{"AnonymousIterator", "AnonymousIteratorV2", "AnonymousIteratorV3"} {
		register(op, func(n *graph.Node, b kernels.Binding) (kernels.Kernel, error) {
			return kernels.KernelFunc(func(ctx *kernels.Context) error {
				name := b.Resources.AnonymousName("Iterator")
				if err := b.Resources.Create("", name, &iteratorRes{}); err != nil {
					return kernels.WrapNode(err, n)
				}
				ctx.SetOutput(0, handleOf("", name))
				if len(n.OutTypes) > 1 { // V2's deleter: DeleteIterator deletes by handle
					ctx.SetOutput(1, tensor.New(tensor.Variant, tensor.Shape{}))
				}
				return nil
			}), nil
		})
	}
	// Seed generators (TF2's shuffle): ShuffleDatasetV3 keeps a generator
	// of its own made from its seed inputs and reshuffle attr, which is
	// what TF does when the handle names no generator (a
	// DummySeedGenerator's); these ops only hand out a handle.
	for _, op := range []string{"DummySeedGenerator", "AnonymousSeedGenerator"} {
		register(op, func(n *graph.Node, b kernels.Binding) (kernels.Kernel, error) {
			return kernels.KernelFunc(func(ctx *kernels.Context) error {
				ctx.SetOutput(0, resource.Handle{Name: n.Op, Kind: "N10tensorflow4data13SeedGeneratorE"}.Tensor())
				if len(n.OutTypes) > 1 {
					ctx.SetOutput(1, tensor.New(tensor.Variant, tensor.Shape{}))
				}
				return nil
			}), nil
		})
	}
	register("DeleteSeedGenerator", func(n *graph.Node, b kernels.Binding) (kernels.Kernel, error) {
		return kernels.KernelFunc(func(*kernels.Context) error { return nil }), nil
	})
	register("MakeIterator", func(n *graph.Node, b kernels.Binding) (kernels.Kernel, error) {
		return kernels.KernelFunc(func(ctx *kernels.Context) error {
			d, err := inputDataset(ctx, 0)
			if err != nil {
				return kernels.WrapNode(err, n)
			}
			r, err := lookupIterator(b.Resources, ctx.Input(1))
			if err != nil {
				return kernels.WrapNode(err, n)
			}
			it, err := d.Iterate()
			if err != nil {
				return kernels.WrapNode(err, n)
			}
			r.set(it)
			return nil
		}), nil
	})
	register("OneShotIterator", func(n *graph.Node, b kernels.Binding) (kernels.Kernel, error) {
		f, err := bindFn(n, b, "dataset_factory")
		if err != nil {
			return nil, err
		}
		c, name := iteratorName(n)
		return kernels.WithClose(func(ctx *kernels.Context) error {
			r := b.Resources.LookupOrCreate(c, name, Kind, func() resource.Resource { return &iteratorRes{types: elemTypes(n)} }).(*iteratorRes)
			r.mu.Lock()
			defer r.mu.Unlock()
			if !r.made { // the first use runs the factory, once per session
				out, err := f.Call(nil)
				if err != nil {
					return kernels.WrapNode(err, n)
				}
				d, err := datasetOf(out)
				if err != nil {
					return ctx.Errorf(status.InvalidArgument, "The `dataset_factory` function must return a single scalar of dtype DT_VARIANT: %v", err)
				}
				it, err := d.Iterate()
				if err != nil {
					return kernels.WrapNode(err, n)
				}
				r.it, r.made = it, true
			}
			ctx.SetOutput(0, handleOf(c, name))
			return nil
		}, f), nil
	})
	for _, op := range []string{"IteratorGetNext", "IteratorGetNextSync"} {
		register(op, func(n *graph.Node, b kernels.Binding) (kernels.Kernel, error) {
			return kernels.KernelFunc(func(ctx *kernels.Context) error {
				r, err := lookupIterator(b.Resources, ctx.Input(0))
				if err != nil {
					return kernels.WrapNode(err, n)
				}
				e, err := r.next()
				if err != nil {
					return kernels.WrapNode(err, n)
				}
				if len(e) != len(n.OutTypes) {
					return ctx.Errorf(status.InvalidArgument, "Number of components in the element (%d) does not match output_types (%d)", len(e), len(n.OutTypes))
				}
				for i, t := range e {
					if t.DType != n.OutTypes[i] {
						return ctx.Errorf(status.InvalidArgument, "Data type mismatch at component %d: expected %v but got %v.", i, n.OutTypes[i], t.DType)
					}
					ctx.SetOutput(i, t)
				}
				return nil
			}), nil
		})
	}
	register("DeleteIterator", func(n *graph.Node, b kernels.Binding) (kernels.Kernel, error) {
		return kernels.KernelFunc(func(ctx *kernels.Context) error {
			h, err := resource.FromTensor(ctx.Input(0))
			if err != nil {
				return kernels.WrapNode(err, n)
			}
			r, err := lookupIterator(b.Resources, ctx.Input(0))
			if err != nil {
				return kernels.WrapNode(err, n)
			}
			r.close()
			return kernels.WrapNode(b.Resources.Delete(h.Container, h.Name, Kind), n)
		}), nil
	})
	register("IteratorToStringHandle", func(n *graph.Node, b kernels.Binding) (kernels.Kernel, error) {
		return kernels.KernelFunc(func(ctx *kernels.Context) error {
			if _, err := lookupIterator(b.Resources, ctx.Input(0)); err != nil {
				return kernels.WrapNode(err, n)
			}
			t := tensor.New(tensor.String, tensor.Shape{})
			t.Strs[0] = ctx.Input(0).Strs[0]
			ctx.SetOutput(0, t)
			return nil
		}), nil
	})
	for _, op := range []string{"IteratorFromStringHandle", "IteratorFromStringHandleV2"} {
		register(op, func(n *graph.Node, b kernels.Binding) (kernels.Kernel, error) {
			return kernels.KernelFunc(func(ctx *kernels.Context) error {
				s := ctx.Input(0)
				if s.DType != tensor.String || len(s.Shape) != 0 {
					return ctx.Errorf(status.InvalidArgument, "string_handle must be a scalar")
				}
				h := &tensor.Tensor{DType: tensor.Resource, Shape: tensor.Shape{}, Strs: [][]byte{s.Strs[0]}}
				hd, err := resource.FromTensor(h)
				if err != nil || hd.Kind != Kind {
					return ctx.Errorf(status.InvalidArgument, "Could not parse string_handle as a valid ResourceHandle")
				}
				r, err := lookupIterator(b.Resources, h)
				if err != nil {
					return kernels.WrapNode(err, n)
				}
				if want := n.Attrs["output_types"].GetList(); want != nil && len(want.Type) > 0 && r.types != nil {
					if len(want.Type) != len(r.types) {
						return ctx.Errorf(status.InvalidArgument, "Number of components in the iterator (%d) does not match output_types (%d)", len(r.types), len(want.Type))
					}
					for i, t := range want.Type {
						if tensor.DType(t) != r.types[i] {
							return ctx.Errorf(status.InvalidArgument, "Data type mismatch at component %d: expected %v but got %v.", i, r.types[i], tensor.DType(t))
						}
					}
				}
				ctx.SetOutput(0, h)
				return nil
			}), nil
		})
	}
}
