package grad

import (
	"mstream/graph"
	"mstream/status"
)

// Gradients through v1 while loops, after TF's cc/framework/
// while_gradients.cc. A loop built by TF_NewWhile (graph.AddWhileLoop,
// which keeps its WhileContext) is differentiated once the gradients of all
// its Exits are in: three loops are added, under <prefix>/<frame>_grad:
//
//   - ForwardLoopCounter counts the forward loop's iterations; it runs in
//     the forward loop's frame, driven by the forward loop's predicate;
//   - BackPropLoopCounter counts that number down in the frame
//     <frame>_backprop, its LoopCond the predicate of the next loop;
//   - while runs as many times, in the same frame, with the Exits'
//     gradients as loop variables and the body's gradient (the body's
//     outputs with respect to its inputs) as its body.
//
// Its Exits are the gradients of the loop's inputs (the Enters' inputs).
// As in TF, the body's gradient reads the forward body's tensors as they
// are, not as they were in each iteration (TF keeps no stacks of them in
// the C++ builder): a body whose gradient needs its own values (x*x) gets
// one TF does not compute either. A loop imported from a GraphDef has no
// WhileContext (TF crashes on its Exit; this is UNIMPLEMENTED), and an
// Exit without a gradient is TF's UNIMPLEMENTED "Missing gradient into
// while loop".

// exit records dy as the gradient of a loop's Exit n and, once every Exit
// of the loop has one, builds the loop's gradient and passes it on to the
// loop's inputs (TF's ProcessWhileLoop).
func (w *walk) exit(b *Builder, n *graph.Node, dy graph.Output) error {
	if dy.Node == nil {
		return status.Errorf(status.Unimplemented, "Missing gradient into while loop not yet implemented")
	}
	wc := w.g.WhileContextOf(n)
	if wc == nil {
		return status.Errorf(status.Unimplemented, "the gradient of the while loop of Exit '%s' needs the loop built by TF_NewWhile (an imported v1 loop keeps no WhileContext)", n.Name)
	}
	if w.loops == nil {
		w.loops = map[*graph.WhileContext]map[*graph.Node]graph.Output{}
	}
	if w.loops[wc] == nil {
		w.loops[wc] = map[*graph.Node]graph.Output{}
	}
	got := w.loops[wc]
	got[n] = dy
	if len(got) < len(wc.Exits) {
		return nil
	}
	dys := make([]graph.Output, len(wc.Exits))
	for i, e := range wc.Exits {
		dys[i] = got[e]
	}
	dx, err := b.whileGrad(wc, b.sub(wc.Frame+"_grad", nil), dys)
	if err != nil {
		return err
	}
	for i, e := range wc.Enters {
		w.backprop(dx[i], e.Inputs[0])
	}
	return nil
}

// whileGrad is TF's AddWhileLoopGradient in scope s.
func (b *Builder) whileGrad(wc *graph.WhileContext, s *Builder, dys []graph.Output) ([]graph.Output, error) {
	// Count the forward iterations: i = 0; while forward pred: i++.
	fc := s.sub("ForwardLoopCounter", nil)
	count, _, err := fc.loop(wc.Frame, []graph.Output{fc.ScalarI32(0)},
		func(*Builder, []graph.Output) (graph.Output, error) { return wc.CondOutput, nil },
		func(body *Builder, in []graph.Output) ([]graph.Output, error) {
			return []graph.Output{body.Op("Add", nil, in[0], body.ScalarI32(1))}, nil
		})
	if err != nil {
		return nil, err
	}
	// Count them down in the backprop frame: n = count; while n > 0: n--.
	back := wc.Frame + "_backprop"
	bc := s.sub("BackPropLoopCounter", nil)
	_, pred, err := bc.loop(back, count,
		func(cond *Builder, in []graph.Output) (graph.Output, error) {
			return cond.Op("Greater", nil, in[0], cond.ScalarI32(0)), nil
		},
		func(body *Builder, in []graph.Output) ([]graph.Output, error) {
			return []graph.Output{body.Op("Sub", nil, in[0], body.ScalarI32(1))}, nil
		})
	if err != nil {
		return nil, err
	}
	// As many iterations of the body's gradient.
	gl := s.sub("while", nil)
	dx, _, err := gl.loop(back, dys,
		func(*Builder, []graph.Output) (graph.Output, error) { return pred, nil },
		func(body *Builder, in []graph.Output) ([]graph.Output, error) {
			return body.gradients(wc.BodyOutputs, wc.BodyInputs, in)
		})
	return dx, err
}

// loop builds a while loop in b's scope, its cond and body in the
// sub-scopes cond and body, whose nodes without inputs run in the frame
// (TF's BuildWhileLoop with create_while_ctx false).
func (b *Builder) loop(frame string, inputs []graph.Output,
	cond func(*Builder, []graph.Output) (graph.Output, error),
	body func(*Builder, []graph.Output) ([]graph.Output, error)) (exits []graph.Output, pred graph.Output, err error) {
	// A node-building failure inside the cond or body is a buildError
	// panic; catch turns it into an error so that BuildLoop closes the
	// loop before AddGradients returns it.
	return b.g.BuildLoop(&graph.Loop{
		Scope: b.prefix, Frame: frame, Inputs: inputs,
		Cond: func(m []graph.Output) (graph.Output, error) {
			return catch(func() (graph.Output, error) { return cond(b.sub("cond", m[0].Node), m) })
		},
		Body: func(in []graph.Output) ([]graph.Output, error) {
			var out []graph.Output
			_, err := catch(func() (graph.Output, error) {
				var err error
				out, err = body(b.sub("body", in[0].Node), in)
				return graph.Output{}, err
			})
			return out, err
		},
	})
}

// catch turns a buildError panic of f into its error.
func catch(f func() (graph.Output, error)) (o graph.Output, err error) {
	defer func() {
		if r := recover(); r != nil {
			be, ok := r.(buildError)
			if !ok {
				panic(r)
			}
			err = be.err
		}
	}()
	return f()
}
