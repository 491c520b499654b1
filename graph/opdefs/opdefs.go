package opdefs

import (
	_ "embed"
	"sync"

	"google.golang.org/protobuf/proto"

	"mstream/proto/tfpb"
)

//go:embed ops.binpb
var data []byte

var (
	once   sync.Once
	list   *tfpb.OpList
	byName map[string]*tfpb.OpDef
)

func load() {
	list = &tfpb.OpList{}
	if err := proto.Unmarshal(data, list); err != nil {
		panic("opdefs: embedded ops.binpb is corrupt: " + err.Error())
	}
	byName = make(map[string]*tfpb.OpDef, len(list.Op))
	for _, op := range list.Op {
		byName[op.Name] = op
	}
}

// Lookup returns the OpDef of op (from ops.pbtxt, else one of the internal
// ops of Internal), or nil. The result is shared: callers must not modify it.
func Lookup(op string) *tfpb.OpDef {
	once.Do(load)
	if d := byName[op]; d != nil {
		return d
	}
	return Internal(op)
}

// All returns every OpDef sorted by name. The list is shared: callers must
// not modify it.
func All() *tfpb.OpList {
	once.Do(load)
	return list
}
