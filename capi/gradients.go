package main

/*
#include "internal.h"
*/
import "C"

import (
	"unsafe"

	"mstream/grad"
	"mstream/graph"
)

// outputsIn converts n TF_Outputs of graph o.
func outputsIn(o *graphObj, p *C.TF_Output, n C.int, what string) ([]graph.Output, error) {
	if n <= 0 {
		return nil, nil
	}
	if p == nil {
		return nil, nullArg("TF_AddGradients", what)
	}
	var out []graph.Output
	for _, c := range unsafe.Slice(p, int(n)) {
		g, err := outputIn(o, &c)
		if err != nil {
			return nil, err
		}
		out = append(out, g)
	}
	return out, nil
}

// msAddGradients backs TF_AddGradients(WithPrefix): it adds the gradient
// nodes through package grad and writes one TF_Output per x into dy, whose
// nx entries the caller owns; an x without gradient gets {NULL, -1}, as in
// TF. prefix NULL means "gradients" made unique in the graph.
//
//export msAddGradients
func msAddGradients(g *C.TF_Graph, prefix *C.char, y *C.TF_Output, ny C.int, x *C.TF_Output, nx C.int, dx *C.TF_Output, s *C.TF_Status, dy *C.TF_Output) {
	defer recoverTo(s, "TF_AddGradients")
	setStatus(s, func() error {
		o, err := graphOf(g)
		if err != nil {
			return err
		}
		ys, err := outputsIn(o, y, ny, "y")
		if err != nil {
			return err
		}
		xs, err := outputsIn(o, x, nx, "x")
		if err != nil {
			return err
		}
		var dxs []graph.Output
		if dx != nil {
			if dxs, err = outputsIn(o, dx, ny, "dx"); err != nil {
				return err
			}
		}
		if nx > 0 && dy == nil {
			return nullArg("TF_AddGradients", "dy")
		}
		p := ""
		if prefix != nil {
			p = C.GoString(prefix)
		}
		grads, err := grad.AddGradients(o.g, p, ys, xs, dxs)
		if err != nil {
			return err
		}
		out := unsafe.Slice(dy, int(nx))
		for i, gr := range grads {
			if gr.Node == nil {
				out[i].oper, out[i].index = nil, -1
				continue
			}
			out[i].oper, out[i].index = o.op(gr.Node), C.int(gr.Index)
		}
		return nil
	}())
}
