package resource

import (
	"sort"
	"sync"
	"sync/atomic"

	"mstream/tensor"
)

// VarKind is TF's type name of a variable (tensorflow::Var), the kind of
// both resource and ref variables here.
const VarKind = "N10tensorflow3VarE"

// LegacyVarKind is TF's type name of a ref variable's resource
// (tensorflow::LegacyVar): a VariableV2 and a VarHandleOp of one name are
// two variables.
const LegacyVarKind = "N10tensorflow9LegacyVarE"

// Var is a variable: an immutable value published by pointer (see the
// package doc's consistency model).
type Var struct {
	// DType is the variable's dtype, fixed when it is made.
	DType tensor.DType
	// Name names it in errors (the handle's or the node's name).
	Name   string
	legacy bool
	// seq orders the locks of UpdateAll.
	seq uint64
	mu  sync.Mutex
	val atomic.Pointer[tensor.Tensor]
}

// NewVar returns an uninitialised variable.
func NewVar(dt tensor.DType, name string) *Var {
	return &Var{DType: dt, Name: name, seq: varSeq.Add(1)}
}

// varSeq numbers variables as they are made: multi-variable writers lock
// in this order (TF sorts its mutexes by address for the same reason).
var varSeq atomic.Uint64

// NewLegacyVar returns an uninitialised ref variable.
func NewLegacyVar(dt tensor.DType, name string) *Var {
	return &Var{DType: dt, Name: name, legacy: true, seq: varSeq.Add(1)}
}

// Kind implements Resource.
func (v *Var) Kind() string {
	if v.legacy {
		return LegacyVarKind
	}
	return VarKind
}

// Value is the current value, nil while the variable is uninitialised.
// The caller must not modify it.
func (v *Var) Value() *tensor.Tensor { return v.val.Load() }

// Update runs f on the current value (nil when uninitialised) with every
// other writer excluded and publishes what it returns. f must return a new
// tensor that nobody else writes (the value it was given is still being
// read); returning nil, nil leaves the value unchanged.
func (v *Var) Update(f func(old *tensor.Tensor) (*tensor.Tensor, error)) (*tensor.Tensor, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	old := v.val.Load()
	nv, err := f(old)
	if err != nil {
		return nil, err
	}
	if nv == nil {
		return old, nil
	}
	v.val.Store(nv)
	return nv, nil
}

// Reset makes the variable uninitialised again.
func (v *Var) Reset() {
	v.mu.Lock()
	v.val.Store(nil)
	v.mu.Unlock()
}

// UpdateAll is Update over several variables at once, as an optimizer
// writes a variable and its accumulators: f sees every current value (nil
// when uninitialised) with all of them locked, in creation order so that
// two such writers never deadlock, and its results are published together
// before any lock is released. A variable named twice is locked once and
// gets the last of its results; a nil result leaves that value unchanged.
func UpdateAll(vs []*Var, f func(old []*tensor.Tensor) ([]*tensor.Tensor, error)) ([]*tensor.Tensor, error) {
	order := append([]*Var(nil), vs...)
	sort.Slice(order, func(i, j int) bool { return order[i].seq < order[j].seq })
	for i, v := range order {
		if i > 0 && order[i-1] == v {
			continue
		}
		v.mu.Lock()
		defer v.mu.Unlock()
	}
	old := make([]*tensor.Tensor, len(vs))
	for i, v := range vs {
		old[i] = v.val.Load()
	}
	nv, err := f(old)
	if err != nil {
		return nil, err
	}
	for i, v := range vs {
		if nv[i] != nil {
			v.val.Store(nv[i])
		} else {
			nv[i] = old[i]
		}
	}
	return nv, nil
}
