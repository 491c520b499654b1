package main

import (
	"encoding/binary"
	"flag"
	"fmt"
	"log"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"strings"

	"google.golang.org/protobuf/encoding/prototext"

	"mstream/proto/tfpb"
)

const (
	seed      = 20240521 // weights
	inputSeed = 7        // the expected-output batch
	denseDim  = 13
	embDim    = 16
	batchSize = 8
)

// table describes one id feature and its embedding table.
type table struct {
	rows    int
	idType  tfpb.DataType
	column  bool // ids are [-1,1] rather than [-1]
	weights []float32
}

// layer is one MatMul+BiasAdd (+Relu unless last) of the MLP.
type layer struct {
	in, out int
	w, b    []float32
}

type model struct {
	tables []table
	layers []layer
}

func newModel() *model {
	r := rand.New(rand.NewSource(seed))
	m := &model{tables: []table{
		{rows: 1000, idType: tfpb.DataType_DT_INT32},
		{rows: 1000, idType: tfpb.DataType_DT_INT64},
		{rows: 500, idType: tfpb.DataType_DT_INT32, column: true},
		{rows: 200, idType: tfpb.DataType_DT_INT64, column: true},
	}}
	for i := range m.tables {
		t := &m.tables[i]
		t.weights = make([]float32, t.rows*embDim)
		for j := range t.weights {
			t.weights[j] = float32(r.NormFloat64() * 0.5)
		}
	}
	dims := []int{denseDim + embDim*len(m.tables), 256, 128, 1}
	for i := 0; i+1 < len(dims); i++ {
		l := layer{in: dims[i], out: dims[i+1]}
		// He-style scaling keeps activations in a range where the Sigmoid
		// output is not saturated, so the check is meaningful.
		scale := math.Sqrt(2 / float64(l.in))
		l.w = make([]float32, l.in*l.out)
		for j := range l.w {
			l.w[j] = float32(r.NormFloat64() * scale)
		}
		l.b = make([]float32, l.out)
		for j := range l.b {
			l.b[j] = float32(r.NormFloat64() * 0.05)
		}
		m.layers = append(m.layers, l)
	}
	return m
}

func dtAttr(t tfpb.DataType) *tfpb.AttrValue {
	return &tfpb.AttrValue{Value: &tfpb.AttrValue_Type{Type: t}}
}
func intAttr(i int64) *tfpb.AttrValue { return &tfpb.AttrValue{Value: &tfpb.AttrValue_I{I: i}} }
func boolAttr(b bool) *tfpb.AttrValue { return &tfpb.AttrValue{Value: &tfpb.AttrValue_B{B: b}} }
func strAttr(s string) *tfpb.AttrValue {
	return &tfpb.AttrValue{Value: &tfpb.AttrValue_S{S: []byte(s)}}
}

func shapeProto(dims ...int64) *tfpb.TensorShapeProto {
	s := &tfpb.TensorShapeProto{}
	for _, d := range dims {
		s.Dim = append(s.Dim, &tfpb.TensorShapeProto_Dim{Size: d})
	}
	return s
}

func floatTensor(vals []float32, dims ...int64) *tfpb.TensorProto {
	buf := make([]byte, 4*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(v))
	}
	return &tfpb.TensorProto{Dtype: tfpb.DataType_DT_FLOAT, TensorShape: shapeProto(dims...), TensorContent: buf}
}

func int32Tensor(vals []int32, dims ...int64) *tfpb.TensorProto {
	return &tfpb.TensorProto{Dtype: tfpb.DataType_DT_INT32, TensorShape: shapeProto(dims...), IntVal: vals}
}

type builder struct{ g *tfpb.GraphDef }

func (b *builder) add(name, op string, inputs []string, attrs map[string]*tfpb.AttrValue) string {
	b.g.Node = append(b.g.Node, &tfpb.NodeDef{Name: name, Op: op, Input: inputs, Attr: attrs})
	return name
}

func (b *builder) placeholder(name string, t tfpb.DataType, dims ...int64) string {
	return b.add(name, "Placeholder", nil, map[string]*tfpb.AttrValue{
		"dtype": dtAttr(t),
		"shape": {Value: &tfpb.AttrValue_Shape{Shape: shapeProto(dims...)}},
	})
}

func (b *builder) constant(name string, t *tfpb.TensorProto) string {
	return b.add(name, "Const", nil, map[string]*tfpb.AttrValue{
		"dtype": dtAttr(t.Dtype),
		"value": {Value: &tfpb.AttrValue_Tensor{Tensor: t}},
	})
}

func (m *model) graphDef() *tfpb.GraphDef {
	b := &builder{g: &tfpb.GraphDef{Versions: &tfpb.VersionDef{Producer: 1645}}}
	f := tfpb.DataType_DT_FLOAT
	i32 := tfpb.DataType_DT_INT32

	dense := b.placeholder("dense", f, -1, denseDim)
	denseID := b.add("dense_identity", "Identity", []string{dense}, map[string]*tfpb.AttrValue{"T": dtAttr(f)})
	axis0 := b.constant("embedding/axis", int32Tensor([]int32{0}))
	concatIn := []string{denseID}
	for k, t := range m.tables {
		var ids string
		if t.column {
			ids = b.placeholder(fmt.Sprintf("ids_%d", k), t.idType, -1, 1)
		} else {
			ids = b.placeholder(fmt.Sprintf("ids_%d", k), t.idType, -1)
		}
		scope := fmt.Sprintf("embedding_%d", k)
		w := b.constant(scope+"/table", floatTensor(t.weights, int64(t.rows), embDim))
		emb := b.add(scope+"/lookup", "GatherV2", []string{w, ids, axis0}, map[string]*tfpb.AttrValue{
			"Tparams":    dtAttr(f),
			"Tindices":   dtAttr(t.idType),
			"Taxis":      dtAttr(i32),
			"batch_dims": intAttr(0),
		})
		if t.column {
			shape := b.constant(scope+"/shape", int32Tensor([]int32{-1, embDim}, 2))
			emb = b.add(scope+"/reshape", "Reshape", []string{emb, shape}, map[string]*tfpb.AttrValue{
				"T": dtAttr(f), "Tshape": dtAttr(i32),
			})
		}
		concatIn = append(concatIn, emb)
	}
	axis1 := b.constant("concat/axis", int32Tensor([]int32{1}))
	x := b.add("concat", "ConcatV2", append(concatIn, axis1), map[string]*tfpb.AttrValue{
		"N": intAttr(int64(len(concatIn))), "T": dtAttr(f), "Tidx": dtAttr(i32),
	})
	for i, l := range m.layers {
		scope := fmt.Sprintf("mlp/layer_%d", i)
		w := b.constant(scope+"/kernel", floatTensor(l.w, int64(l.in), int64(l.out)))
		bias := b.constant(scope+"/bias", floatTensor(l.b, int64(l.out)))
		x = b.add(scope+"/matmul", "MatMul", []string{x, w}, map[string]*tfpb.AttrValue{
			"T": dtAttr(f), "transpose_a": boolAttr(false), "transpose_b": boolAttr(false),
		})
		x = b.add(scope+"/bias_add", "BiasAdd", []string{x, bias}, map[string]*tfpb.AttrValue{
			"T": dtAttr(f), "data_format": strAttr("NHWC"),
		})
		if i+1 < len(m.layers) {
			x = b.add(scope+"/relu", "Relu", []string{x}, map[string]*tfpb.AttrValue{"T": dtAttr(f)})
		}
	}
	b.add("output", "Sigmoid", []string{x}, map[string]*tfpb.AttrValue{"T": dtAttr(f)})
	return b.g
}

// inputs is one batch of feeds, generated from inputSeed.
type inputs struct {
	dense []float32 // batchSize x denseDim
	ids   [][]int64 // per table, batchSize ids
}

func (m *model) inputs() inputs {
	r := rand.New(rand.NewSource(inputSeed))
	in := inputs{dense: make([]float32, batchSize*denseDim)}
	for i := range in.dense {
		in.dense[i] = float32(r.Float64()*2 - 1)
	}
	for _, t := range m.tables {
		ids := make([]int64, batchSize)
		for i := range ids {
			ids[i] = int64(r.Intn(t.rows))
		}
		in.ids = append(in.ids, ids)
	}
	return in
}

// forward computes the model's output in float64.
func (m *model) forward(in inputs) []float64 {
	var out []float64
	for n := 0; n < batchSize; n++ {
		var x []float64
		for j := 0; j < denseDim; j++ {
			x = append(x, float64(in.dense[n*denseDim+j]))
		}
		for k, t := range m.tables {
			row := int(in.ids[k][n])
			for j := 0; j < embDim; j++ {
				x = append(x, float64(t.weights[row*embDim+j]))
			}
		}
		for i, l := range m.layers {
			y := make([]float64, l.out)
			for o := 0; o < l.out; o++ {
				s := float64(l.b[o])
				for p := 0; p < l.in; p++ {
					s += x[p] * float64(l.w[p*l.out+o])
				}
				if i+1 < len(m.layers) && s < 0 {
					s = 0
				}
				y[o] = s
			}
			x = y
		}
		out = append(out, 1/(1+math.Exp(-x[0])))
	}
	return out
}

// expectedText is a line format that C and Python read without a parser
// library: "input NAME DTYPE DIM..." or "output NAME DTYPE DIM..." followed by
// one line of space-separated values.
func (m *model) expectedText(in inputs, out []float64) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "# Expected output of model_test.pbtxt, written by `go run ./examples/gen`.\n")
	fmt.Fprintf(&sb, "# Inputs drawn with math/rand seed %d; outputs computed in float64 from the float32 weights.\n", inputSeed)
	fmt.Fprintf(&sb, "# Each block: 'input|output NAME DTYPE DIM...' then one line of values.\n")
	fmt.Fprintf(&sb, "input dense float32 %d %d\n", batchSize, denseDim)
	for i, v := range in.dense {
		if i > 0 {
			sb.WriteByte(' ')
		}
		fmt.Fprintf(&sb, "%.9g", v)
	}
	sb.WriteByte('\n')
	for k, t := range m.tables {
		dt := "int32"
		if t.idType == tfpb.DataType_DT_INT64 {
			dt = "int64"
		}
		if t.column {
			fmt.Fprintf(&sb, "input ids_%d %s %d 1\n", k, dt, batchSize)
		} else {
			fmt.Fprintf(&sb, "input ids_%d %s %d\n", k, dt, batchSize)
		}
		for i, v := range in.ids[k] {
			if i > 0 {
				sb.WriteByte(' ')
			}
			fmt.Fprintf(&sb, "%d", v)
		}
		sb.WriteByte('\n')
	}
	fmt.Fprintf(&sb, "output output float32 %d 1\n", batchSize)
	for i, v := range out {
		if i > 0 {
			sb.WriteByte(' ')
		}
		fmt.Fprintf(&sb, "%.17g", v)
	}
	sb.WriteByte('\n')
	return sb.String()
}

const configText = `# ConfigProto (text format) for the bundled example.
inter_op_parallelism_threads: 2
intra_op_parallelism_threads: 2
allow_soft_placement: true
gpu_options {
  allow_growth: true
}
`

func main() {
	out := flag.String("out", "examples/data", "output directory")
	flag.Parse()
	m := newModel()
	text, err := prototext.MarshalOptions{Multiline: true, Indent: "  "}.Marshal(m.graphDef())
	if err != nil {
		log.Fatal(err)
	}
	// Check the config text parses as a ConfigProto before shipping it.
	if err := prototext.Unmarshal([]byte(configText), &tfpb.ConfigProto{}); err != nil {
		log.Fatalf("config_proto: %v", err)
	}
	in := m.inputs()
	files := map[string][]byte{
		"model_test.pbtxt":        text,
		"config_proto":            []byte(configText),
		"model_test.expected.txt": []byte(m.expectedText(in, m.forward(in))),
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		log.Fatal(err)
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(*out, name), data, 0o644); err != nil {
			log.Fatal(err)
		}
	}
}
