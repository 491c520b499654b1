package main

/*
#include "internal.h"
*/
import "C"

import (
	"runtime/cgo"
	"sort"
	"sync"
	"unsafe"

	"google.golang.org/protobuf/proto"

	"mstream/graph"
	"mstream/proto/pbparse"
	"mstream/proto/tfpb"
	"mstream/status"
	"mstream/tensor"
)

// graphObj is the Go side of a TF_Graph. It lives while the TF_Graph or any
// session over it does (refs), and owns one TF_Operation per node that C has
// seen, so that a node always has the same pointer.
type graphObj struct {
	g    *graph.Graph
	h    cgo.Handle
	mu   sync.Mutex // guards ops and refs
	ops  []*C.TF_Operation
	refs int
	// A while loop's cond or body graph (TF_NewWhile) holds a reference on
	// the graph the loop goes into, and remembers the caller's inputs array,
	// which TF_FinishWhile reads again, as TF does.
	parent       *graphObj
	parentInputs *C.TF_Output
}

func (o *graphObj) ref() {
	o.mu.Lock()
	o.refs++
	o.mu.Unlock()
}

func (o *graphObj) unref() {
	o.mu.Lock()
	o.refs--
	last := o.refs == 0
	ops := o.ops
	if last {
		o.ops = nil
	}
	o.mu.Unlock()
	if !last {
		return
	}
	for _, p := range ops {
		if p != nil {
			C.ms_free_operation(p)
		}
	}
	o.h.Delete()
	if o.parent != nil {
		o.parent.unref()
	}
}

// op returns the TF_Operation of n, creating it the first time.
func (o *graphObj) op(n *graph.Node) *C.TF_Operation {
	if n == nil {
		return nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for len(o.ops) <= n.ID {
		o.ops = append(o.ops, nil)
	}
	if p := o.ops[n.ID]; p != nil {
		return p
	}
	p := (*C.TF_Operation)(C.calloc(1, C.sizeof_TF_Operation))
	p.graph = C.uintptr_t(o.h)
	p.id = C.int(n.ID)
	p.name = C.CString(n.Name)
	p.op_type = C.CString(n.Op)
	p.device = C.CString(n.Device)
	C.ms_live(C.MS_LIVE_OPERATION, 1)
	o.ops[n.ID] = p
	return p
}

func graphOf(g *C.TF_Graph) (*graphObj, error) {
	if g == nil {
		return nil, status.InvalidArg("graph is NULL")
	}
	return handleValue(g.h).(*graphObj), nil
}

// nodeOf returns the graph and node of an operation.
func nodeOf(op *C.TF_Operation) (*graphObj, *graph.Node, error) {
	if op == nil {
		return nil, nil, status.InvalidArg("operation is NULL")
	}
	o := handleValue(op.graph).(*graphObj)
	n := o.g.NodeByID(int(op.id))
	if n == nil {
		return nil, nil, status.Errorf(status.Internal, "operation %d is not in its graph", int(op.id))
	}
	return o, n, nil
}

// nodeIn is nodeOf, checking that the operation belongs to o. An operation
// of o names o's handle, so the common case needs no handle lookup (a
// sync.Map read per feed and fetch of every Run).
func nodeIn(o *graphObj, op *C.TF_Operation) (*graph.Node, error) {
	if op != nil && cgo.Handle(op.graph) == o.h {
		if n := o.g.NodeByID(int(op.id)); n != nil {
			return n, nil
		}
	}
	og, n, err := nodeOf(op)
	if err != nil {
		return nil, err
	}
	if og != o {
		return nil, status.InvalidArg("operation '%s' belongs to another graph", n.Name)
	}
	return n, nil
}

// outputIn converts a TF_Output of graph o, checking the index.
func outputIn(o *graphObj, out *C.TF_Output) (graph.Output, error) {
	if out == nil || out.oper == nil {
		return graph.Output{}, status.InvalidArg("TF_Output has a NULL operation")
	}
	n, err := nodeIn(o, out.oper)
	if err != nil {
		return graph.Output{}, err
	}
	i := int(out.index)
	if i < 0 || i >= n.NumOutputs() {
		return graph.Output{}, status.Errorf(status.OutOfRange, "Node '%s' (type: '%s', num of outputs: %d) does not have output %d", n.Name, n.Op, n.NumOutputs(), i)
	}
	return graph.Output{Node: n, Index: i}, nil
}

// anyOutput converts a TF_Output of whatever graph its operation is in.
func anyOutput(out *C.TF_Output) (*graphObj, graph.Output, error) {
	if out == nil || out.oper == nil {
		return nil, graph.Output{}, status.InvalidArg("TF_Output has a NULL operation")
	}
	o, _, err := nodeOf(out.oper)
	if err != nil {
		return nil, graph.Output{}, err
	}
	gout, err := outputIn(o, out)
	return o, gout, err
}

//export msNewGraph
func msNewGraph() C.uintptr_t {
	o := &graphObj{g: graph.New(), refs: 1}
	o.h = cgo.NewHandle(o)
	return C.uintptr_t(o.h)
}

//export msDeleteGraph
func msDeleteGraph(h C.uintptr_t) {
	defer recoverQuiet()
	if o, ok := handleValue(h).(*graphObj); ok {
		o.unref()
	}
}

//export msGraphSetTensorShape
func msGraphSetTensorShape(g *C.TF_Graph, out *C.TF_Output, dims *C.int64_t, n C.int, s *C.TF_Status) {
	defer recoverTo(s, "TF_GraphSetTensorShape")
	setStatus(s, func() error {
		o, err := graphOf(g)
		if err != nil {
			return err
		}
		gout, err := outputIn(o, out)
		if err != nil {
			return err
		}
		shape := tensor.PartialShape{}
		if n >= 0 {
			if n > 0 && dims == nil {
				return nullArg("TF_GraphSetTensorShape", "dims")
			}
			shape.Known = true
			shape.Dims = append([]int64{}, unsafe.Slice((*int64)(unsafe.Pointer(dims)), int(n))...)
		}
		return o.g.SetTensorShape(gout, shape)
	}())
}

func tensorShape(g *C.TF_Graph, out *C.TF_Output) (tensor.PartialShape, error) {
	o, err := graphOf(g)
	if err != nil {
		return tensor.PartialShape{}, err
	}
	gout, err := outputIn(o, out)
	if err != nil {
		return tensor.PartialShape{}, err
	}
	return o.g.TensorShape(gout), nil
}

//export msGraphGetTensorNumDims
func msGraphGetTensorNumDims(g *C.TF_Graph, out *C.TF_Output, s *C.TF_Status) (r C.int) {
	r = -1
	defer recoverTo(s, "TF_GraphGetTensorNumDims")
	shape, err := tensorShape(g, out)
	setStatus(s, err)
	if err != nil {
		return -1
	}
	return C.int(shape.Rank())
}

//export msGraphGetTensorShape
func msGraphGetTensorShape(g *C.TF_Graph, out *C.TF_Output, dims *C.int64_t, n C.int, s *C.TF_Status) {
	defer recoverTo(s, "TF_GraphGetTensorShape")
	shape, err := tensorShape(g, out)
	if err == nil && int(n) != shape.Rank() {
		err = status.InvalidArg("Expected rank is %d but actual rank is %d", int(n), shape.Rank())
	}
	if err == nil && n > 0 && dims == nil {
		err = nullArg("TF_GraphGetTensorShape", "dims")
	}
	setStatus(s, err)
	if err != nil || n <= 0 {
		return
	}
	d := unsafe.Slice((*int64)(unsafe.Pointer(dims)), int(n))
	copy(d, shape.Dims)
}

//export msGraphOperationByName
func msGraphOperationByName(g *C.TF_Graph, name *C.char) *C.TF_Operation {
	defer recoverQuiet()
	o, err := graphOf(g)
	if err != nil || name == nil {
		return nil
	}
	return o.op(o.g.Lookup(C.GoString(name)))
}

//export msGraphNextOperation
func msGraphNextOperation(g *C.TF_Graph, pos *C.size_t) *C.TF_Operation {
	defer recoverQuiet()
	o, err := graphOf(g)
	if err != nil || pos == nil {
		return nil
	}
	// TF's positions are its node ids, which start at 2 after the graph's
	// two sentinel nodes: the first call moves *pos from 0 to 2, each later
	// one by 1, and *pos is the id of the operation returned.
	if *pos == 0 {
		*pos = 2
	} else {
		*pos++
	}
	n := o.g.NodeByID(int(*pos) - 2)
	if n == nil {
		return nil
	}
	return o.op(n)
}

//export msGraphToGraphDef
func msGraphToGraphDef(g *C.TF_Graph, buf *C.TF_Buffer, s *C.TF_Status) {
	defer recoverTo(s, "TF_GraphToGraphDef")
	o, err := graphOf(g)
	if err == nil {
		err = writeProto(buf, o.g.ToGraphDef())
	}
	setStatus(s, err)
}

//export msGraphVersions
func msGraphVersions(g *C.TF_Graph, buf *C.TF_Buffer, s *C.TF_Status) {
	defer recoverTo(s, "TF_GraphVersions")
	o, err := graphOf(g)
	if err == nil {
		v := o.g.ToGraphDef().GetVersions()
		if v == nil {
			v = &tfpb.VersionDef{Producer: graph.DefaultProducer}
		}
		err = writeProto(buf, v)
	}
	setStatus(s, err)
}

//export msGraphGetOpDef
func msGraphGetOpDef(g *C.TF_Graph, name *C.char, buf *C.TF_Buffer, s *C.TF_Status) {
	defer recoverTo(s, "TF_GraphGetOpDef")
	op := goStr(name)
	def := graph.LookupOpDef(op)
	var err error
	if def == nil {
		err = status.Errorf(status.NotFound, "Op type not registered '%s' in binary running on mstream.", op)
	} else {
		err = writeProto(buf, def)
	}
	setStatus(s, err)
}

//export msGetAllOpList
func msGetAllOpList() *C.TF_Buffer {
	defer recoverQuiet()
	b := C.TF_NewBuffer()
	if writeProto(b, graph.AllOpDefs()) != nil {
		C.TF_DeleteBuffer(b)
		return nil
	}
	return b
}

//export msOperationToNodeDef
func msOperationToNodeDef(op *C.TF_Operation, buf *C.TF_Buffer, s *C.TF_Status) {
	defer recoverTo(s, "TF_OperationToNodeDef")
	_, n, err := nodeOf(op)
	if err == nil {
		err = writeProto(buf, n.NodeDef())
	}
	setStatus(s, err)
}

// importOpts is the Go side of TF_ImportGraphDefOptions.
type importOpts struct {
	opts graph.ImportOptions
	// Outputs and operations named by the options, with the graph they
	// belong to, checked against the target graph at import time.
	owners []*graphObj
}

//export msNewImportOptions
func msNewImportOptions() C.uintptr_t {
	return C.uintptr_t(cgo.NewHandle(&importOpts{opts: graph.ImportOptions{
		InputMap:     map[graph.TensorID]graph.Output{},
		ControlRemap: map[string]*graph.Node{},
	}}))
}

//export msDeleteImportOptions
func msDeleteImportOptions(h C.uintptr_t) {
	defer recoverQuiet()
	if h != 0 {
		cgo.Handle(h).Delete()
	}
}

func importOptsOf(h C.uintptr_t) *importOpts {
	if v, ok := handleValue(h).(*importOpts); ok {
		return v
	}
	return nil
}

//export msImportSetString
func msImportSetString(h C.uintptr_t, which C.int, v *C.char) {
	defer recoverQuiet()
	if io := importOptsOf(h); io != nil {
		if which == 0 {
			io.opts.Prefix = goStr(v)
		} else {
			io.opts.DefaultDevice = goStr(v)
		}
	}
}

//export msImportSetBool
func msImportSetBool(h C.uintptr_t, which C.int, v C.uchar) {
	defer recoverQuiet()
	if io := importOptsOf(h); io != nil {
		switch which {
		case 0:
			io.opts.UniquifyNames = v != 0
		case 1:
			io.opts.UniquifyPrefix = v != 0
		case 2:
			io.opts.ValidateColocation = v != 0
		}
	}
}

//export msImportAddInputMapping
func msImportAddInputMapping(h C.uintptr_t, name *C.char, index C.int, dst *C.TF_Output) {
	defer recoverQuiet()
	io := importOptsOf(h)
	if io == nil || name == nil {
		return
	}
	o, out, err := anyOutput(dst)
	if err != nil {
		return
	}
	io.owners = append(io.owners, o)
	io.opts.InputMap[graph.TensorID{Name: C.GoString(name), Index: int(index)}] = out
}

//export msImportRemapControl
func msImportRemapControl(h C.uintptr_t, name *C.char, dst *C.TF_Operation) {
	defer recoverQuiet()
	io := importOptsOf(h)
	if io == nil || name == nil {
		return
	}
	o, n, err := nodeOf(dst)
	if err != nil {
		return
	}
	io.owners = append(io.owners, o)
	io.opts.ControlRemap[C.GoString(name)] = n
}

//export msImportAddControlDependency
func msImportAddControlDependency(h C.uintptr_t, op *C.TF_Operation) {
	defer recoverQuiet()
	io := importOptsOf(h)
	if io == nil {
		return
	}
	o, n, err := nodeOf(op)
	if err != nil {
		return
	}
	io.owners = append(io.owners, o)
	io.opts.ControlDependencies = append(io.opts.ControlDependencies, n)
}

//export msImportAddReturnOutput
func msImportAddReturnOutput(h C.uintptr_t, name *C.char, index C.int) {
	defer recoverQuiet()
	if io := importOptsOf(h); io != nil && name != nil {
		io.opts.ReturnOutputs = append(io.opts.ReturnOutputs, graph.TensorID{Name: C.GoString(name), Index: int(index)})
	}
}

//export msImportAddReturnOperation
func msImportAddReturnOperation(h C.uintptr_t, name *C.char) {
	defer recoverQuiet()
	if io := importOptsOf(h); io != nil && name != nil {
		io.opts.ReturnOperations = append(io.opts.ReturnOperations, C.GoString(name))
	}
}

//export msImportNumReturns
func msImportNumReturns(h C.uintptr_t, ops C.int) C.int {
	defer recoverQuiet()
	io := importOptsOf(h)
	if io == nil {
		return 0
	}
	if ops != 0 {
		return C.int(len(io.opts.ReturnOperations))
	}
	return C.int(len(io.opts.ReturnOutputs))
}

//export msGraphImport
func msGraphImport(g *C.TF_Graph, gd *C.TF_Buffer, h C.uintptr_t, s *C.TF_Status) (res *C.TF_ImportGraphDefResults) {
	defer recoverTo(s, "TF_GraphImportGraphDef")
	o, err := graphOf(g)
	if err == nil && gd == nil {
		err = nullArg("TF_GraphImportGraphDef", "graph_def")
	}
	if err != nil {
		setStatus(s, err)
		return nil
	}
	opts := &graph.ImportOptions{}
	if io := importOptsOf(h); io != nil {
		for _, owner := range io.owners {
			if owner != o {
				setStatus(s, status.InvalidArg("TF_ImportGraphDefOptions names an operation of another graph"))
				return nil
			}
		}
		opts = &io.opts
	}
	def := &tfpb.GraphDef{}
	if err := pbparse.Binary("Invalid GraphDef", "TF_GraphImportGraphDef's graph_def buffer", bufferBytes(gd), def); err != nil {
		setStatus(s, err)
		return nil
	}
	r, err := o.g.Import(def, opts)
	if err != nil {
		setStatus(s, err)
		return nil
	}
	res = C.ms_new_import_results(C.int(len(r.ReturnOutputs)), C.int(len(r.ReturnOperations)), C.int(len(r.MissingUnusedInputMappings)))
	outs := unsafe.Slice(res.outputs, len(r.ReturnOutputs))
	for i, out := range r.ReturnOutputs {
		outs[i] = C.TF_Output{oper: o.op(out.Node), index: C.int(out.Index)}
	}
	opers := unsafe.Slice(res.opers, len(r.ReturnOperations))
	for i, n := range r.ReturnOperations {
		opers[i] = o.op(n)
	}
	names := unsafe.Slice(res.missing_names, len(r.MissingUnusedInputMappings))
	idx := unsafe.Slice(res.missing_indexes, len(r.MissingUnusedInputMappings))
	for i, m := range r.MissingUnusedInputMappings {
		names[i] = C.CString(m.Name)
		idx[i] = C.int(m.Index)
	}
	setStatus(s, nil)
	return res
}

// Introspection.

//export msOperationNumOutputs
func msOperationNumOutputs(op *C.TF_Operation) C.int {
	defer recoverQuiet()
	_, n, err := nodeOf(op)
	if err != nil {
		return 0
	}
	return C.int(n.NumOutputs())
}

//export msOperationOutputType
func msOperationOutputType(out *C.TF_Output) C.TF_DataType {
	defer recoverQuiet()
	_, gout, err := anyOutput(out)
	if err != nil {
		return 0
	}
	if gout.Node.IsRefOutput(gout.Index) {
		return C.TF_DataType(gout.DType().Ref()) // VariableV2's: DT_FLOAT_REF, as TF
	}
	return C.TF_DataType(gout.DType())
}

//export msOperationNumInputs
func msOperationNumInputs(op *C.TF_Operation) C.int {
	defer recoverQuiet()
	_, n, err := nodeOf(op)
	if err != nil {
		return 0
	}
	return C.int(len(n.Inputs))
}

func inputOf(in *C.TF_Input) (*graphObj, *graph.Node, int, error) {
	if in == nil {
		return nil, nil, 0, status.InvalidArg("TF_Input is NULL")
	}
	o, n, err := nodeOf(in.oper)
	if err != nil {
		return nil, nil, 0, err
	}
	i := int(in.index)
	if i < 0 || i >= len(n.Inputs) {
		return nil, nil, 0, status.Errorf(status.OutOfRange, "Node '%s' does not have input %d", n.Name, i)
	}
	return o, n, i, nil
}

//export msOperationInputType
func msOperationInputType(in *C.TF_Input) C.TF_DataType {
	defer recoverQuiet()
	_, n, i, err := inputOf(in)
	if err != nil {
		return 0
	}
	if n.IsRefInput(i) {
		return C.TF_DataType(n.InTypes[i].Ref()) // Assign's ref: DT_FLOAT_REF, as TF
	}
	return C.TF_DataType(n.InTypes[i])
}

//export msOperationInput
func msOperationInput(in *C.TF_Input, out *C.TF_Output) {
	defer recoverQuiet()
	out.oper, out.index = nil, -1
	o, n, i, err := inputOf(in)
	if err != nil {
		return
	}
	src := n.Inputs[i]
	out.oper, out.index = o.op(src.Node), C.int(src.Index)
}

//export msOperationListLength
func msOperationListLength(op *C.TF_Operation, arg *C.char, input C.int, s *C.TF_Status) (r C.int) {
	r = -1
	defer recoverTo(s, "TF_OperationListLength")
	_, n, err := nodeOf(op)
	if err != nil {
		setStatus(s, err)
		return -1
	}
	name := goStr(arg)
	args, kind := n.OutArgs, "Output"
	if input != 0 {
		args, kind = n.InArgs, "Input"
	}
	rng, ok := args[name]
	if !ok {
		setStatus(s, status.InvalidArg("%s arg '%s' not found", kind, name))
		return -1
	}
	setStatus(s, nil)
	return C.int(rng[1] - rng[0])
}

//export msOperationAllInputs
func msOperationAllInputs(op *C.TF_Operation, outs *C.TF_Output, max C.int) {
	defer recoverQuiet()
	o, n, err := nodeOf(op)
	if err != nil || outs == nil {
		return
	}
	dst := unsafe.Slice(outs, int(max))
	for i := 0; i < len(n.Inputs) && i < int(max); i++ {
		dst[i] = C.TF_Output{oper: o.op(n.Inputs[i].Node), index: C.int(n.Inputs[i].Index)}
	}
}

//export msOperationOutputConsumers
func msOperationOutputConsumers(out *C.TF_Output, consumers *C.TF_Input, max C.int) C.int {
	defer recoverQuiet()
	o, gout, err := anyOutput(out)
	if err != nil {
		return 0
	}
	cs := o.g.Consumers(gout)
	if consumers != nil && max > 0 {
		dst := unsafe.Slice(consumers, int(max))
		for i := 0; i < len(cs) && i < int(max); i++ {
			dst[i] = C.TF_Input{oper: o.op(cs[i].Node), index: C.int(cs[i].Index)}
		}
	}
	return C.int(len(cs))
}

//export msOperationControls
func msOperationControls(op *C.TF_Operation, outputs C.int, dst **C.TF_Operation, max C.int) C.int {
	defer recoverQuiet()
	o, n, err := nodeOf(op)
	if err != nil {
		return 0
	}
	nodes := n.Controls
	if outputs != 0 {
		nodes = o.g.ControlOutputs(n)
	}
	if dst != nil && max > 0 {
		d := unsafe.Slice(dst, int(max))
		for i := 0; i < len(nodes) && i < int(max); i++ {
			d[i] = o.op(nodes[i])
		}
	}
	return C.int(len(nodes))
}

// sortedAttrNames lists a node's attrs in a stable order for
// TF_OperationGetAttrName.
func sortedAttrNames(n *graph.Node) []string {
	names := make([]string, 0, len(n.Attrs))
	for k := range n.Attrs {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

//export msOperationGetNumAttrs
func msOperationGetNumAttrs(op *C.TF_Operation) C.int {
	defer recoverQuiet()
	_, n, err := nodeOf(op)
	if err != nil {
		return 0
	}
	return C.int(len(n.Attrs))
}

//export msOperationGetAttrNameLength
func msOperationGetAttrNameLength(op *C.TF_Operation, i C.int) C.int {
	defer recoverQuiet()
	_, n, err := nodeOf(op)
	if err != nil {
		return -1
	}
	names := sortedAttrNames(n)
	if i < 0 || int(i) >= len(names) {
		return -1
	}
	return C.int(len(names[i]))
}

//export msOperationGetAttrName
func msOperationGetAttrName(op *C.TF_Operation, i C.int, out *C.char, s *C.TF_Status) {
	defer recoverTo(s, "TF_OperationGetAttrName")
	_, n, err := nodeOf(op)
	if err != nil {
		setStatus(s, err)
		return
	}
	names := sortedAttrNames(n)
	if i < 0 || int(i) >= len(names) {
		setStatus(s, status.Errorf(status.OutOfRange, "Operation only has %d attributes, can't get the %dth", len(names), int(i)))
		return
	}
	if out == nil {
		setStatus(s, nullArg("TF_OperationGetAttrName", "output"))
		return
	}
	copy(unsafe.Slice((*byte)(unsafe.Pointer(out)), len(names[i])), names[i])
	setStatus(s, nil)
}

var _ = proto.Marshal
