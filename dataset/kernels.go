package dataset

import (
	"mstream/graph"
	"mstream/kernels"
	"mstream/resource"
	"mstream/status"
	"mstream/tensor"
)

// The dataset and iterator ops' kernels, host only: a GPU session's placer
// runs them on the CPU (their inputs and outputs are host values: int64
// scalars, strings, DT_VARIANT datasets and DT_RESOURCE iterators), and
// IteratorGetNext's outputs travel to GPU kernels as any host output does.
// Every kernel is kernels.Stateful: Bind hands it the session's resources
// (the iterators) and the graph whose library holds its functions.

// bindFunc makes a kernel from a node and the plan's binding.
type bindFunc func(n *graph.Node, b kernels.Binding) (kernels.Kernel, error)

type unbound struct {
	n    *graph.Node
	bind bindFunc
}

func (u unbound) Compute(ctx *kernels.Context) error {
	return ctx.Errorf(status.Internal, "kernel not bound to a session")
}

func (u unbound) Bind(b kernels.Binding) (kernels.Kernel, error) {
	if b.Resources == nil {
		b.Resources = resource.NewManager()
	}
	return u.bind(u.n, b)
}

func register(op string, bind bindFunc) {
	kernels.Register(kernels.Def{Op: op, Device: kernels.CPU,
		Factory: func(n *graph.Node) (kernels.Kernel, error) { return unbound{n, bind}, nil }})
}

// source registers a dataset op whose kernel needs nothing from the
// binding: make builds the dataset from the kernel's inputs.
func source(op string, make func(ctx *kernels.Context) (Dataset, error)) {
	register(op, func(n *graph.Node, b kernels.Binding) (kernels.Kernel, error) {
		return kernels.KernelFunc(func(ctx *kernels.Context) error {
			d, err := make(ctx)
			if err != nil {
				return kernels.WrapNode(err, ctx.Node)
			}
			setDataset(ctx, d)
			return nil
		}), nil
	})
}

// withFunc registers a dataset op with a function attr (fnAttr), built
// into a Func when the plan binds the kernel.
func withFunc(op, fnAttr string, make func(ctx *kernels.Context, f *Func) (Dataset, error)) {
	register(op, func(n *graph.Node, b kernels.Binding) (kernels.Kernel, error) {
		f, err := bindFn(n, b, fnAttr)
		if err != nil {
			return nil, err
		}
		return kernels.WithClose(func(ctx *kernels.Context) error {
			d, err := make(ctx, f)
			if err != nil {
				return kernels.WrapNode(err, ctx.Node)
			}
			setDataset(ctx, d)
			return nil
		}, f), nil
	})
}

func bindFn(n *graph.Node, b kernels.Binding, attr string) (*Func, error) {
	fn := n.Attrs[attr].GetFunc()
	if fn == nil {
		return nil, status.InvalidArg("node '%s' (op %s): attr %s is not a function", n.Name, n.Op, attr)
	}
	if b.Graph == nil {
		return nil, status.InvalidArg("node '%s' (op %s): no function library to find %s in", n.Name, n.Op, fn.GetName())
	}
	return NewFunc(b.Graph.LibraryLocked(), fn, b.Resources)
}

func setDataset(ctx *kernels.Context, d Dataset) {
	t := tensor.New(tensor.Variant, tensor.Shape{})
	t.Vars[0] = d
	ctx.SetOutput(0, t)
}

func inputDataset(ctx *kernels.Context, i int) (Dataset, error) {
	t := ctx.Input(i)
	if len(t.Shape) != 0 || len(t.Vars) != 1 {
		return nil, status.InvalidArg("Dataset tensor must be a scalar")
	}
	d, ok := t.Vars[0].(Dataset)
	if !ok {
		return nil, status.InvalidArg("Tensor must be a Dataset object.")
	}
	return d, nil
}

// scalar reads input i, a scalar of an integer or bool dtype, as int64;
// name is the op's argument name, for the message.
func scalar(ctx *kernels.Context, i int, name string) (int64, error) {
	t := ctx.Input(i)
	if len(t.Shape) != 0 {
		return 0, status.InvalidArg("%s must be a scalar", name)
	}
	switch t.DType {
	case tensor.Int64:
		return t.I64()[0], nil
	case tensor.Int32:
		return int64(t.I32()[0]), nil
	case tensor.Bool:
		if t.Bools()[0] {
			return 1, nil
		}
		return 0, nil
	}
	return 0, status.InvalidArg("%s must be an integer scalar, got %v", name, t.DType)
}

// argRange is the span of the node's inputs that OpDef input arg name covers.
func argRange(ctx *kernels.Context, name string) []*tensor.Tensor {
	r := ctx.Node.InArgs[name]
	return ctx.Inputs[r[0]:r[1]]
}

// owned copies every tensor of ts (see own).
func owned(ctx *kernels.Context, ts []*tensor.Tensor) ([]*tensor.Tensor, error) {
	out := make([]*tensor.Tensor, len(ts))
	for i, t := range ts {
		c, err := own(ctx.Limit, t)
		if err != nil {
			return nil, err
		}
		out[i] = c
	}
	return out, nil
}

// strings reads a string input of any shape.
func stringsOf(t *tensor.Tensor) []string {
	out := make([]string, len(t.Strs))
	for i, s := range t.Strs {
		out[i] = string(s)
	}
	return out
}

func attrBool(n *graph.Node, name string) bool { return n.Attrs[name].GetB() }

func init() {
	source("TensorDataset", func(ctx *kernels.Context) (Dataset, error) {
		comps, err := owned(ctx, argRange(ctx, "components"))
		return &tensorDS{comps: comps}, err
	})
	source("TensorSliceDataset", func(ctx *kernels.Context) (Dataset, error) {
		comps, err := owned(ctx, argRange(ctx, "components"))
		if err != nil {
			return nil, err
		}
		return newSliceDS(comps, ctx.Limit)
	})
	source("RangeDataset", func(ctx *kernels.Context) (Dataset, error) {
		var v [3]int64
		for i, name := range []string{"start", "stop", "step"} {
			x, err := scalar(ctx, i, name)
			if err != nil {
				return nil, err
			}
			v[i] = x
		}
		if v[2] == 0 {
			return nil, status.InvalidArg("step must be a non-zero integer.")
		}
		dt := tensor.Int64
		if l := ctx.Node.Attrs["output_types"].GetList(); l != nil && len(l.Type) == 1 {
			dt = tensor.DType(l.Type[0])
		}
		switch dt {
		case tensor.Int64, tensor.Int32, tensor.Float, tensor.Double:
		default:
			return nil, status.InvalidArg("RangeDataset: unsupported output type %v", dt)
		}
		return &rangeDS{start: v[0], stop: v[1], step: v[2], dtype: dt}, nil
	})
	for _, op := range []string{"BatchDataset", "BatchDatasetV2"} {
		source(op, func(ctx *kernels.Context) (Dataset, error) {
			d, err := batchArgs(ctx)
			if err != nil {
				return nil, err
			}
			return d, nil
		})
	}
	source("PaddedBatchDatasetV2", paddedBatch)
	source("RepeatDataset", func(ctx *kernels.Context) (Dataset, error) {
		in, err := inputDataset(ctx, 0)
		if err != nil {
			return nil, err
		}
		count, err := scalar(ctx, 1, "count")
		return &repeatDS{in: in, count: count}, err
	})
	for _, op := range []string{"TakeDataset", "SkipDataset"} {
		source(op, func(ctx *kernels.Context) (Dataset, error) {
			in, err := inputDataset(ctx, 0)
			if err != nil {
				return nil, err
			}
			count, err := scalar(ctx, 1, "count")
			return &takeDS{in: in, count: count, skip: ctx.Node.Op == "SkipDataset"}, err
		})
	}
	for _, op := range []string{"ShuffleDataset", "ShuffleDatasetV3"} {
		source(op, func(ctx *kernels.Context) (Dataset, error) {
			in, err := inputDataset(ctx, 0)
			if err != nil {
				return nil, err
			}
			var v [3]int64
			for i, name := range []string{"buffer_size", "seed", "seed2"} {
				if v[i], err = scalar(ctx, i+1, name); err != nil {
					return nil, err
				}
			}
			if v[0] <= 0 {
				return nil, status.InvalidArg("buffer_size must be greater than zero.")
			}
			return newShuffleDS(in, v[0], v[1], v[2], attrBool(ctx.Node, "reshuffle_each_iteration"), ctx.Limit), nil
		})
	}
	source("PrefetchDataset", func(ctx *kernels.Context) (Dataset, error) {
		in, err := inputDataset(ctx, 0)
		if err != nil {
			return nil, err
		}
		size, err := scalar(ctx, 1, "buffer_size")
		if err != nil {
			return nil, err
		}
		if size < -1 {
			return nil, status.InvalidArg("buffer_size must be >= 0 or set buffer_size to be AUTOTUNE.")
		}
		return &prefetchDS{in: in, size: size, lim: ctx.Limit}, nil
	})
	source("ZipDataset", func(ctx *kernels.Context) (Dataset, error) {
		d := &zipDS{}
		for i := range ctx.Inputs {
			in, err := inputDataset(ctx, i)
			if err != nil {
				return nil, err
			}
			d.ins = append(d.ins, in)
		}
		return d, nil
	})
	source("ConcatenateDataset", func(ctx *kernels.Context) (Dataset, error) {
		a, err := inputDataset(ctx, 0)
		if err != nil {
			return nil, err
		}
		b, err := inputDataset(ctx, 1)
		return &concatDS{a: a, b: b}, err
	})
	// TF's graph rewrites (optimizations, autotuning models) change how a
	// pipeline runs, never what it yields: pass-through.
	for _, op := range []string{"OptimizeDataset", "OptimizeDatasetV2", "ModelDataset"} {
		source(op, func(ctx *kernels.Context) (Dataset, error) { return inputDataset(ctx, 0) })
	}
	for _, op := range []string{"TextLineDataset", "TFRecordDataset", "TFRecordDatasetV2"} {
		source(op, func(ctx *kernels.Context) (Dataset, error) {
			files := ctx.Input(0)
			if files.DType != tensor.String || len(files.Shape) > 1 {
				return nil, status.InvalidArg("`filenames` must be a scalar or a vector.")
			}
			comp := ctx.Input(1)
			if comp.DType != tensor.String || len(comp.Shape) != 0 {
				return nil, status.InvalidArg("compression_type must be a scalar string")
			}
			c := string(comp.Strs[0])
			if err := checkCompression(c); err != nil {
				return nil, err
			}
			if ctx.Node.Op == "TFRecordDatasetV2" {
				if offs := ctx.Input(3); offs.NumElements() > 0 {
					return nil, status.Errorf(status.Unimplemented, "TFRecordDatasetV2: byte_offsets are not supported")
				}
			}
			return &fileDS{files: stringsOf(files), compression: c, records: ctx.Node.Op != "TextLineDataset", lim: ctx.Limit}, nil
		})
	}

	mapOp := func(parallel bool) func(ctx *kernels.Context, f *Func) (Dataset, error) {
		return func(ctx *kernels.Context, f *Func) (Dataset, error) {
			in, err := inputDataset(ctx, 0)
			if err != nil {
				return nil, err
			}
			captured, err := owned(ctx, argRange(ctx, "other_arguments"))
			if err != nil {
				return nil, err
			}
			d := &mapDS{in: in, f: f, captured: captured, parallel: 1}
			if parallel {
				n, err := scalar(ctx, ctx.Node.InArgs["num_parallel_calls"][0], "num_parallel_calls")
				if err != nil {
					return nil, err
				}
				switch {
				case n == -1:
					d.parallel = autotuneParallel()
				case n <= 0:
					return nil, status.InvalidArg("num_parallel_calls must be greater than zero.")
				default:
					d.parallel = int(min(n, 1<<16))
				}
			}
			return d, nil
		}
	}
	withFunc("MapDataset", "f", mapOp(false))
	withFunc("ParallelMapDatasetV2", "f", mapOp(true))
	withFunc("FlatMapDataset", "f", func(ctx *kernels.Context, f *Func) (Dataset, error) {
		in, err := inputDataset(ctx, 0)
		if err != nil {
			return nil, err
		}
		captured, err := owned(ctx, argRange(ctx, "other_arguments"))
		return &mapDS{in: in, f: f, captured: captured, flat: true}, err
	})
	withFunc("FilterDataset", "predicate", func(ctx *kernels.Context, f *Func) (Dataset, error) {
		in, err := inputDataset(ctx, 0)
		if err != nil {
			return nil, err
		}
		captured, err := owned(ctx, argRange(ctx, "other_arguments"))
		return &mapDS{in: in, f: f, captured: captured, filter: true}, err
	})

	registerIterators()
}

// batchArgs checks and reads what every batching op takes, as TF's
// kernels do in this order: the input dataset, batch_size (positive) and,
// where the op has it, drop_remainder.
func batchArgs(ctx *kernels.Context) (*batchDS, error) {
	in, err := inputDataset(ctx, 0)
	if err != nil {
		return nil, err
	}
	size, err := scalar(ctx, 1, "batch_size")
	if err != nil {
		return nil, err
	}
	if size <= 0 {
		return nil, status.InvalidArg("Batch size must be greater than zero.")
	}
	d := &batchDS{in: in, size: size, lim: ctx.Limit}
	if r, ok := ctx.Node.InArgs["drop_remainder"]; ok {
		drop, err := scalar(ctx, r[0], "drop_remainder")
		if err != nil {
			return nil, err
		}
		d.drop = drop != 0
	}
	return d, nil
}

// paddedBatch is PaddedBatchDatasetV2's kernel.
func paddedBatch(ctx *kernels.Context) (Dataset, error) {
	d, err := batchArgs(ctx)
	if err != nil {
		return nil, err
	}
	d.padded = true
	shapes, values := argRange(ctx, "padded_shapes"), argRange(ctx, "padding_values")
	if len(shapes) != len(values) {
		return nil, status.InvalidArg("Number of padded shapes (%d) must match the number of padding values (%d).", len(shapes), len(values))
	}
	for i, s := range shapes {
		if len(s.Shape) != 1 || s.DType != tensor.Int64 {
			return nil, status.InvalidArg("All padded shapes must be vectors, but padded_shapes[%d] has shape %v.", i, s.Shape)
		}
		d.padShapes = append(d.padShapes, append([]int64(nil), s.I64()...))
		v := values[i]
		if len(v.Shape) != 0 {
			return nil, status.InvalidArg("All padding values must be scalars, but padding_values[%d] has shape %v.", i, v.Shape)
		}
		c, err := own(ctx.Limit, v)
		if err != nil {
			return nil, err
		}
		d.padValues = append(d.padValues, c)
	}
	return d, nil
}

// iteratorName is the resource name of a named iterator op: its
// shared_name, else its node name (each such node is one iterator per
// session, as TF's IteratorHandleOp makes).
func iteratorName(n *graph.Node) (container, name string) {
	container, name = string(n.Attrs["container"].GetS()), string(n.Attrs["shared_name"].GetS())
	if name == "" {
		name = n.Name
	}
	return container, name
}
