package cpu

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"mstream/checkpoint"
	"mstream/graph"
	"mstream/kernels"
	"mstream/status"
	"mstream/tensor"
)

// The save/restore kernels are thin over package checkpoint. They exist
// only on the host, as TF's do: on a GPU session the placer puts them on
// the CPU and copies their tensors across.

func init() {
	reg("SaveV2", nil, nil, fn(saveV2))
	reg("RestoreV2", nil, nil, func(n *graph.Node) (kernels.Kernel, error) {
		var dts []tensor.DType
		if a := n.Attrs["dtypes"]; a != nil {
			for _, d := range a.GetList().GetType() {
				dts = append(dts, tensor.DType(d))
			}
		}
		return kernels.KernelFunc(func(ctx *kernels.Context) error { return restoreV2(ctx, dts) }), nil
	})
	reg("MergeV2Checkpoints", nil, nil, func(n *graph.Node) (kernels.Kernel, error) {
		delOld, allowMissing := attrBool(n, "delete_old_dirs"), attrBool(n, "allow_missing_files")
		return kernels.KernelFunc(func(ctx *kernels.Context) error { return mergeV2(ctx, delOld, allowMissing) }), nil
	})
	reg("ShardedFilename", nil, nil, fn(func(ctx *kernels.Context) error {
		if err := scalars(ctx, "basename", "shard", "num_shards"); err != nil {
			return err
		}
		ctx.SetOutput(0, tensor.FromStrings(nil, []string{fmt.Sprintf("%s-%05d-of-%05d", cString(ctx.Input(0).Strs[0]), ctx.Input(1).I32()[0], ctx.Input(2).I32()[0])}))
		return nil
	}))
	reg("ShardedFilespec", nil, nil, fn(func(ctx *kernels.Context) error {
		if err := scalars(ctx, "basename", "num_shards"); err != nil {
			return err
		}
		ctx.SetOutput(0, tensor.FromStrings(nil, []string{fmt.Sprintf("%s-?????-of-%05d", cString(ctx.Input(0).Strs[0]), ctx.Input(1).I32()[0])}))
		return nil
	}))
}

// cString is s up to its first NUL, as TF's printf of c_str() sees it.
func cString(s []byte) string {
	if i := bytes.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	return string(s)
}

func scalars(ctx *kernels.Context, names ...string) error {
	for i, name := range names {
		if s := ctx.Input(i).Shape; len(s) != 0 {
			return ctx.Errorf(status.InvalidArgument, "%s must be a scalar, got shape %v", name, s)
		}
	}
	return nil
}

// checkSaveRestore is TF's ValidateInputs of SaveV2 and RestoreV2.
func checkSaveRestore(ctx *kernels.Context, save bool) error {
	prefix, names, slices := ctx.Input(0), ctx.Input(1), ctx.Input(2)
	if prefix.NumElements() != 1 {
		return ctx.Errorf(status.InvalidArgument, "Input prefix should have a single element, got %d instead.", prefix.NumElements())
	}
	if len(names.Shape) != 1 || len(slices.Shape) != 1 {
		return ctx.Errorf(status.InvalidArgument, "Input tensor_names and shape_and_slices should be an 1-D tensors, got %v and %v instead.", names.Shape, slices.Shape)
	}
	if names.NumElements() != slices.NumElements() {
		return ctx.Errorf(status.InvalidArgument, "tensor_names and shape_and_slices have different number of elements: %d vs. %d", names.NumElements(), slices.NumElements())
	}
	if save && int64(ctx.NumInputs()-3) != names.NumElements() {
		return ctx.Errorf(status.InvalidArgument, "Got %d tensor names but %d tensors.", names.NumElements(), ctx.NumInputs()-3)
	}
	return nil
}

// wrap keeps a checkpoint error's code and puts the node in front.
func wrap(ctx *kernels.Context, err error) error {
	return ctx.Errorf(status.CodeOf(err), "%v", err)
}

func saveV2(ctx *kernels.Context) error {
	if err := checkSaveRestore(ctx, true); err != nil {
		return err
	}
	prefix := string(ctx.Input(0).Strs[0])
	names, specs := ctx.Input(1).Strs, ctx.Input(2).Strs
	w, err := checkpoint.NewWriter(prefix)
	if err != nil {
		return wrap(ctx, err)
	}
	for i, name := range names {
		t := ctx.Input(3 + i)
		if len(specs[i]) == 0 {
			err = w.Add(string(name), t)
		} else {
			full, sl, sliceShape, perr := checkpoint.ParseShapeAndSlice(string(specs[i]))
			if perr != nil {
				w.Abort()
				return wrap(ctx, perr)
			}
			if !sliceShape.Equal(t.Shape) {
				w.Abort()
				return ctx.Errorf(status.InvalidArgument, "Slice in shape_and_slice specification does not match the shape of the tensor to  save: %s, tensor: %v", specs[i], t.Shape)
			}
			err = w.AddSlice(string(name), full, sl, t)
		}
		if err != nil {
			w.Abort()
			return wrap(ctx, err)
		}
	}
	if err := w.Finish(); err != nil {
		return wrap(ctx, err)
	}
	return nil
}

func restoreV2(ctx *kernels.Context, dts []tensor.DType) error {
	names, specs := ctx.Input(1), ctx.Input(2)
	if names.NumElements() != int64(len(dts)) {
		return ctx.Errorf(status.InvalidArgument, "Got %d tensor names, but %d expected dtypes.", names.NumElements(), len(dts))
	}
	if err := checkSaveRestore(ctx, false); err != nil {
		return err
	}
	prefix := string(ctx.Input(0).Strs[0])
	if _, err := os.Stat(checkpoint.IndexFilename(prefix)); err != nil {
		// TF falls back to reading a V1 checkpoint here, which mstream
		// does not read; its error for a missing file is this one.
		return ctx.Errorf(status.NotFound, "Unsuccessful TensorSliceReader constructor: Failed to find any matching files for %s (no V2 checkpoint: %s is missing)", prefix, checkpoint.IndexFilename(prefix))
	}
	r, err := checkpoint.Open(prefix)
	if err != nil {
		return wrap(ctx, err)
	}
	defer r.Close()
	// Dtypes first, every mismatch in one message, as TF does.
	var mismatched []string
	for i, name := range names.Strs {
		e, err := r.Entry(string(name))
		if err != nil {
			return wrap(ctx, err)
		}
		if got := tensor.DType(e.Dtype); got != dts[i] {
			mismatched = append(mismatched, fmt.Sprintf("tensor_name = %s; expected dtype %v does not equal original dtype %v", name, dts[i], got))
		}
	}
	if len(mismatched) > 0 {
		return ctx.Errorf(status.InvalidArgument, "%s", strings.Join(mismatched, "\n"))
	}
	for i, name := range names.Strs {
		var t *tensor.Tensor
		if len(specs.Strs[i]) == 0 {
			t, err = r.Lookup(string(name))
		} else {
			var full tensor.Shape
			var sl checkpoint.Slice
			full, sl, _, err = checkpoint.ParseShapeAndSlice(string(specs.Strs[i]))
			if err == nil {
				e, _ := r.Entry(string(name))
				stored := tensor.Shape{}
				for _, d := range e.GetShape().GetDim() {
					stored = append(stored, d.GetSize())
				}
				if !stored.Equal(full) {
					return ctx.Errorf(status.InvalidArgument, "tensor_name = %s; shape in shape_and_slice spec %v does not match the shape stored in checkpoint: %v", name, full, stored)
				}
				t, err = r.LookupSlice(string(name), sl)
			}
		}
		if err != nil {
			return wrap(ctx, err)
		}
		ctx.SetOutput(i, t)
	}
	return nil
}

func mergeV2(ctx *kernels.Context, deleteOldDirs, allowMissing bool) error {
	prefixes, dst := ctx.Input(0), ctx.Input(1)
	if len(prefixes.Shape) != 1 {
		return ctx.Errorf(status.InvalidArgument, "Input checkpoint_prefixes should be an 1-D tensor, got %v instead.", prefixes.Shape)
	}
	if len(dst.Shape) != 0 {
		return ctx.Errorf(status.InvalidArgument, "Input destination_prefix should be a scalar tensor, got %v instead.", dst.Shape)
	}
	var ps []string
	for _, p := range prefixes.Strs {
		ps = append(ps, string(p))
	}
	merged := string(dst.Strs[0])
	if err := checkpoint.Merge(ps, merged, allowMissing); err != nil {
		return wrap(ctx, err)
	}
	if deleteOldDirs {
		// TF's DeleteDir removes only empty directories; the inputs'
		// directories are empty once their files moved.
		mdir := filepath.Dir(merged)
		var done []string
		for _, p := range ps {
			if d := filepath.Dir(p); d != mdir && !slices.Contains(done, d) {
				os.Remove(d)
				done = append(done, d)
			}
		}
	}
	return nil
}
