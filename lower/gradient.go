package lower

import (
	"strconv"

	"mstream/grad"
	"mstream/graph"
	"mstream/proto/tfpb"
	"mstream/status"
	"mstream/tensor"
)

// lowerSymbolicGradient inlines the gradient of function f in place of a
// SymbolicGradient node, whose inputs are f's inputs x then one dy per f
// output and whose outputs are the gradients of the dy-weighted outputs
// with respect to each x (TF's SymbolicGradient, which TF's runtime
// expands with its registered gradient functions). The gradient is built
// as TF_AddGradients builds one (package grad) on a private graph holding
// f's body with Placeholders for x and dy, turned into a FunctionDef
// (graph.ToFunctionDef) and inlined like a call. An x with no gradient
// gets zeros, as TF's SymbolicGradient gives. An op in f without a
// registered gradient fails as TF_AddGradients does, naming the op.
func (l *lowerer) lowerSymbolicGradient(n *graph.Node, ins []graph.Output, ctrls, srcCtrl []*graph.Node) ([]graph.Output, *graph.Node, error) {
	f := n.Attrs["f"].GetFunc()
	fd := l.g.FunctionLocked(f.GetName())
	if fd == nil && graph.LookupOpDef(f.GetName()) != nil {
		// TF builds this one from the op's function-style gradient
		// (REGISTER_OP_GRADIENT), a registry mstream does not have.
		return nil, nil, status.Errorf(status.Unimplemented, "Node '%s' (op SymbolicGradient): f is the primitive op '%s', not a function of the graph's library; only the gradients of library functions are supported", n.Name, f.GetName())
	}
	if fd == nil {
		return nil, nil, status.InvalidArg("Node '%s': Failed to find function \"%s\" in function library: the graph's library has no such function", n.Name, f.GetName())
	}
	fi, err := graph.Instantiate(fd, f.GetAttr())
	if err != nil {
		return nil, nil, status.Errorf(status.CodeOf(err), "Node '%s': %v", n.Name, err)
	}
	nx, ny := len(fi.InTypes), len(fi.OutTypes)
	if len(ins) != nx+ny {
		return nil, nil, status.InvalidArg("Node '%s' (op SymbolicGradient): function '%s' has %d inputs and %d outputs, so the gradient takes %d inputs; given %d", n.Name, f.GetName(), nx, ny, nx+ny, len(ins))
	}
	gfd, err := gradientDef(l.g.LibraryLocked(), fd, f.GetAttr(), fi, ins)
	if err != nil {
		return nil, nil, status.Errorf(status.CodeOf(err), "Node '%s' (op SymbolicGradient): the gradient of '%s': %v", n.Name, f.GetName(), err)
	}
	rets, ctrlRets, err := l.inlineDef(n.Name, n.Name, n.Device, gfd, nil, ins, ctrls, srcCtrl)
	if err != nil {
		return nil, nil, err
	}
	return l.callOuts(n, gfd.GetSignature().GetName(), rets, ctrlRets, ctrls, srcCtrl)
}

// gradientDef builds the FunctionDef of f's gradient: inputs x..., dy...;
// outputs one gradient per x.
func gradientDef(lib *tfpb.FunctionDefLibrary, fd *tfpb.FunctionDef, attrs map[string]*tfpb.AttrValue, fi *graph.Instance, ins []graph.Output) (*tfpb.FunctionDef, error) {
	g := graph.New()
	if lib != nil {
		if err := g.AddLibrary(lib); err != nil {
			return nil, err
		}
	}
	placeholder := func(name string, dt tensor.DType, like graph.Output) (graph.Output, error) {
		b := g.NewBuilder("Placeholder", name)
		b.SetAttr("dtype", graph.AttrType(dt))
		b.SetAttr("shape", graph.AttrShape(like.Node.OutShapes[like.Index]))
		p, err := b.Finish()
		if err != nil {
			return graph.Output{}, err
		}
		return p.Output(0), nil
	}
	nx := len(fi.InTypes)
	xs := make([]graph.Output, nx)
	for i, t := range fi.InTypes {
		var err error
		if xs[i], err = placeholder("x_"+strconv.Itoa(i), t, ins[i]); err != nil {
			return nil, err
		}
	}
	ys, err := g.AddBody(fd, attrs, xs, "fn/")
	if err != nil {
		return nil, err
	}
	dys := make([]graph.Output, len(ys))
	for j, y := range ys {
		if dys[j], err = placeholder("dy_"+strconv.Itoa(j), y.DType(), ins[nx+j]); err != nil {
			return nil, err
		}
	}
	dxs, err := grad.AddGradients(g, "grad", ys, xs, dys)
	if err != nil {
		return nil, err
	}
	for i, d := range dxs {
		if d.Node != nil {
			continue
		}
		b := g.NewBuilder("ZerosLike", "zeros_"+strconv.Itoa(i))
		b.AddInput(xs[i])
		z, err := b.Finish()
		if err != nil {
			return nil, err
		}
		dxs[i] = z.Output(0)
	}
	names := make([]string, nx)
	for i := range names {
		names[i] = "dx_" + strconv.Itoa(i)
	}
	return g.ToFunctionDef(&graph.FunctionSpec{Name: fd.GetSignature().GetName() + "_grad", AllNodes: true,
		Inputs: append(xs, dys...), Outputs: dxs, OutputNames: names})
}
