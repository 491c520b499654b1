// Command gen writes the GPU benchmark's models as binary TF GraphDefs, with
// the shapes of the PyTorch peer (../shared/bench/peers_torch.py):
//
//	mlp.pb         dense[B,512] -> 1024-1024-512-256-1, ReLU between, Sigmoid out
//	dlrm_small.pb  dense[B,13] -> bottom 512-256-64 (ReLU);
//	               sparse[B,26] ids -> Unpack -> 26 GatherV2 on 100k x 64 tables;
//	               Pack of the 27 vectors, BatchMatMulV2(T, T^T), a GatherV2 of the
//	               351 strictly-lower-triangle entries, ConcatV2 with the bottom
//	               output, top 415-512-256-1 (ReLU between), Sigmoid out
//
// Every model has inputs "dense" (and "sparse") and the output "output".
// Weights are seeded normal draws with He scaling, so outputs stay in the
// Sigmoid's useful range. The DLRM tables make a 666 MB file: the benchmark
// runs this generator (built here as a static binary) on the GPU machine.
//
//	gen -out DIR [-rows 100000] [-models mlp,dlrm_small]
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

	"google.golang.org/protobuf/proto"

	"mstream/proto/tfpb"
)

const (
	seed      = 1
	tables    = 26
	embDim    = 64
	denseDLRM = 13
	denseMLP  = 512
)

type builder struct {
	g *tfpb.GraphDef
	r *rand.Rand
}

func newBuilder() *builder {
	return &builder{g: &tfpb.GraphDef{Versions: &tfpb.VersionDef{Producer: 1645}}, r: rand.New(rand.NewSource(seed))}
}

func tAttr(t tfpb.DataType) *tfpb.AttrValue { return &tfpb.AttrValue{Value: &tfpb.AttrValue_Type{Type: t}} }
func iAttr(i int64) *tfpb.AttrValue         { return &tfpb.AttrValue{Value: &tfpb.AttrValue_I{I: i}} }
func bAttr(b bool) *tfpb.AttrValue          { return &tfpb.AttrValue{Value: &tfpb.AttrValue_B{B: b}} }

func shape(dims ...int64) *tfpb.TensorShapeProto {
	s := &tfpb.TensorShapeProto{}
	for _, d := range dims {
		s.Dim = append(s.Dim, &tfpb.TensorShapeProto_Dim{Size: d})
	}
	return s
}

const f32 = tfpb.DataType_DT_FLOAT

func (b *builder) add(name, op string, in []string, attrs map[string]*tfpb.AttrValue) string {
	b.g.Node = append(b.g.Node, &tfpb.NodeDef{Name: name, Op: op, Input: in, Attr: attrs})
	return name
}

func (b *builder) placeholder(name string, t tfpb.DataType, dims ...int64) string {
	return b.add(name, "Placeholder", nil, map[string]*tfpb.AttrValue{
		"dtype": tAttr(t), "shape": {Value: &tfpb.AttrValue_Shape{Shape: shape(dims...)}}})
}

func (b *builder) constTensor(name string, t *tfpb.TensorProto) string {
	return b.add(name, "Const", nil, map[string]*tfpb.AttrValue{
		"dtype": tAttr(t.Dtype), "value": {Value: &tfpb.AttrValue_Tensor{Tensor: t}}})
}

// weights is a float32 Const of normal draws times scale.
func (b *builder) weights(name string, scale float64, dims ...int64) string {
	n := int64(1)
	for _, d := range dims {
		n *= d
	}
	buf := make([]byte, 4*n)
	for i := int64(0); i < n; i++ {
		binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(float32(b.r.NormFloat64()*scale)))
	}
	return b.constTensor(name, &tfpb.TensorProto{Dtype: f32, TensorShape: shape(dims...), TensorContent: buf})
}

func (b *builder) int32s(name string, v []int32, dims ...int64) string {
	return b.constTensor(name, &tfpb.TensorProto{Dtype: tfpb.DataType_DT_INT32, TensorShape: shape(dims...), IntVal: v})
}

// dense adds MatMul+BiasAdd(+Relu) layers through sizes; the last layer has
// no Relu unless lastRelu.
func (b *builder) dense(prefix, x string, sizes []int64, lastRelu bool) string {
	for i := 0; i+1 < len(sizes); i++ {
		p := fmt.Sprintf("%s/dense_%d", prefix, i)
		w := b.weights(p+"/kernel", math.Sqrt(2/float64(sizes[i])), sizes[i], sizes[i+1])
		bias := b.weights(p+"/bias", 0.01, sizes[i+1])
		x = b.add(p+"/MatMul", "MatMul", []string{x, w}, map[string]*tfpb.AttrValue{"T": tAttr(f32), "transpose_a": bAttr(false), "transpose_b": bAttr(false)})
		x = b.add(p+"/BiasAdd", "BiasAdd", []string{x, bias}, map[string]*tfpb.AttrValue{"T": tAttr(f32), "data_format": {Value: &tfpb.AttrValue_S{S: []byte("NHWC")}}})
		if i+2 < len(sizes) || lastRelu {
			x = b.add(p+"/Relu", "Relu", []string{x}, map[string]*tfpb.AttrValue{"T": tAttr(f32)})
		}
	}
	return x
}

func mlp() *tfpb.GraphDef {
	b := newBuilder()
	x := b.placeholder("dense", f32, -1, denseMLP)
	x = b.dense("mlp", x, []int64{denseMLP, 1024, 1024, 512, 256, 1}, false)
	b.add("output", "Sigmoid", []string{x}, map[string]*tfpb.AttrValue{"T": tAttr(f32)})
	return b.g
}

func dlrm(rows int64) *tfpb.GraphDef {
	b := newBuilder()
	i32 := tfpb.DataType_DT_INT32
	dense := b.placeholder("dense", f32, -1, denseDLRM)
	sparse := b.placeholder("sparse", i32, -1, tables)
	bot := b.dense("bottom", dense, []int64{denseDLRM, 512, 256, embDim}, true)
	b.add("sparse/unpack", "Unpack", []string{sparse}, map[string]*tfpb.AttrValue{"T": tAttr(i32), "num": iAttr(tables), "axis": iAttr(1)})
	axis0 := b.int32s("embedding/axis", []int32{0})
	feats := []string{bot}
	for k := 0; k < tables; k++ {
		tab := b.weights(fmt.Sprintf("embedding/table_%d", k), 0.1, rows, embDim)
		ids := fmt.Sprintf("sparse/unpack:%d", k)
		if k == 0 {
			ids = "sparse/unpack"
		}
		feats = append(feats, b.add(fmt.Sprintf("embedding/lookup_%d", k), "GatherV2", []string{tab, ids, axis0},
			map[string]*tfpb.AttrValue{"Tparams": tAttr(f32), "Tindices": tAttr(i32), "Taxis": tAttr(i32), "batch_dims": iAttr(0)}))
	}
	n := int64(tables + 1)
	t := b.add("interaction/stack", "Pack", feats, map[string]*tfpb.AttrValue{"T": tAttr(f32), "N": iAttr(n), "axis": iAttr(1)})
	z := b.add("interaction/dot", "BatchMatMulV2", []string{t, t}, map[string]*tfpb.AttrValue{"T": tAttr(f32), "adj_x": bAttr(false), "adj_y": bAttr(true)})
	flat := b.add("interaction/flat", "Reshape", []string{z, b.int32s("interaction/flat/shape", []int32{-1, int32(n * n)}, 2)},
		map[string]*tfpb.AttrValue{"T": tAttr(f32), "Tshape": tAttr(i32)})
	var tri []int32 // row-major strictly lower triangle, as torch.tril_indices(offset=-1)
	for i := int64(0); i < n; i++ {
		for j := int64(0); j < i; j++ {
			tri = append(tri, int32(i*n+j))
		}
	}
	pairs := b.add("interaction/lower", "GatherV2", []string{flat, b.int32s("interaction/lower/indices", tri, int64(len(tri))), b.int32s("interaction/lower/axis", []int32{1})},
		map[string]*tfpb.AttrValue{"Tparams": tAttr(f32), "Tindices": tAttr(i32), "Taxis": tAttr(i32), "batch_dims": iAttr(0)})
	cat := b.add("interaction/concat", "ConcatV2", []string{bot, pairs, b.int32s("interaction/concat/axis", []int32{1})},
		map[string]*tfpb.AttrValue{"T": tAttr(f32), "N": iAttr(2), "Tidx": tAttr(i32)})
	top := b.dense("top", cat, []int64{embDim + int64(len(tri)), 512, 256, 1}, false)
	b.add("output", "Sigmoid", []string{top}, map[string]*tfpb.AttrValue{"T": tAttr(f32)})
	return b.g
}

func main() {
	out := flag.String("out", ".", "output folder")
	rows := flag.Int64("rows", 100000, "rows of each DLRM embedding table")
	models := flag.String("models", "mlp,dlrm_small", "models to write")
	flag.Parse()
	if err := os.MkdirAll(*out, 0o755); err != nil {
		log.Fatal(err)
	}
	for _, m := range strings.Split(*models, ",") {
		var g *tfpb.GraphDef
		switch m {
		case "mlp":
			g = mlp()
		case "dlrm_small":
			g = dlrm(*rows)
		default:
			log.Fatalf("unknown model %q (mlp, dlrm_small)", m)
		}
		b, err := proto.Marshal(g)
		if err != nil {
			log.Fatal(err)
		}
		p := filepath.Join(*out, m+".pb")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s: %d nodes, %.1f MB\n", p, len(g.Node), float64(len(b))/1e6)
	}
}
