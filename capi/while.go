package main

/*
#include "internal.h"
*/
import "C"

import (
	"fmt"
	"unsafe"

	"mstream/graph"
	"mstream/status"
)

// msNewWhile gives the fresh cond and body graphs of TF_NewWhile their
// parent and one Placeholder per loop variable (cond_inputN, body_inputN, of
// the input's dtype), written to condIn and bodyIn. C allocated the graphs
// and arrays and frees them when this fails.
//
//export msNewWhile
func msNewWhile(g *C.TF_Graph, inputs *C.TF_Output, n C.int, cond, body *C.TF_Graph, condIn, bodyIn *C.TF_Output, s *C.TF_Status) {
	defer recoverTo(s, "TF_NewWhile")
	setStatus(s, func() error {
		o, err := graphOf(g)
		if err != nil {
			return err
		}
		if inputs == nil {
			return nullArg("TF_NewWhile", "inputs")
		}
		co, _ := graphOf(cond)
		bo, _ := graphOf(body)
		for _, c := range []*graphObj{co, bo} {
			o.ref()
			c.parent, c.parentInputs = o, inputs
		}
		in := unsafe.Slice(inputs, int(n))
		ci, bi := unsafe.Slice(condIn, int(n)), unsafe.Slice(bodyIn, int(n))
		for i := range in {
			gout, err := outputIn(o, &in[i])
			if err != nil {
				return err
			}
			for _, p := range []struct {
				obj  *graphObj
				name string
				out  *C.TF_Output
			}{{co, "cond_input", &ci[i]}, {bo, "body_input", &bi[i]}} {
				b := p.obj.g.NewBuilder("Placeholder", fmt.Sprint(p.name, i))
				b.SetAttr("dtype", graph.AttrType(gout.DType()))
				nd, err := b.Finish()
				if err != nil {
					return err
				}
				p.out.oper, p.out.index = p.obj.op(nd), 0
			}
		}
		return nil
	}())
}

// msFinishWhile is TF_FinishWhile. It returns 0, freeing nothing, when params
// do not come from TF_NewWhile (as TF); otherwise 1, and C frees the
// params' graphs and arrays whether the loop was built or not.
//
//export msFinishWhile
func msFinishWhile(p *C.TF_WhileParams, s *C.TF_Status, outputs *C.TF_Output) (free C.int) {
	defer recoverTo(s, "TF_FinishWhile")
	var co, bo *graphObj
	if p != nil && p.cond_graph != nil && p.body_graph != nil {
		co, _ = handleValue(p.cond_graph.h).(*graphObj)
		bo, _ = handleValue(p.body_graph.h).(*graphObj)
	}
	if co == nil || bo == nil || co.parent == nil || co.parent != bo.parent || co.parentInputs != bo.parentInputs ||
		p.ninputs <= 0 || p.cond_inputs == nil || p.body_inputs == nil || p.body_outputs == nil {
		setStatus(s, status.InvalidArg("TF_WhileParams must be created by successful TF_NewWhile() call"))
		return 0
	}
	setStatus(s, finishWhile(p, co, bo, outputs))
	return 1
}

func finishWhile(p *C.TF_WhileParams, co, bo *graphObj, outputs *C.TF_Output) error {
	n := int(p.ninputs)
	if p.cond_output.oper == nil {
		return status.InvalidArg("TF_WhileParams `cond_output` field isn't set")
	}
	bodyOut := unsafe.Slice(p.body_outputs, n)
	for i := range bodyOut {
		if bodyOut[i].oper == nil {
			return status.InvalidArg("TF_WhileParams `body_outputs[%d]` field isn't set", i)
		}
	}
	if p.name == nil {
		return status.InvalidArg("TF_WhileParams `name` field is null")
	}
	if outputs == nil {
		return nullArg("TF_FinishWhile", "outputs")
	}
	parent := co.parent
	w := &graph.WhileLoop{Name: C.GoString(p.name), Cond: co.g, Body: bo.g, CondOutput: tensorID(p.cond_output)}
	in := unsafe.Slice(co.parentInputs, n)
	condIn, bodyIn := unsafe.Slice(p.cond_inputs, n), unsafe.Slice(p.body_inputs, n)
	for i := range n {
		gout, err := outputIn(parent, &in[i])
		if err != nil {
			return err
		}
		if condIn[i].oper == nil || bodyIn[i].oper == nil {
			return status.InvalidArg("TF_WhileParams: cond_inputs[%d] or body_inputs[%d] is NULL", i, i)
		}
		w.Inputs = append(w.Inputs, gout)
		w.CondInputs = append(w.CondInputs, tensorID(condIn[i]))
		w.BodyInputs = append(w.BodyInputs, tensorID(bodyIn[i]))
		w.BodyOutputs = append(w.BodyOutputs, tensorID(bodyOut[i]))
	}
	exits, err := parent.g.AddWhileLoop(w)
	if err != nil {
		return err
	}
	res := unsafe.Slice(outputs, n)
	for i, e := range exits {
		res[i].oper, res[i].index = parent.op(e.Node), C.int(e.Index)
	}
	return nil
}

// tensorID names an output by its operation's name, as TF's ToTensorId does:
// the operation may be of any graph.
func tensorID(o C.TF_Output) graph.TensorID {
	return graph.TensorID{Name: C.GoString(o.oper.name), Index: int(o.index)}
}
