package kerneltest

import (
	"fmt"
	"math/rand"

	"mstream/graph"
	"mstream/proto/tfpb"
	"mstream/resource"
	"mstream/status"
	"mstream/tensor"
)

// The variable families run sequences on one set of resources (Case.State):
// set-up calls create and write a variable, the case reads or updates it.
// The reference is float64 math on the values written. Whole TF1 programs
// with these ops are compared with TF itself by session's
// TestVariablesAgainstTF.

var varTypes = []tensor.DType{tensor.Float, tensor.Double, tensor.Int32, tensor.Int64, tensor.Half}

func handleT(name string, dt tensor.DType) *tensor.Tensor {
	return resource.Handle{Name: name, Kind: resource.VarKind, DType: dt}.Tensor()
}

func randVal(r *rand.Rand, dt tensor.DType, s tensor.Shape) *tensor.Tensor {
	return RandRange(r, dt, s, -8, 8)
}

func assignCall(h, v *tensor.Tensor) Call {
	return Call{NodeFor("AssignVariableOp", map[string]*tfpb.AttrValue{"dtype": AType(v.DType)}, []*tensor.Tensor{h, v}, nil), []*tensor.Tensor{h, v}}
}

func readNode(h *tensor.Tensor, dt tensor.DType) *graph.Node {
	return NodeFor("ReadVariableOp", map[string]*tfpb.AttrValue{"dtype": AType(dt)}, []*tensor.Tensor{h}, nil)
}

func zip(a, b *tensor.Tensor, f func(x, y float64) float64) *tensor.Tensor {
	x, y := F64s(a), F64s(b)
	out := make([]float64, len(x))
	for i := range x {
		out[i] = f(x[i], y[i])
	}
	return FromF64(a.DType, a.Shape, out)
}

// scatterRef is params with rows idx set to, added or subtracted from
// (mode 0, 1, -1) the rows of upd, in float64.
func scatterRef(params *tensor.Tensor, idx []int64, upd *tensor.Tensor, mode int) *tensor.Tensor {
	p, u := F64s(params), F64s(upd)
	row := int(params.Shape[1:].NumElements())
	for i, r := range idx {
		for j := 0; j < row; j++ {
			switch mode {
			case 0:
				p[int(r)*row+j] = u[i*row+j]
			case 1:
				p[int(r)*row+j] += u[i*row+j]
			default:
				p[int(r)*row+j] -= u[i*row+j]
			}
		}
	}
	return FromF64(params.DType, params.Shape, p)
}

func i32(v ...int64) *tensor.Tensor {
	t := tensor.New(tensor.Int32, tensor.Shape{int64(len(v))})
	for i, x := range v {
		t.I32()[i] = int32(x)
	}
	return t
}

func randRows(r *rand.Rand, n, rows int) []int64 {
	idx := make([]int64, n)
	for i := range idx {
		idx[i] = int64(r.Intn(rows))
	}
	return idx
}

// refNode builds op whose input 0 is the ref output of VariableV2 "v"
// (dtype dt, shape s) and whose other inputs are placeholders of rest.
func refNode(op string, dt tensor.DType, s tensor.Shape, attrs map[string]*tfpb.AttrValue, rest ...*tensor.Tensor) *graph.Node {
	return refNodeOf(op, dt, s, []string{"v"}, attrs, rest...)
}

// refNodeOf is refNode with the ref outputs of one VariableV2 per name in
// vars as its first inputs (an optimizer's variable and accumulators).
func refNodeOf(op string, dt tensor.DType, s tensor.Shape, vars []string, attrs map[string]*tfpb.AttrValue, rest ...*tensor.Tensor) *graph.Node {
	g := graph.New()
	var ins []graph.Output
	for _, name := range vars {
		b := g.NewBuilder("VariableV2", name)
		b.SetAttr("dtype", AType(dt))
		b.SetAttr("shape", AShape(s))
		v, err := b.Finish()
		if err != nil {
			panic(err)
		}
		ins = append(ins, v.Output(0))
	}
	for i, t := range rest {
		p := g.NewBuilder("Placeholder", fmt.Sprintf("in%d", len(vars)+i))
		p.SetAttr("dtype", AType(t.DType))
		pn, err := p.Finish()
		if err != nil {
			panic(err)
		}
		ins = append(ins, pn.Output(0))
	}
	k := g.NewBuilder(op, "k_"+op)
	for _, in := range ins {
		k.AddInput(in)
	}
	for name, a := range attrs {
		k.SetAttr(name, a)
	}
	n, err := k.Finish()
	if err != nil {
		panic(fmt.Sprintf("kerneltest: building %s: %v", op, err))
	}
	return n
}

// refIn is what a ref input carries into a kernel: the variable node's
// output (the kernels reach the variable itself).
func refIn(dt tensor.DType) *tensor.Tensor { return tensor.New(dt, tensor.Shape{0}) }

func init() {
	Add("VarHandleOp", func(r *rand.Rand) []Case {
		var cs []Case
		for _, dt := range varTypes {
			name := fmt.Sprintf("var%d", r.Intn(1000))
			n := NodeFor("VarHandleOp", map[string]*tfpb.AttrValue{"dtype": AType(dt), "shape": AShape(tensor.Shape{2}), "shared_name": AStr(name)}, nil, nil)
			cs = append(cs, Case{Node: n, State: true, Check: func(out []*tensor.Tensor) error {
				h, err := resource.FromTensor(out[0])
				if err != nil {
					return err
				}
				if h.Container != resource.DefaultContainer || h.Name != name || h.DType != dt || h.Kind != resource.VarKind {
					return fmt.Errorf("handle %+v, want localhost/%s of %v", h, name, dt)
				}
				return nil
			}})
		}
		return cs
	})
	readCases := func(r *rand.Rand) []Case {
		var cs []Case
		for _, dt := range varTypes {
			s := EdgeShapes[r.Intn(len(EdgeShapes))]
			h, x, y := handleT("v", dt), randVal(r, dt, s), randVal(r, dt, s)
			cs = append(cs,
				Case{Node: readNode(h, dt), Inputs: []*tensor.Tensor{h}, State: true, Before: []Call{assignCall(h, x)}, Want: []*tensor.Tensor{x}},
				Case{Node: readNode(h, dt), Inputs: []*tensor.Tensor{h}, State: true, Before: []Call{assignCall(h, x), assignCall(h, y)}, Want: []*tensor.Tensor{y}},
				Case{Node: readNode(h, dt), Inputs: []*tensor.Tensor{h}, State: true, Err: status.FailedPrecondition, ErrMsg: "Could not find variable v"},
			)
		}
		h := handleT("v", tensor.Float)
		x := randVal(r, tensor.Float, tensor.Shape{3})
		cs = append(cs, Case{Node: readNode(h, tensor.Double), Inputs: []*tensor.Tensor{h}, State: true, Before: []Call{assignCall(h, x)},
			Err: status.InvalidArgument, ErrMsg: "Trying to read variable with wrong dtype. Expected double got float"})
		return cs
	}
	Add("ReadVariableOp", readCases)
	Add("AssignVariableOp", func(r *rand.Rand) []Case {
		cs := readCases(r)
		h := handleT("v", tensor.Float)
		x, y := randVal(r, tensor.Float, tensor.Shape{3}), randVal(r, tensor.Float, tensor.Shape{2})
		n := NodeFor("AssignVariableOp", map[string]*tfpb.AttrValue{"dtype": AType(tensor.Float), "validate_shape": ABool(true)}, []*tensor.Tensor{h, y}, nil)
		cs = append(cs, Case{Node: n, Inputs: []*tensor.Tensor{h, y}, State: true, Before: []Call{assignCall(h, x)},
			Err: status.InvalidArgument, ErrMsg: "Trying to assign to variable with tensor with wrong shape. Expected [3] got [2]"})
		return cs
	})
	for op, sign := range map[string]float64{"AssignAddVariableOp": 1, "AssignSubVariableOp": -1} {
		Add(op, func(r *rand.Rand) []Case {
			var cs []Case
			for _, dt := range varTypes {
				s := EdgeShapes[r.Intn(len(EdgeShapes))]
				h, x, y := handleT("v", dt), randVal(r, dt, s), randVal(r, dt, s)
				upd := NodeFor(op, map[string]*tfpb.AttrValue{"dtype": AType(dt)}, []*tensor.Tensor{h, y}, nil)
				want := zip(x, y, func(a, b float64) float64 { return a + sign*b })
				cs = append(cs,
					Case{Node: readNode(h, dt), Inputs: []*tensor.Tensor{h}, State: true,
						Before: []Call{assignCall(h, x), {upd, []*tensor.Tensor{h, y}}}, Want: []*tensor.Tensor{want}},
					Case{Node: upd, Inputs: []*tensor.Tensor{h, y}, State: true, Err: status.NotFound, ErrMsg: "localhost"},
				)
			}
			h := handleT("v", tensor.Float)
			x, y := randVal(r, tensor.Float, tensor.Shape{3}), randVal(r, tensor.Float, tensor.Shape{4})
			upd := NodeFor(op, map[string]*tfpb.AttrValue{"dtype": AType(tensor.Float)}, []*tensor.Tensor{h, y}, nil)
			cs = append(cs, Case{Node: upd, Inputs: []*tensor.Tensor{h, y}, State: true, Before: []Call{assignCall(h, x)},
				Err: status.InvalidArgument, ErrMsg: "Cannot update variable with shape [3] using a Tensor with shape [4], shapes must be equal."})
			return cs
		})
	}
	isInit := func(h *tensor.Tensor) *graph.Node {
		return NodeFor("VarIsInitializedOp", nil, []*tensor.Tensor{h}, nil)
	}
	Add("VarIsInitializedOp", func(r *rand.Rand) []Case {
		h, x := handleT("v", tensor.Float), randVal(r, tensor.Float, tensor.Shape{2})
		return []Case{
			{Node: isInit(h), Inputs: []*tensor.Tensor{h}, State: true, Want: []*tensor.Tensor{tensor.FromBool(nil, []bool{false})}},
			{Node: isInit(h), Inputs: []*tensor.Tensor{h}, State: true, Before: []Call{assignCall(h, x)}, Want: []*tensor.Tensor{tensor.FromBool(nil, []bool{true})}},
		}
	})
	Add("DestroyResourceOp", func(r *rand.Rand) []Case {
		h, x := handleT("v", tensor.Float), randVal(r, tensor.Float, tensor.Shape{2})
		destroy := func(ignore bool) *graph.Node {
			return NodeFor("DestroyResourceOp", map[string]*tfpb.AttrValue{"ignore_lookup_error": ABool(ignore)}, []*tensor.Tensor{h}, nil)
		}
		return []Case{
			{Node: isInit(h), Inputs: []*tensor.Tensor{h}, State: true, Before: []Call{assignCall(h, x), {destroy(false), []*tensor.Tensor{h}}}, Want: []*tensor.Tensor{tensor.FromBool(nil, []bool{false})}},
			{Node: destroy(false), Inputs: []*tensor.Tensor{h}, State: true, Err: status.NotFound},
			{Node: destroy(true), Inputs: []*tensor.Tensor{h}, State: true, Want: []*tensor.Tensor{}},
		}
	})
	Add("DisableCopyOnRead", func(r *rand.Rand) []Case {
		h, x := handleT("v", tensor.Float), randVal(r, tensor.Float, tensor.Shape{2})
		n := NodeFor("DisableCopyOnRead", nil, []*tensor.Tensor{h}, nil)
		return []Case{
			{Node: n, Inputs: []*tensor.Tensor{h}, State: true, Before: []Call{assignCall(h, x)}, Want: []*tensor.Tensor{}},
			{Node: n, Inputs: []*tensor.Tensor{h}, State: true, Err: status.NotFound},
		}
	})
	Add("ResourceGather", func(r *rand.Rand) []Case {
		var cs []Case
		for _, dt := range varTypes {
			h, x := handleT("v", dt), randVal(r, dt, tensor.Shape{5, 3})
			idx := randRows(r, 4, 5)
			it := i32(idx...)
			n := NodeFor("ResourceGather", map[string]*tfpb.AttrValue{"dtype": AType(dt)}, []*tensor.Tensor{h, it}, nil)
			want := scatterRef(tensor.New(dt, tensor.Shape{4, 3}), []int64{0, 1, 2, 3}, gatherRows(x, idx), 0)
			cs = append(cs, Case{Node: n, Inputs: []*tensor.Tensor{h, it}, State: true, Before: []Call{assignCall(h, x)}, Want: []*tensor.Tensor{want}})
			bad := i32(1, 5)
			cs = append(cs, Case{Node: n, Inputs: []*tensor.Tensor{h, bad}, State: true, Before: []Call{assignCall(h, x)}, Err: status.InvalidArgument, ErrMsg: "indices[1] = 5 is not in [0, 5)", HostErr: true})
		}
		return cs
	})
	Add("ResourceGatherNd", func(r *rand.Rand) []Case {
		var cs []Case
		for _, dt := range varTypes {
			h, x := handleT("v", dt), randVal(r, dt, tensor.Shape{5, 3})
			idx := randRows(r, 3, 5)
			it := tensor.New(tensor.Int32, tensor.Shape{3, 1})
			for i, v := range idx {
				it.I32()[i] = int32(v)
			}
			n := NodeFor("ResourceGatherNd", map[string]*tfpb.AttrValue{"dtype": AType(dt)}, []*tensor.Tensor{h, it}, nil)
			cs = append(cs, Case{Node: n, Inputs: []*tensor.Tensor{h, it}, State: true, Before: []Call{assignCall(h, x)}, Want: []*tensor.Tensor{gatherRows(x, idx)}})
		}
		return cs
	})
	for op, mode := range map[string]int{"ResourceScatterUpdate": 0, "ResourceScatterAdd": 1, "ResourceScatterSub": -1} {
		Add(op, func(r *rand.Rand) []Case {
			var cs []Case
			for _, dt := range varTypes {
				h, x := handleT("v", dt), randVal(r, dt, tensor.Shape{6, 2})
				idx := randRows(r, 4, 6)
				if mode == 0 {
					idx = idx[:0]
					for _, v := range r.Perm(6)[:4] {
						idx = append(idx, int64(v)) // distinct rows: the last write of a duplicate is unspecified
					}
				}
				it, u := i32(idx...), randVal(r, dt, tensor.Shape{4, 2})
				n := NodeFor(op, map[string]*tfpb.AttrValue{"dtype": AType(dt)}, []*tensor.Tensor{h, it, u}, nil)
				cs = append(cs, Case{Node: readNode(h, dt), Inputs: []*tensor.Tensor{h}, State: true,
					Before: []Call{assignCall(h, x), {n, []*tensor.Tensor{h, it, u}}}, Want: []*tensor.Tensor{scatterRef(x, idx, u, mode)}})
				bad := i32(0, 6, 1, 1)
				cs = append(cs, Case{Node: n, Inputs: []*tensor.Tensor{h, bad, u}, State: true, Before: []Call{assignCall(h, x)}, Err: status.InvalidArgument, ErrMsg: "indices[1] = 6 is not in [0, 6)", HostErr: true})
			}
			return cs
		})
	}

	// Ref variables.
	for _, op := range []string{"VariableV2", "Variable"} {
		Add(op, func(r *rand.Rand) []Case {
			var cs []Case
			for _, dt := range varTypes {
				s := tensor.Shape{int64(1 + r.Intn(4)), 2}
				x := randVal(r, dt, s)
				assign := refNode("Assign", dt, s, nil, x)
				v := varNode(op, dt, s)
				cs = append(cs,
					Case{Node: v, State: true, Err: status.FailedPrecondition, ErrMsg: "Attempting to use uninitialized value v"},
					Case{Node: v, State: true, Before: []Call{{assign, []*tensor.Tensor{refIn(dt), x}}}, Want: []*tensor.Tensor{x}},
				)
			}
			return cs
		})
	}
	Add("Assign", func(r *rand.Rand) []Case {
		var cs []Case
		for _, dt := range varTypes {
			s := tensor.Shape{3, 2}
			x, y := randVal(r, dt, s), randVal(r, dt, tensor.Shape{2})
			assign := refNode("Assign", dt, s, nil, x)
			loose := refNode("Assign", dt, s, map[string]*tfpb.AttrValue{"validate_shape": ABool(false)}, x)
			cs = append(cs,
				Case{Node: assign, Inputs: []*tensor.Tensor{refIn(dt), x}, State: true, Want: []*tensor.Tensor{x}},
				Case{Node: assign, Inputs: []*tensor.Tensor{refIn(dt), y}, State: true, Before: []Call{{assign, []*tensor.Tensor{refIn(dt), x}}},
					Err: status.InvalidArgument, ErrMsg: "Assign requires shapes of both tensors to match. lhs shape= [3,2] rhs shape= [2]"},
				Case{Node: loose, Inputs: []*tensor.Tensor{refIn(dt), y}, State: true, Before: []Call{{assign, []*tensor.Tensor{refIn(dt), x}}}, Want: []*tensor.Tensor{y}},
			)
		}
		return cs
	})
	for op, sign := range map[string]float64{"AssignAdd": 1, "AssignSub": -1} {
		Add(op, func(r *rand.Rand) []Case {
			var cs []Case
			for _, dt := range varTypes {
				s := tensor.Shape{2, 3}
				x, y := randVal(r, dt, s), randVal(r, dt, s)
				assign := refNode("Assign", dt, s, nil, x)
				upd := refNode(op, dt, s, nil, y)
				cs = append(cs,
					Case{Node: upd, Inputs: []*tensor.Tensor{refIn(dt), y}, State: true, Before: []Call{{assign, []*tensor.Tensor{refIn(dt), x}}},
						Want: []*tensor.Tensor{zip(x, y, func(a, b float64) float64 { return a + sign*b })}},
					Case{Node: upd, Inputs: []*tensor.Tensor{refIn(dt), y}, State: true, Err: status.FailedPrecondition, ErrMsg: "Attempting to use uninitialized value v"},
				)
			}
			return cs
		})
	}
	Add("IsVariableInitialized", func(r *rand.Rand) []Case {
		s := tensor.Shape{2}
		x := randVal(r, tensor.Float, s)
		assign := refNode("Assign", tensor.Float, s, nil, x)
		n := refNode("IsVariableInitialized", tensor.Float, s, nil)
		return []Case{
			{Node: n, Inputs: []*tensor.Tensor{refIn(tensor.Float)}, State: true, Want: []*tensor.Tensor{tensor.FromBool(nil, []bool{false})}},
			{Node: n, Inputs: []*tensor.Tensor{refIn(tensor.Float)}, State: true, Before: []Call{{assign, []*tensor.Tensor{refIn(tensor.Float), x}}}, Want: []*tensor.Tensor{tensor.FromBool(nil, []bool{true})}},
		}
	})
	for op, mode := range map[string]int{"ScatterUpdate": 0, "ScatterAdd": 1, "ScatterSub": -1} {
		Add(op, func(r *rand.Rand) []Case {
			var cs []Case
			for _, dt := range varTypes {
				s := tensor.Shape{5, 2}
				x := randVal(r, dt, s)
				var idx []int64
				for _, v := range r.Perm(5)[:3] {
					idx = append(idx, int64(v))
				}
				if mode != 0 {
					idx[2] = idx[0] // a repeated row adds twice
				}
				it, u := i32(idx...), randVal(r, dt, tensor.Shape{3, 2})
				assign := refNode("Assign", dt, s, nil, x)
				n := refNode(op, dt, s, nil, it, u)
				cs = append(cs,
					Case{Node: n, Inputs: []*tensor.Tensor{refIn(dt), it, u}, State: true, Before: []Call{{assign, []*tensor.Tensor{refIn(dt), x}}}, Want: []*tensor.Tensor{scatterRef(x, idx, u, mode)}},
					Case{Node: n, Inputs: []*tensor.Tensor{refIn(dt), i32(0, 9, 1), u}, State: true, Before: []Call{{assign, []*tensor.Tensor{refIn(dt), x}}}, Err: status.InvalidArgument, ErrMsg: "indices[1] = 9 is not in [0, 5)", HostErr: true},
				)
			}
			return cs
		})
	}
}

// varNode is a lone ref variable node "v".
func varNode(op string, dt tensor.DType, s tensor.Shape) *graph.Node {
	g := graph.New()
	b := g.NewBuilder(op, "v")
	b.SetAttr("dtype", AType(dt))
	b.SetAttr("shape", AShape(s))
	n, err := b.Finish()
	if err != nil {
		panic(err)
	}
	return n
}

// gatherRows is rows idx of a [n, k] tensor.
func gatherRows(x *tensor.Tensor, idx []int64) *tensor.Tensor {
	v := F64s(x)
	k := int(x.Shape[1])
	out := make([]float64, 0, len(idx)*k)
	for _, r := range idx {
		out = append(out, v[int(r)*k:int(r+1)*k]...)
	}
	return FromF64(x.DType, tensor.Shape{int64(len(idx)), int64(k)}, out)
}
