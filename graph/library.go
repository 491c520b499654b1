package graph

import (
	"sort"

	"google.golang.org/protobuf/proto"

	"mstream/proto/tfpb"
	"mstream/status"
)

// library is a graph's function library, TF's FunctionLibraryDefinition:
// FunctionDefs by signature name and the gradient map (function name ->
// gradient function name). It is guarded by Graph.mu. FunctionDefs are
// stored as private clones and never change once added, so a caller may
// keep the *tfpb.FunctionDef it gets without the lock (read-only).
type library struct {
	funcs map[string]*tfpb.FunctionDef
	grads map[string]string
}

// addFunction adds fd unless an equal FunctionDef of the same name is
// already there (then it is a no-op), with TF's errors: a different def
// under the name, or a name that a registered op has, is INVALID_ARGUMENT.
// It reports whether fd was added.
func (l *library) addFunction(fd *tfpb.FunctionDef) (bool, error) {
	name := fd.GetSignature().GetName()
	if name == "" {
		return false, status.InvalidArg("Cannot add a function without a name: its signature has no name")
	}
	if old := l.funcs[name]; old != nil {
		if !functionDefsEqual(old, fd) {
			return false, status.InvalidArg("Cannot add function '%s' because a different function with the same name already exists.", name)
		}
		return false, nil
	}
	if lookupOpDef(name) != nil {
		return false, status.InvalidArg("Cannot add function '%s' because an op with the same name already exists.", name)
	}
	if l.funcs == nil {
		l.funcs = map[string]*tfpb.FunctionDef{}
	}
	l.funcs[name] = proto.Clone(fd).(*tfpb.FunctionDef)
	return true, nil
}

// addGradient records grad as fn's gradient function; a second, different
// gradient for fn is INVALID_ARGUMENT as in TF. It reports whether the
// entry is new.
func (l *library) addGradient(fn, grad string) (bool, error) {
	if old, ok := l.grads[fn]; ok {
		if old != grad {
			return false, status.InvalidArg("Cannot assign gradient function '%s' to '%s' because it already has gradient function '%s'", grad, fn, old)
		}
		return false, nil
	}
	if l.grads == nil {
		l.grads = map[string]string{}
	}
	l.grads[fn] = grad
	return true, nil
}

// addLibrary adds every function and gradient of lib, or none: on error
// what it added is removed again, as TF's AddLibrary rolls back.
func (l *library) addLibrary(lib *tfpb.FunctionDefLibrary) error {
	var funcs, grads []string
	undo := func() {
		for _, f := range funcs {
			delete(l.funcs, f)
		}
		for _, g := range grads {
			delete(l.grads, g)
		}
	}
	for _, fd := range lib.GetFunction() {
		added, err := l.addFunction(fd)
		if err != nil {
			undo()
			return err
		}
		if added {
			funcs = append(funcs, fd.GetSignature().GetName())
		}
	}
	for _, gd := range lib.GetGradient() {
		added, err := l.addGradient(gd.GetFunctionName(), gd.GetGradientFunc())
		if err != nil {
			undo()
			return err
		}
		if added {
			grads = append(grads, gd.GetFunctionName())
		}
	}
	return nil
}

// toProto writes the library with functions and gradients sorted by name
// (TF's order is its hash map's), or nil when it is empty, so a graph
// without functions exports no library field, as TF's does.
func (l *library) toProto() *tfpb.FunctionDefLibrary {
	if len(l.funcs) == 0 && len(l.grads) == 0 {
		return nil
	}
	lib := &tfpb.FunctionDefLibrary{}
	for _, name := range sortedKeys(l.funcs) {
		lib.Function = append(lib.Function, proto.Clone(l.funcs[name]).(*tfpb.FunctionDef))
	}
	for _, name := range sortedKeys(l.grads) {
		lib.Gradient = append(lib.Gradient, &tfpb.GradientDef{FunctionName: name, GradientFunc: l.grads[name]})
	}
	return lib
}

// functionDefsEqual compares two FunctionDefs as TF's FunctionDefsEqual
// does for the purpose of a duplicate add: the same signature, attrs,
// arg attrs, resource ids, body (node order ignored), returns and control
// returns.
func functionDefsEqual(a, b *tfpb.FunctionDef) bool {
	if len(a.NodeDef) != len(b.NodeDef) {
		return false
	}
	ac, bc := proto.Clone(a).(*tfpb.FunctionDef), proto.Clone(b).(*tfpb.FunctionDef)
	byName := func(n []*tfpb.NodeDef) {
		sort.Slice(n, func(i, j int) bool { return n[i].Name < n[j].Name })
	}
	byName(ac.NodeDef)
	byName(bc.NodeDef)
	return proto.Equal(ac, bc)
}

// opDef finds the OpDef of op: a registered op, else the signature of a
// function in the library (a node whose op is a function's name calls it).
func (l *library) opDef(op string) *tfpb.OpDef {
	if d := lookupOpDef(op); d != nil {
		return d
	}
	if fd := l.funcs[op]; fd != nil {
		return fd.Signature
	}
	return nil
}

// clone copies the maps (the FunctionDefs themselves are immutable and
// shared), so an import can stage additions and drop them on error.
func (l *library) clone() library {
	c := library{funcs: make(map[string]*tfpb.FunctionDef, len(l.funcs)), grads: make(map[string]string, len(l.grads))}
	for k, v := range l.funcs {
		c.funcs[k] = v
	}
	for k, v := range l.grads {
		c.grads[k] = v
	}
	return c
}

// changed reports whether l holds more than old (additions are the only
// change a library sees).
func (l *library) changed(old *library) bool {
	return len(l.funcs) != len(old.funcs) || len(l.grads) != len(old.grads)
}
