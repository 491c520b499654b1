package exec

import (
	"strings"
	"testing"

	"mstream/graph"
	"mstream/status"
)

// TestPlaceStrict: a session's placement (Strict) fails a node that names
// a device the process does not have, as TF's placer does, unless
// allow_soft_placement; the zero Placement (Build) ignores device names.
func TestPlaceStrict(t *testing.T) {
	for _, c := range []struct {
		dev    string
		gpus   int
		strict bool
		soft   bool
		fail   bool
	}{
		{dev: "", strict: true},
		{dev: "/device:CPU:0", strict: true},
		{dev: "/job:localhost/replica:0/task:0/device:CPU:0", strict: true},
		{dev: "/job:localhost/replica:0/task:0", strict: true},
		{dev: "/device:CPU:1", strict: true, fail: true},
		{dev: "/device:GPU:0", strict: true, fail: true},
		{dev: "/device:GPU:0", gpus: 1, strict: true},
		{dev: "/device:GPU:1", gpus: 1, strict: true, fail: true},
		{dev: "/device:TPU:0", strict: true, fail: true},
		{dev: "/device:CPU:1", strict: true, soft: true},
		{dev: "/device:GPU:0", strict: true, soft: true},
		{dev: "/device:CPU:1"},
		{dev: "/device:GPU:3"},
	} {
		a := gnode("a", "ExecTestG", c.dev, constNode("x"))
		_, err := build(nil, nil, []graph.Output{{Node: a}}, nil, Placement{GPUs: c.gpus, AllowSoft: c.soft, Strict: c.strict})
		switch {
		case c.fail && (status.CodeOf(err) != status.InvalidArgument || !strings.Contains(err.Error(), "'a'") || !strings.Contains(err.Error(), c.dev)):
			t.Errorf("%+v: error %v, want INVALID_ARGUMENT naming 'a' and %s", c, err, c.dev)
		case !c.fail && err != nil:
			t.Errorf("%+v: %v", c, err)
		}
	}
}
