package cpu

import (
	"errors"
	"io/fs"
	"os"

	"mstream/kernels"
	"mstream/status"
	"mstream/tensor"
)

// ReadFile outputs a file's bytes as a string scalar (TF2 SavedModels read
// their assets with it). The size is checked against the memory limit
// before the file is read.

func init() {
	reg("ReadFile", nil, nil, fn(readFile))
}

func readFile(ctx *kernels.Context) error {
	in := ctx.Input(0)
	if len(in.Shape) != 0 {
		return ctx.Errorf(status.InvalidArgument, "Input filename tensor must be scalar, but had shape: %v", in.Shape)
	}
	name := string(in.Strs[0])
	fi, err := os.Stat(name)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return ctx.Errorf(status.NotFound, "%s; No such file or directory", name)
		}
		return ctx.Errorf(status.PermissionDenied, "%s: %v", name, err)
	}
	if fi.IsDir() {
		return ctx.Errorf(status.FailedPrecondition, "%s; Is a directory", name)
	}
	if err := ctx.Limit.Check(fi.Size(), 1, func() string { return "the contents of " + name }); err != nil {
		return ctx.Errorf(status.CodeOf(err), "%v", err)
	}
	b, err := os.ReadFile(name)
	if err != nil {
		return ctx.Errorf(status.DataLoss, "reading %s: %v", name, err)
	}
	out, err := ctx.Allocate(0, tensor.Shape{})
	if err != nil {
		return err
	}
	out.Strs[0] = b
	return nil
}
