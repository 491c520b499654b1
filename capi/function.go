package main

/*
#include "internal.h"
*/
import "C"

import (
	"runtime/cgo"
	"unsafe"

	"google.golang.org/protobuf/proto"

	"mstream/graph"
	"mstream/proto/tfpb"
	"mstream/status"
)

// funcObj is the Go side of a TF_Function: one FunctionDef, replaced (never
// changed: graphs may share it) by TF_FunctionSetAttrValueProto. Like TF's,
// a TF_Function is not for concurrent use.
type funcObj struct {
	fd *tfpb.FunctionDef
}

// newFunction wraps fd in a fresh C handle.
func newFunction(fd *tfpb.FunctionDef) *C.TF_Function {
	f := (*C.TF_Function)(C.malloc(C.sizeof_TF_Function))
	f.h = C.uintptr_t(cgo.NewHandle(&funcObj{fd: fd}))
	f.name = C.CString(fd.GetSignature().GetName())
	C.ms_live(C.MS_LIVE_FUNCTION, 1)
	return f
}

func funcOf(f *C.TF_Function, fn string) (*funcObj, error) {
	if f == nil {
		return nil, nullArg(fn, "function")
	}
	return handleValue(f.h).(*funcObj), nil
}

//export msDeleteFunction
func msDeleteFunction(f *C.TF_Function) {
	defer recoverQuiet()
	cgo.Handle(f.h).Delete()
	C.free(unsafe.Pointer(f.name))
	C.free(unsafe.Pointer(f))
	C.ms_live(C.MS_LIVE_FUNCTION, -1)
}

//export msFunctionImportFunctionDef
func msFunctionImportFunctionDef(p unsafe.Pointer, n C.size_t, s *C.TF_Status) (r *C.TF_Function) {
	defer recoverTo(s, "TF_FunctionImportFunctionDef")
	fd := &tfpb.FunctionDef{}
	if err := proto.Unmarshal(goBytes(p, n), fd); err != nil {
		setStatus(s, status.InvalidArg("Invalid FunctionDef given to TF_FunctionImportFunctionDef"))
		return nil
	}
	setStatus(s, nil)
	return newFunction(fd)
}

//export msFunctionToFunctionDef
func msFunctionToFunctionDef(f *C.TF_Function, buf *C.TF_Buffer, s *C.TF_Status) {
	defer recoverTo(s, "TF_FunctionToFunctionDef")
	setStatus(s, func() error {
		o, err := funcOf(f, "TF_FunctionToFunctionDef")
		if err != nil {
			return err
		}
		return writeProto(buf, o.fd)
	}())
}

//export msFunctionSetAttrValueProto
func msFunctionSetAttrValueProto(f *C.TF_Function, name *C.char, p unsafe.Pointer, n C.size_t, s *C.TF_Status) {
	defer recoverTo(s, "TF_FunctionSetAttrValueProto")
	setStatus(s, func() error {
		o, err := funcOf(f, "TF_FunctionSetAttrValueProto")
		if err != nil {
			return err
		}
		v := &tfpb.AttrValue{}
		if proto.Unmarshal(goBytes(p, n), v) != nil {
			return status.InvalidArg("Unparseable AttrValue proto passed to TF_FunctionSetAttrValueProto")
		}
		// A function already handed to a graph keeps its def: a new one
		// is made rather than the shared one changed.
		fd := proto.Clone(o.fd).(*tfpb.FunctionDef)
		if fd.Attr == nil {
			fd.Attr = map[string]*tfpb.AttrValue{}
		}
		fd.Attr[goStr(name)] = v
		o.fd = fd
		return nil
	}())
}

//export msFunctionGetAttrValueProto
func msFunctionGetAttrValueProto(f *C.TF_Function, name *C.char, buf *C.TF_Buffer, s *C.TF_Status) {
	defer recoverTo(s, "TF_FunctionGetAttrValueProto")
	setStatus(s, func() error {
		o, err := funcOf(f, "TF_FunctionGetAttrValueProto")
		if err != nil {
			return err
		}
		v, ok := o.fd.Attr[goStr(name)]
		if !ok {
			return status.InvalidArg("Function '%s' has no attr named '%s'.", o.fd.GetSignature().GetName(), goStr(name))
		}
		return writeProto(buf, v)
	}())
}

//export msGraphCopyFunction
func msGraphCopyFunction(g *C.TF_Graph, f, grad *C.TF_Function, s *C.TF_Status) {
	defer recoverTo(s, "TF_GraphCopyFunction")
	setStatus(s, func() error {
		o, err := graphOf(g)
		if err != nil {
			return err
		}
		if f == nil {
			return status.InvalidArg("'func' argument to TF_GraphCopyFunction cannot be null")
		}
		fo, _ := funcOf(f, "")
		if err := o.g.AddFunction(fo.fd); err != nil {
			return err
		}
		if grad == nil {
			return nil
		}
		gro, _ := funcOf(grad, "")
		if err := o.g.AddFunction(gro.fd); err != nil {
			return err
		}
		return o.g.AddGradient(fo.fd.GetSignature().GetName(), gro.fd.GetSignature().GetName())
	}())
}

//export msGraphNumFunctions
func msGraphNumFunctions(g *C.TF_Graph) C.int {
	defer recoverQuiet()
	o, err := graphOf(g)
	if err != nil {
		return 0
	}
	return C.int(o.g.NumFunctions())
}

//export msGraphGetFunctions
func msGraphGetFunctions(g *C.TF_Graph, funcs **C.TF_Function, maxFunc C.int, s *C.TF_Status) (n C.int) {
	defer recoverTo(s, "TF_GraphGetFunctions")
	o, err := graphOf(g)
	if err == nil && funcs == nil && maxFunc > 0 {
		err = nullArg("TF_GraphGetFunctions", "funcs")
	}
	if err != nil {
		setStatus(s, err)
		return 0
	}
	fs := o.g.Functions()
	k := max(min(int(maxFunc), len(fs)), 0)
	out := unsafe.Slice(funcs, k)
	for i := 0; i < k; i++ {
		out[i] = newFunction(proto.Clone(fs[i]).(*tfpb.FunctionDef))
	}
	setStatus(s, nil)
	return C.int(k)
}

// msGraphToFunction is TF_GraphToFunctionWithControlOutputs.
//
//export msGraphToFunction
func msGraphToFunction(g *C.TF_Graph, name *C.char, appendHash C.uchar, nops C.int, ops **C.TF_Operation,
	nin C.int, inputs *C.TF_Output, nout C.int, outputs *C.TF_Output, outNames **C.char,
	nctrl C.int, ctrls **C.TF_Operation, ctrlNames **C.char, desc *C.char, s *C.TF_Status) (r *C.TF_Function) {
	defer recoverTo(s, "TF_GraphToFunction")
	f, err := func() (*C.TF_Function, error) {
		o, err := graphOf(g)
		if err != nil {
			return nil, err
		}
		if name == nil {
			return nil, nullArg("TF_GraphToFunction", "fn_name")
		}
		spec := &graph.FunctionSpec{Name: C.GoString(name), AllNodes: nops == -1, Description: goStr(desc), AppendHash: appendHash != 0}
		node := func(op *C.TF_Operation) (*graph.Node, error) { return nodeIn(o, op) }
		// An input or output of another graph is TF's "not a node of this
		// graph"; the index is checked by ToFunctionDef with TF's message.
		output := func(p *C.TF_Output) (graph.Output, error) {
			n, err := node(p.oper)
			return graph.Output{Node: n, Index: int(p.index)}, err
		}
		if nops > 0 {
			for _, op := range unsafe.Slice(ops, int(nops)) {
				n, err := node(op)
				if err != nil {
					return nil, err
				}
				spec.Body = append(spec.Body, n)
			}
		}
		if nin > 0 {
			for i := range unsafe.Slice(inputs, int(nin)) {
				out, err := output(&unsafe.Slice(inputs, int(nin))[i])
				if err != nil {
					return nil, err
				}
				spec.Inputs = append(spec.Inputs, out)
			}
		}
		if nout > 0 {
			outs := unsafe.Slice(outputs, int(nout))
			for i := range outs {
				out, err := output(&outs[i])
				if err != nil {
					return nil, err
				}
				spec.Outputs = append(spec.Outputs, out)
			}
			if outNames != nil {
				for _, p := range unsafe.Slice(outNames, int(nout)) {
					spec.OutputNames = append(spec.OutputNames, goStr(p))
				}
			}
		}
		if nctrl > 0 {
			for _, op := range unsafe.Slice(ctrls, int(nctrl)) {
				n, err := node(op)
				if err != nil {
					return nil, err
				}
				spec.ControlOutputs = append(spec.ControlOutputs, n)
			}
			if ctrlNames != nil {
				for _, p := range unsafe.Slice(ctrlNames, int(nctrl)) {
					spec.ControlOutputNames = append(spec.ControlOutputNames, goStr(p))
				}
			}
		}
		fd, err := o.g.ToFunctionDef(spec)
		if err != nil {
			return nil, err
		}
		return newFunction(fd), nil
	}()
	setStatus(s, err)
	return f
}
