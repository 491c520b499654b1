package graph

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"mstream/proto/tfpb"
	"mstream/status"
	"mstream/tensor"
)

// functionGraphs parses the GraphDefs that TF 2.15 wrote for
// test/functions (tf.function concrete graphs with their libraries).
func functionGraphs(t *testing.T) map[string]*tfpb.GraphDef {
	t.Helper()
	paths, err := filepath.Glob("../test/functions/*.pbtxt")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no test/functions graphs: %v", err)
	}
	gds := map[string]*tfpb.GraphDef{}
	for _, p := range paths {
		text, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		gds[strings.TrimSuffix(filepath.Base(p), ".pbtxt")] = mustParse(t, string(text))
	}
	return gds
}

// TestLibraryRoundTrip imports TF's GraphDefs and checks that the exported
// library holds the same FunctionDefs and gradients, each serialized to
// the same bytes as TF's (deterministic marshalling of both), so TF parses
// what mstream writes exactly as what it wrote itself.
func TestLibraryRoundTrip(t *testing.T) {
	det := proto.MarshalOptions{Deterministic: true}
	for name, gd := range functionGraphs(t) {
		t.Run(name, func(t *testing.T) {
			g := New()
			if _, err := g.Import(gd, nil); err != nil {
				if name == "missing" {
					return // a call to a function no library has; see session's test
				}
				t.Fatal(err)
			}
			want := gd.GetLibrary().GetFunction()
			got := g.ToGraphDef().GetLibrary().GetFunction()
			if len(got) != len(want) || g.NumFunctions() != len(want) {
				t.Fatalf("%d functions exported, %d in TF's GraphDef", len(got), len(want))
			}
			byName := map[string]*tfpb.FunctionDef{}
			for _, fd := range got {
				byName[fd.Signature.Name] = fd
			}
			for _, fd := range want {
				a, err1 := det.Marshal(fd)
				b, err2 := det.Marshal(byName[fd.Signature.Name])
				if err1 != nil || err2 != nil || string(a) != string(b) {
					t.Errorf("function %s: exported bytes differ from TF's", fd.Signature.Name)
				}
			}
			if !sort.SliceIsSorted(got, func(i, j int) bool { return got[i].Signature.Name < got[j].Signature.Name }) {
				t.Error("library not sorted by name")
			}
			// A second import of the same GraphDef's library is a no-op.
			if err := g.AddLibrary(gd.GetLibrary()); err != nil {
				t.Errorf("re-adding the same library: %v", err)
			}
		})
	}
}

func fdef(t *testing.T, text string) *tfpb.FunctionDef {
	t.Helper()
	gd := mustParse(t, "library { function { "+text+" } }")
	return gd.Library.Function[0]
}

const (
	fnSquare = `signature { name: "Sq" input_arg { name: "a" type: DT_FLOAT } output_arg { name: "y" type: DT_FLOAT } }
  node_def { name: "m" op: "Mul" input: "a" input: "a" attr { key: "T" value { type: DT_FLOAT } } }
  ret { key: "y" value: "m:z:0" }`
	fnPoly = `signature { name: "Poly" input_arg { name: "a" type_attr: "T" } output_arg { name: "y" type_attr: "T" }
    output_arg { name: "n" type: DT_INT32 } attr { name: "T" type: "type" } }
  node_def { name: "m" op: "Neg" input: "a" attr { key: "T" value { placeholder: "T" } } }
  node_def { name: "s" op: "Size" input: "a" attr { key: "T" value { placeholder: "T" } } }
  ret { key: "y" value: "m:y:0" } ret { key: "n" value: "s:output:0" }`
)

// TestLibraryAdd checks TF's rules for adding functions and gradients
// (FunctionLibraryDefinition::AddFunctionDef, AddGradientDef, AddLibrary):
// duplicates that are equal are no-ops, different ones and names of
// registered ops are INVALID_ARGUMENT, and a failed AddLibrary or Import
// leaves the library unchanged.
func TestLibraryAdd(t *testing.T) {
	g := New()
	sq := fdef(t, fnSquare)
	if err := g.AddFunction(sq); err != nil {
		t.Fatal(err)
	}
	v := g.Version()
	if err := g.AddFunction(fdef(t, fnSquare)); err != nil || g.Version() != v {
		t.Errorf("equal duplicate: %v (version %d -> %d)", err, v, g.Version())
	}
	other := fdef(t, strings.Replace(fnSquare, `"Mul"`, `"AddV2"`, 1))
	if err := g.AddFunction(other); status.CodeOf(err) != status.InvalidArgument || !strings.Contains(err.Error(), "different function with the same name") {
		t.Errorf("different def under 'Sq': %v", err)
	}
	if err := g.AddFunction(fdef(t, `signature { name: "MatMul" }`)); status.CodeOf(err) != status.InvalidArgument || !strings.Contains(err.Error(), "op with the same name") {
		t.Errorf("function named MatMul: %v", err)
	}
	if err := g.AddGradient("Sq", "SqGrad"); err != nil {
		t.Fatal(err)
	}
	if err := g.AddGradient("Sq", "SqGrad"); err != nil {
		t.Errorf("same gradient again: %v", err)
	}
	if err := g.AddGradient("Sq", "Other"); status.CodeOf(err) != status.InvalidArgument || !strings.Contains(err.Error(), "already has gradient function 'SqGrad'") {
		t.Errorf("second gradient: %v", err)
	}
	// All or nothing: Poly is valid, the gradient clash is not.
	err := g.AddLibrary(&tfpb.FunctionDefLibrary{Function: []*tfpb.FunctionDef{fdef(t, fnPoly)},
		Gradient: []*tfpb.GradientDef{{FunctionName: "Sq", GradientFunc: "Other"}}})
	if status.CodeOf(err) != status.InvalidArgument || g.Function("Poly") != nil {
		t.Errorf("failed AddLibrary: %v, Poly %v", err, g.Function("Poly"))
	}
	gd := mustParse(t, `node { name: "x" op: "NoOp" } node { name: "x" op: "NoOp" }`)
	gd.Library = &tfpb.FunctionDefLibrary{Function: []*tfpb.FunctionDef{fdef(t, fnPoly)}}
	if _, err := g.Import(gd, nil); err == nil || g.Function("Poly") != nil {
		t.Errorf("failed import: %v, Poly %v", err, g.Function("Poly"))
	}
	lib := g.Library()
	if len(lib.Function) != 1 || !proto.Equal(lib.Function[0], sq) || len(lib.Gradient) != 1 || g.Gradient("Sq") != "SqGrad" {
		t.Errorf("library %v", lib)
	}
}

// TestFunctionCallNode builds nodes whose op is a function's name, through
// import and through the Builder: their input and output types come from
// the signature with its attrs bound at the call site.
func TestFunctionCallNode(t *testing.T) {
	g := New()
	gd := mustParse(t, `node { name: "x" `+phF+` }
node { name: "c" op: "Poly" input: "x" `+tF+` }`)
	gd.Library = &tfpb.FunctionDefLibrary{Function: []*tfpb.FunctionDef{fdef(t, fnPoly), fdef(t, fnSquare)}}
	if _, err := g.Import(gd, nil); err != nil {
		t.Fatal(err)
	}
	c := g.Lookup("c")
	if !slices.Equal(c.OutTypes, []tensor.DType{tensor.Float, tensor.Int32}) || c.Attrs["T"].GetType() != tfpb.DataType_DT_FLOAT {
		t.Errorf("Poly call: out %v, attrs %v", c.OutTypes, c.Attrs)
	}
	if g.OpDef("Poly") != g.Function("Poly").Signature || g.OpDef("MatMul") == nil || g.OpDef("Nope") != nil {
		t.Error("OpDef lookup")
	}
	b := g.NewBuilder("Sq", "sq")
	b.AddInput(c.Output(0))
	sq, err := b.Finish()
	if err != nil || !slices.Equal(sq.OutTypes, []tensor.DType{tensor.Float}) {
		t.Fatalf("Sq call: %v, %v", sq, err)
	}
	b = g.NewBuilder("Sq", "bad")
	b.AddInput(c.Output(1))
	if _, err := b.Finish(); status.CodeOf(err) != status.InvalidArgument {
		t.Errorf("Sq of int32: %v", err)
	}
	for _, op := range []string{"_Arg", "_Retval", "_DeviceArg", "_DeviceRetval"} {
		if LookupOpDef(op) == nil {
			t.Errorf("%s unknown", op)
		}
		for _, d := range AllOpDefs().Op {
			if d.Name == op {
				t.Errorf("%s listed by AllOpDefs (TF_GetAllOpList is ops.pbtxt)", op)
			}
		}
	}
	gd = mustParse(t, `node { name: "x" `+phF+` }
node { name: "r" op: "_Retval" input: "x" attr { key: "T" value { type: DT_FLOAT } } attr { key: "index" value { i: 0 } } }`)
	if _, err := New().Import(gd, nil); err != nil {
		t.Errorf("_Retval import: %v", err)
	}
}

// TestCallShapes compares the static shapes of calls, If, Case and While
// outputs (and of what reads them) with TF_GraphGetTensorShape's in TF
// 2.15, whose refiner follows calls into the library as this one does
// (test/functions/cases.json "shapes").
func TestCallShapes(t *testing.T) {
	raw, err := os.ReadFile("../test/functions/cases.json")
	if err != nil {
		t.Fatal(err)
	}
	var cs struct {
		Cases []struct {
			Name   string             `json:"name"`
			Graph  string             `json:"graph"`
			Shapes map[string][]int64 `json:"shapes"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(raw, &cs); err != nil {
		t.Fatal(err)
	}
	gds := functionGraphs(t)
	checked := 0
	for _, c := range cs.Cases {
		g := New()
		if _, err := g.Import(gds[strings.TrimSuffix(c.Graph, ".pbtxt")], nil); err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		for name, want := range c.Shapes {
			n, idx, _ := strings.Cut(name, ":")
			i, _ := strconv.Atoi(idx)
			got := g.TensorShape(g.Lookup(n).Output(i))
			if want == nil && got.Known || want != nil && (!got.Known || !slices.Equal(got.Dims, want)) {
				t.Errorf("%s: shape of %s: %v, TF %v (nil: unknown rank)", c.Name, name, got, want)
			}
			checked++
		}
	}
	if checked < 20 {
		t.Errorf("only %d shapes checked", checked)
	}
}

// TestCallShapesBlowup: shape inference through a chain of 40 functions
// each calling the next twice (2^40 paths) and through a function that
// calls itself finishes, inferring each instantiation once.
func TestCallShapesBlowup(t *testing.T) {
	lib := &tfpb.FunctionDefLibrary{}
	const depth = 40
	for i := 0; i < depth; i++ {
		body := `node_def { name: "m" op: "Neg" input: "a" attr { key: "T" value { type: DT_FLOAT } } } ret { key: "y" value: "m:y:0" }`
		if i < depth-1 {
			call := func(name, in string) string {
				return `node_def { name: "` + name + `" op: "F` + strconv.Itoa(i+1) + `" input: "` + in + `" }`
			}
			body = call("c1", "a") + call("c2", "c1:y:0") + ` ret { key: "y" value: "c2:y:0" }`
		}
		lib.Function = append(lib.Function, fdef(t, `signature { name: "F`+strconv.Itoa(i)+`" input_arg { name: "a" type: DT_FLOAT } output_arg { name: "y" type: DT_FLOAT } } `+body))
	}
	lib.Function = append(lib.Function, fdef(t, `signature { name: "Self" input_arg { name: "a" type: DT_FLOAT } output_arg { name: "y" type: DT_FLOAT } }
  node_def { name: "again" op: "Self" input: "a" } node_def { name: "again2" op: "Self" input: "again:y:0" } ret { key: "y" value: "again2:y:0" }`))
	gd := mustParse(t, `node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } attr { key: "shape" value { shape { dim { size: 5 } } } } }
node { name: "f" op: "F0" input: "x" } node { name: "s" op: "Self" input: "x" }`)
	gd.Library = lib
	g := New()
	if _, err := g.Import(gd, nil); err != nil {
		t.Fatal(err)
	}
	if s := g.TensorShape(g.Lookup("f").Output(0)); s.String() != "[5]" {
		t.Errorf("F0's shape %v, want [5]", s)
	}
	if s := g.TensorShape(g.Lookup("s").Output(0)); s.Known {
		t.Errorf("a recursive function's shape %v, want unknown", s)
	}
}
