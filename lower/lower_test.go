package lower

import (
	"strconv"
	"strings"
	"testing"

	"mstream/graph"
	"mstream/status"
)

func load(t *testing.T, name string, opts *graph.ImportOptions) *graph.Graph {
	t.Helper()
	g, err := graph.ImportTextFile("../test/functions/"+name+".pbtxt", opts)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// reach lists the nodes a lowered signature reaches, by name.
func reach(fetches []graph.Output) map[string]*graph.Node {
	seen := map[string]*graph.Node{}
	var walk func(n *graph.Node)
	walk = func(n *graph.Node) {
		if seen[n.Name] == n {
			return
		}
		seen[n.Name] = n
		for _, in := range n.Inputs {
			walk(in.Node)
		}
		for _, c := range n.Controls {
			walk(c)
		}
	}
	for _, f := range fetches {
		walk(f.Node)
	}
	return seen
}

func lowerAll(t *testing.T, g *graph.Graph, fetch ...string) (Result, map[string]*graph.Node) {
	t.Helper()
	var fetches []graph.Output
	for _, f := range fetch {
		fetches = append(fetches, g.Lookup(f).Output(0))
	}
	g.RLock()
	defer g.RUnlock()
	res, err := Lower(g, nil, fetches, nil)
	if err != nil {
		t.Fatal(err)
	}
	return res, reach(res.Fetches)
}

// TestInlineNames checks the documented naming of inlined nodes: a body
// node is <call node>/<body node>, nested calls nest the prefix, and the
// call node's own name goes to the IdentityN that stands for its outputs,
// so fetches and node-level stream assignment by name find them. A body
// node asks for its own device, else the call's.
func TestInlineNames(t *testing.T) {
	g := load(t, "nested_calls", &graph.ImportOptions{DefaultDevice: "/device:CPU:0"})
	res, nodes := lowerAll(t, g, "Identity", "Identity_1")
	if res.Calls != 5 {
		t.Errorf("%d bodies inlined, want 5 (twice, scale twice inside it, scale twice more)", res.Calls)
	}
	for _, name := range []string{"PartitionedCall", "PartitionedCall/PartitionedCall/mul", "PartitionedCall/PartitionedCall_1/add", "PartitionedCall/sub", "PartitionedCall_2/mul"} {
		n := nodes[name]
		if n == nil {
			t.Errorf("no node %s among %d", name, len(nodes))
			continue
		}
		if n.Device != "/device:CPU:0" {
			t.Errorf("%s asks for device %q, not its call's", name, n.Device)
		}
	}
	if n := nodes["PartitionedCall"]; n == nil || n.Op != "IdentityN" {
		t.Errorf("the call's stand-in: %v", n)
	}
	for _, n := range nodes {
		if Functional(g, n.Op) {
			t.Errorf("%s (op %s) left after lowering", n.Name, n.Op)
		}
	}
}

// TestLowerWhileAttrs: the lowered loop's Enters carry the While's
// parallel_iterations and the node's name as frame_name; every Const of
// the body waits on the loop's pivot (it must run in the frame).
func TestLowerWhileAttrs(t *testing.T) {
	g := load(t, "while_cond", nil)
	_, nodes := lowerAll(t, g, "Identity")
	enters, consts := 0, 0
	for name, n := range nodes {
		switch n.Op {
		case "Enter":
			enters++
			if n.Attrs["frame_name"].GetS() == nil || string(n.Attrs["frame_name"].GetS()) != "while" || n.Attrs["parallel_iterations"].GetI() != 4 {
				t.Errorf("%s: frame %q parallel_iterations %d", name, n.Attrs["frame_name"].GetS(), n.Attrs["parallel_iterations"].GetI())
			}
		case "Const":
			if (strings.HasPrefix(name, "while/body/") || strings.HasPrefix(name, "while/cond/")) && len(n.Controls) == 0 {
				t.Errorf("%s in the loop has no control input", name)
			}
			consts++
		}
	}
	if enters == 0 || consts == 0 {
		t.Errorf("%d Enters, %d Consts", enters, consts)
	}
}

// TestLowerErrors: a call of a missing function fails with TF's code and
// words; a Run that needs no functional node is left as it is.
func TestLowerErrors(t *testing.T) {
	g := load(t, "missing", nil)
	g.RLock()
	_, err := Lower(g, nil, []graph.Output{g.Lookup("r").Output(0)}, nil)
	res, err2 := Lower(g, nil, []graph.Output{g.Lookup("x").Output(0)}, nil)
	g.RUnlock()
	if status.CodeOf(err) != status.InvalidArgument || !strings.Contains(err.Error(), `Failed to find function "NoSuchFunction"`) || !strings.Contains(err.Error(), "'r'") {
		t.Errorf("missing function: %v", err)
	}
	if err2 != nil || res.Fetches[0].Node != g.Lookup("x") {
		t.Errorf("nothing to lower: %v %v", res.Fetches, err2)
	}
}

// TestLowerBlowup: a chain of functions each calling the next twice
// inlines to 2^depth bodies; past the node limit the plan fails with
// RESOURCE_EXHAUSTED naming the call instead of exhausting memory.
func TestLowerBlowup(t *testing.T) {
	var text strings.Builder
	text.WriteString(`node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }
node { name: "f" op: "F0" input: "x" }
library {`)
	const depth = 12
	for i := 0; i < depth; i++ {
		body := `node_def { name: "m" op: "Neg" input: "a" attr { key: "T" value { type: DT_FLOAT } } } ret { key: "y" value: "m:y:0" }`
		if i < depth-1 {
			next := "F" + strconv.Itoa(i+1)
			body = `node_def { name: "c1" op: "` + next + `" input: "a" } node_def { name: "c2" op: "` + next + `" input: "c1:y:0" } ret { key: "y" value: "c2:y:0" }`
		}
		text.WriteString(` function { signature { name: "F` + strconv.Itoa(i) + `" input_arg { name: "a" type: DT_FLOAT } output_arg { name: "y" type: DT_FLOAT } } ` + body + ` }`)
	}
	text.WriteString(" }")
	gd, err := graph.ParseTextGraphDef([]byte(text.String()))
	if err != nil {
		t.Fatal(err)
	}
	g := graph.New()
	if _, err := g.Import(gd, nil); err != nil {
		t.Fatal(err)
	}
	fetch := []graph.Output{g.Lookup("f").Output(0)}
	g.RLock()
	defer g.RUnlock()
	if _, err := lower(g, nil, fetch, nil, 1000); status.CodeOf(err) != status.ResourceExhausted || !strings.Contains(err.Error(), "'f'") {
		t.Errorf("past the limit: %v", err)
	}
	res, err := lower(g, nil, fetch, nil, 1<<14)
	if err != nil || res.Calls != 1<<depth-1 {
		t.Errorf("within the limit: %d bodies, %v", res.Calls, err)
	}
}

// TestSymbolicGradientErrors: a SymbolicGradient whose function holds an
// op without a registered gradient (Bitcast, inside a nested call, which
// is expanded) fails naming the node and the op, and one over a primitive
// op is UNIMPLEMENTED naming it.
// (test/functions' symbolic_gradient compares a working one with TF.)
func TestSymbolicGradientErrors(t *testing.T) {
	const text = `
node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }
node { name: "dy" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }
node { name: "g" op: "SymbolicGradient" input: "x" input: "dy"
  attr { key: "Tin" value { list { type: DT_FLOAT type: DT_FLOAT } } }
  attr { key: "Tout" value { list { type: DT_FLOAT } } }
  attr { key: "f" value { func { name: "Outer" } } } }
node { name: "p" op: "SymbolicGradient" input: "x" input: "dy"
  attr { key: "Tin" value { list { type: DT_FLOAT type: DT_FLOAT } } }
  attr { key: "Tout" value { list { type: DT_FLOAT } } }
  attr { key: "f" value { func { name: "Neg" attr { key: "T" value { type: DT_FLOAT } } } } } }
library {
  function { signature { name: "Inner" input_arg { name: "a" type: DT_FLOAT } output_arg { name: "y" type: DT_FLOAT } }
    node_def { name: "n" op: "Bitcast" input: "a" attr { key: "T" value { type: DT_FLOAT } } attr { key: "type" value { type: DT_FLOAT } } }
    ret { key: "y" value: "n:output:0" } }
  function { signature { name: "Outer" input_arg { name: "a" type: DT_FLOAT } output_arg { name: "y" type: DT_FLOAT } }
    node_def { name: "c" op: "PartitionedCall" input: "a"
      attr { key: "Tin" value { list { type: DT_FLOAT } } } attr { key: "Tout" value { list { type: DT_FLOAT } } }
      attr { key: "f" value { func { name: "Inner" } } } }
    ret { key: "y" value: "c:output:0" } } }
`
	gd, err := graph.ParseTextGraphDef([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	g := graph.New()
	if _, err := g.Import(gd, nil); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		node string
		code status.Code
		msg  string
	}{
		{"g", status.NotFound, "Bitcast"},
		{"p", status.Unimplemented, "primitive op 'Neg'"},
	} {
		g.RLock()
		_, err := Lower(g, nil, []graph.Output{g.Lookup(c.node).Output(0)}, nil)
		g.RUnlock()
		if status.CodeOf(err) != c.code || !strings.Contains(err.Error(), "Node '"+c.node+"'") || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: %v; want %v naming the node and %q", c.node, err, c.code, c.msg)
		}
	}
}
