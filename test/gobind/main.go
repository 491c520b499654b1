//go:build tfgobind

// Command gobind is a client of the official TensorFlow Go bindings
// (github.com/tensorflow/tensorflow/tensorflow/go at v2.15.0) linked against
// build/libtensorflow.so. test/gobind/run.sh builds it in a throwaway module
// (the build tag keeps it out of the mstream module) with the bindings'
// protos generated into a temporary directory.
//
// It builds graphs with the op package and with tf.NewGraph + Import, runs
// sessions (feeds, fetches, targets, partial runs, strings, errors), runs
// TF's tf.function graphs of test/functions, loads TF's half_plus_two
// SavedModel as the bindings' own saved_model_test.go does (from
// test/savedmodel/tf under $MSTREAM_REPO), and prints "N passed, M failed".
package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	tf "github.com/tensorflow/tensorflow/tensorflow/go"
	"github.com/tensorflow/tensorflow/tensorflow/go/core/framework/graph_go_proto"
	"github.com/tensorflow/tensorflow/tensorflow/go/op"
)

var pass, fail int

func check(ok bool, format string, args ...any) {
	if ok {
		pass++
		return
	}
	fail++
	fmt.Fprintf(os.Stderr, "FAIL: "+format+"\n", args...)
}

func noErr(err error, what string) bool {
	check(err == nil, "%s: %v", what, err)
	return err == nil
}

// opGraph: y = Softmax(Relu(x·W + b)) and a string Identity, built with the op package.
func opGraph() {
	s := op.NewScope()
	x := op.Placeholder(s.SubScope("input"), tf.Float, op.PlaceholderShape(tf.MakeShape(-1, 3)))
	w := op.Const(s.SubScope("w"), [][]float32{{1, 0}, {0, 1}, {1, -1}})
	b := op.Const(s.SubScope("b"), []float32{0.5, -0.5})
	logits := op.BiasAdd(s, op.MatMul(s, x, w), b)
	relu := op.Relu(s, logits)
	y := op.Softmax(s, relu)
	str := op.Placeholder(s.SubScope("str"), tf.String)
	strOut := op.Identity(s, str)
	sum := op.Sum(s, relu, op.Const(s.SubScope("axes"), []int32{0, 1}))
	g, err := s.Finalize()
	if !noErr(err, "op scope") {
		return
	}
	check(x.Shape().String() == "[?, 3]" && relu.Shape().String() == "[?, 2]", "shapes %v %v", x.Shape(), relu.Shape())
	check(y.Op.Type() == "Softmax" && g.Operation(y.Op.Name()) != nil, "graph lookup")

	sess, err := tf.NewSession(g, &tf.SessionOptions{Config: []byte{0x10, 0x02}})
	if !noErr(err, "NewSession") {
		return
	}
	defer sess.Close()
	devs, err := sess.ListDevices()
	check(err == nil && len(devs) >= 1 && devs[0].Type == "CPU", "ListDevices %v %v", devs, err)

	in := [][]float32{{1, 2, 3}, {-1, 0, 2}}
	xt, _ := tf.NewTensor(in)
	st, _ := tf.NewTensor([]string{"", "short", strings.Repeat("long string ", 10), "nul\x00inside"})
	out, err := sess.Run(map[tf.Output]*tf.Tensor{x: xt, str: st}, []tf.Output{relu, y, strOut, sum}, nil)
	if !noErr(err, "Run") {
		return
	}
	r := out[0].Value().([][]float32)
	// x·W + b = [[4.5,-1.5],[1.5,-2.5]] -> relu [[4.5,0],[1.5,0]]
	check(r[0][0] == 4.5 && r[0][1] == 0 && r[1][0] == 1.5 && r[1][1] == 0, "relu %v", r)
	p := out[1].Value().([][]float32)
	for i, row := range p {
		want0 := 1 / (1 + math.Exp(-float64(r[i][0]-r[i][1])))
		check(math.Abs(float64(row[0])-want0) < 1e-6 && math.Abs(float64(row[0]+row[1])-1) < 1e-6, "softmax row %d %v", i, row)
	}
	strs := out[2].Value().([]string)
	check(len(strs) == 4 && strs[0] == "" && strs[2] == strings.Repeat("long string ", 10) && strs[3] == "nul\x00inside",
		"strings %q", strs)
	check(out[3].Value().(float32) == 6, "sum %v", out[3].Value())

	// A wrong-dtype feed is an error, and the session keeps working.
	bad, _ := tf.NewTensor([][]int32{{1, 2, 3}})
	_, err = sess.Run(map[tf.Output]*tf.Tensor{x: bad}, []tf.Output{relu}, nil)
	check(err != nil && strings.Contains(err.Error(), "input/Placeholder"), "wrong dtype error: %v", err)
	out, err = sess.Run(map[tf.Output]*tf.Tensor{x: xt}, []tf.Output{relu}, nil)
	check(err == nil && out[0].Value().([][]float32)[0][0] == 4.5, "run after an error: %v", err)

	// Partial run: feed x, fetch relu, then fetch y.
	pr, err := sess.NewPartialRun([]tf.Output{x}, []tf.Output{relu, y}, nil)
	if noErr(err, "NewPartialRun") {
		o1, err := pr.Run(map[tf.Output]*tf.Tensor{x: xt}, []tf.Output{relu}, nil)
		check(err == nil && o1[0].Value().([][]float32)[0][0] == 4.5, "partial run 1: %v", err)
		o2, err := pr.Run(nil, []tf.Output{y}, nil)
		check(err == nil && len(o2[0].Value().([][]float32)) == 2, "partial run 2: %v", err)
	}
}

// importGraph: tf.NewGraph + Import of a GraphDef written by WriteTo, with a prefix.
func importGraph() {
	s := op.NewScope()
	a := op.Placeholder(s.SubScope("a"), tf.Double)
	c := op.Const(s.SubScope("c"), []float64{2, 3})
	op.Mul(s.SubScope("out"), a, c)
	g0, err := s.Finalize()
	if !noErr(err, "scope 2") {
		return
	}
	var buf strings.Builder
	_, err = g0.WriteTo(&buf)
	if !noErr(err, "WriteTo") {
		return
	}
	g := tf.NewGraph()
	if !noErr(g.Import([]byte(buf.String()), "imported"), "Import") {
		return
	}
	check(len(g.Operations()) == len(g0.Operations()), "imported %d of %d ops", len(g.Operations()), len(g0.Operations()))
	in := g.Operation("imported/a/Placeholder")
	mul := g.Operation("imported/out/Mul")
	if in == nil || mul == nil {
		check(false, "imported ops missing: %v", g.Operations())
		return
	}
	check(mul.NumInputs() == 2 && mul.Output(0).DataType() == tf.Double, "Mul introspection")
	attr, err := mul.Attr("T")
	check(err == nil && attr == tf.Double, "attr T %v %v", attr, err)
	sess, err := tf.NewSession(g, nil)
	if !noErr(err, "NewSession 2") {
		return
	}
	defer sess.Close()
	at, _ := tf.NewTensor([]float64{1.5, -2})
	out, err := sess.Run(map[tf.Output]*tf.Tensor{in.Output(0): at}, []tf.Output{mul.Output(0)}, nil)
	if noErr(err, "Run 2") {
		v := out[0].Value().([]float64)
		check(v[0] == 3 && v[1] == -6, "mul %v", v)
	}
	// Targets only.
	_, err = sess.Run(nil, nil, []*tf.Operation{g.Operation("imported/c/Const")})
	check(err == nil, "target run: %v", err)
	// An unknown op in a GraphDef: NOT_FOUND from Import, graph unchanged.
	n := len(g.Operations())
	err = g.Import([]byte("\n\x0e\n\x01z\x12\tNoSuchOpX"), "")
	check(err != nil && strings.Contains(err.Error(), "NoSuchOpX"), "unknown op import: %v", err)
	check(len(g.Operations()) == n, "graph changed by a failed import")
}

// functions runs TF 2.15's tf.function graphs of test/functions (function
// libraries, calls, If, Case, While) through the bindings and compares
// with TF's values in cases.json. MSTREAM_REPO names the checkout.
func functions() {
	dir := filepath.Join(os.Getenv("MSTREAM_REPO"), "test", "functions")
	raw, err := os.ReadFile(filepath.Join(dir, "cases.json"))
	if !noErr(err, "functions cases") {
		return
	}
	type value struct {
		DType  string    `json:"dtype"`
		Shape  []int64   `json:"shape"`
		Values []float64 `json:"values"`
	}
	var cs struct {
		Cases []struct {
			Name, Graph string
			Needs       []string
			Runs        []struct {
				Feeds   map[string]value
				Fetches []string
				Want    []value
			}
		}
	}
	if !noErr(json.Unmarshal(raw, &cs), "cases.json") {
		return
	}
	ran := 0
	for _, c := range cs.Cases {
		if len(c.Needs) > 0 {
			continue // kernels that may not be there yet
		}
		text, err := os.ReadFile(filepath.Join(dir, c.Graph))
		gd := &graph_go_proto.GraphDef{}
		if !noErr(err, c.Name) || !noErr(prototext.Unmarshal(text, gd), c.Name+" pbtxt") {
			continue
		}
		bin, _ := proto.Marshal(gd)
		g := tf.NewGraph()
		if !noErr(g.Import(bin, ""), c.Name+" import") {
			continue
		}
		sess, err := tf.NewSession(g, nil)
		if !noErr(err, c.Name+" session") {
			continue
		}
		out := func(name string) tf.Output {
			n, idx := name, 0
			if i := strings.LastIndexByte(name, ':'); i >= 0 {
				n = name[:i]
				fmt.Sscan(name[i+1:], &idx)
			}
			return g.Operation(n).Output(idx)
		}
		for k, r := range c.Runs {
			if r.Want == nil {
				continue // an error case
			}
			feeds := map[tf.Output]*tf.Tensor{}
			for name, v := range r.Feeds {
				var t *tf.Tensor
				switch v.DType {
				case "float32":
					f := make([]float32, len(v.Values))
					for i, x := range v.Values {
						f[i] = float32(x)
					}
					t, err = tf.NewTensor(f)
				case "int32":
					n := make([]int32, len(v.Values))
					for i, x := range v.Values {
						n[i] = int32(x)
					}
					t, err = tf.NewTensor(n)
				case "bool":
					b := make([]bool, len(v.Values))
					for i, x := range v.Values {
						b[i] = x != 0
					}
					t, err = tf.NewTensor(b)
				}
				if len(v.Shape) == 0 && t != nil && err == nil {
					// A scalar: the bindings' Reshape keeps the shape [1].
					t, err = tf.NewTensor(reflect.ValueOf(t.Value()).Index(0).Interface())
				}
				if t == nil || err != nil || len(v.Shape) > 0 && t.Reshape(v.Shape) != nil {
					check(false, "%s: feed %s of %s", c.Name, name, v.DType)
					continue
				}
				feeds[out(name+":0")] = t
			}
			var fetches []tf.Output
			for _, f := range r.Fetches {
				fetches = append(fetches, out(f))
			}
			got, err := sess.Run(feeds, fetches, nil)
			if !noErr(err, fmt.Sprintf("%s run %d", c.Name, k)) {
				continue
			}
			for j, w := range r.Want {
				vals := flatten(reflect.ValueOf(got[j].Value()), nil)
				ok := len(vals) == len(w.Values) && slices.Equal(got[j].Shape(), w.Shape)
				for i := 0; ok && i < len(vals); i++ {
					ok = math.Abs(vals[i]-w.Values[i]) <= 1e-5*math.Max(1, math.Abs(w.Values[i]))
				}
				check(ok, "%s run %d %s: %v %v, TF %v %v", c.Name, k, r.Fetches[j], got[j].Shape(), vals, w.Shape, w.Values)
			}
			ran++
		}
		sess.Close()
	}
	check(ran >= 20, "only %d function runs compared", ran)
}

// flatten appends the numbers of a (nested) slice or scalar as float64.
func flatten(v reflect.Value, out []float64) []float64 {
	switch v.Kind() {
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			out = flatten(v.Index(i), out)
		}
	case reflect.Float32, reflect.Float64:
		out = append(out, v.Float())
	case reflect.Int32, reflect.Int64:
		out = append(out, float64(v.Int()))
	case reflect.Bool:
		b := 0.0
		if v.Bool() {
			b = 1
		}
		out = append(out, b)
	}
	return out
}

// eager: the bindings' context and tensor handles (host only in mstream).
func eager() {
	ctx, err := tf.NewContext(nil)
	if !noErr(err, "NewContext") {
		return
	}
	devs, err := ctx.ListDevices()
	check(err == nil && len(devs) == 1, "eager devices %v %v", devs, err)
	t, _ := tf.NewTensor([]int64{1, 2, 3})
	h, err := tf.NewTensorHandle(t)
	if noErr(err, "NewTensorHandle") {
		dims, err := h.Shape()
		check(err == nil && len(dims) == 1 && dims[0] == 3 && h.DataType() == tf.Int64, "handle shape %v %v", dims, err)
		back, err := h.ToTensor()
		check(err == nil && back.Value().([]int64)[2] == 3, "handle to tensor %v", err)
	}
}

// savedModel is the bindings' TestSavedModelHalfPlusTwo and
// TestSavedModelWithEmptyTags: y = 0.5 * x + 2 through the loaded session,
// the signatures parsed from the MetaGraphDef TF_LoadSessionFromSavedModel
// returned, and an error for empty tags.
func savedModel() {
	dir := filepath.Join(os.Getenv("MSTREAM_REPO"), "test/savedmodel/tf/half_plus_two/00000123")
	m, err := tf.LoadSavedModel(dir, []string{"serve"}, new(tf.SessionOptions))
	if !noErr(err, "LoadSavedModel") {
		return
	}
	defer m.Session.Close()
	check(m.Graph.Operation("x") != nil && m.Graph.Operation("y") != nil, "x and y in the loaded graph")
	sig, ok := m.Signatures["serving_default"]
	check(ok && sig.Inputs["x"].Name == "x:0" && sig.Outputs["y"].Name == "y:0", "serving_default signature %+v", sig)
	for _, c := range [][2]float32{{-1, 1.5}, {1, 2.5}, {0, 2}, {float32(math.Inf(-1)), float32(math.Inf(-1))}, {float32(math.Inf(1)), float32(math.Inf(1))}} {
		x, _ := tf.NewTensor([]float32{c[0]})
		y, err := m.Session.Run(map[tf.Output]*tf.Tensor{m.Graph.Operation("x").Output(0): x}, []tf.Output{m.Graph.Operation("y").Output(0)}, nil)
		if noErr(err, "half_plus_two run") {
			got := y[0].Value().([]float32)[0]
			check(got == c[1], "half_plus_two(%v) = %v, want %v", c[0], got, c[1])
		}
	}
	_, err = tf.LoadSavedModel(dir, []string{}, new(tf.SessionOptions))
	check(err != nil, "LoadSavedModel with empty tags succeeded")
}

func main() {
	check(tf.Version() == "2.15.0", "tf.Version() = %q", tf.Version())
	opGraph()
	importGraph()
	functions()
	eager()
	savedModel()
	fmt.Printf("%d passed, %d failed\n", pass, fail)
	if fail > 0 {
		os.Exit(1)
	}
}
