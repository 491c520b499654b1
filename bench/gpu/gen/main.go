// Command gen writes the GPU benchmark's models as binary TF GraphDefs, with
// the shapes of the PyTorch peer (bench/gpu/peers_torch.py):
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
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"

	"google.golang.org/protobuf/proto"

	"mstream/bench/internal/gdb"
	"mstream/proto/tfpb"
)

const (
	seed      = 1
	tables    = 26
	embDim    = 64
	denseDLRM = 13
	denseMLP  = 512
)

const f32 = gdb.F32

func mlp() *tfpb.GraphDef {
	b := gdb.New(seed)
	x := b.Placeholder("dense", f32, -1, denseMLP)
	x = b.Dense("mlp", x, []int64{denseMLP, 1024, 1024, 512, 256, 1}, false)
	b.Unary("output", "Sigmoid", x)
	return b.G
}

func dlrm(rows int64) *tfpb.GraphDef {
	b := gdb.New(seed)
	i32 := gdb.I32
	dense := b.Placeholder("dense", f32, -1, denseDLRM)
	sparse := b.Placeholder("sparse", i32, -1, tables)
	bot := b.Dense("bottom", dense, []int64{denseDLRM, 512, 256, embDim}, true)
	b.Add("sparse/unpack", "Unpack", []string{sparse}, gdb.Attrs{"T": gdb.Type(i32), "num": gdb.Int(tables), "axis": gdb.Int(1)})
	axis0 := b.Int32s("embedding/axis", []int32{0})
	feats := []string{bot}
	for k := 0; k < tables; k++ {
		tab := b.Weights(fmt.Sprintf("embedding/table_%d", k), 0.1, 0, rows, embDim)
		ids := fmt.Sprintf("sparse/unpack:%d", k)
		if k == 0 {
			ids = "sparse/unpack"
		}
		feats = append(feats, b.Add(fmt.Sprintf("embedding/lookup_%d", k), "GatherV2", []string{tab, ids, axis0},
			gdb.Attrs{"Tparams": gdb.Type(f32), "Tindices": gdb.Type(i32), "Taxis": gdb.Type(i32), "batch_dims": gdb.Int(0)}))
	}
	n := int64(tables + 1)
	t := b.Add("interaction/stack", "Pack", feats, gdb.Attrs{"T": gdb.Type(f32), "N": gdb.Int(n), "axis": gdb.Int(1)})
	z := b.Add("interaction/dot", "BatchMatMulV2", []string{t, t}, gdb.Attrs{"T": gdb.Type(f32), "adj_x": gdb.Bool(false), "adj_y": gdb.Bool(true)})
	flat := b.Add("interaction/flat", "Reshape", []string{z, b.Int32s("interaction/flat/shape", []int32{-1, int32(n * n)}, 2)},
		gdb.Attrs{"T": gdb.Type(f32), "Tshape": gdb.Type(i32)})
	var tri []int32 // row-major strictly lower triangle, as torch.tril_indices(offset=-1)
	for i := int64(0); i < n; i++ {
		for j := int64(0); j < i; j++ {
			tri = append(tri, int32(i*n+j))
		}
	}
	pairs := b.Add("interaction/lower", "GatherV2", []string{flat, b.Int32s("interaction/lower/indices", tri, int64(len(tri))), b.Int32s("interaction/lower/axis", []int32{1})},
		gdb.Attrs{"Tparams": gdb.Type(f32), "Tindices": gdb.Type(i32), "Taxis": gdb.Type(i32), "batch_dims": gdb.Int(0)})
	cat := b.Add("interaction/concat", "ConcatV2", []string{bot, pairs, b.Int32s("interaction/concat/axis", []int32{1})},
		gdb.Attrs{"T": gdb.Type(f32), "N": gdb.Int(2), "Tidx": gdb.Type(i32)})
	top := b.Dense("top", cat, []int64{embDim + int64(len(tri)), 512, 256, 1}, false)
	b.Unary("output", "Sigmoid", top)
	return b.G
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
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(g)
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
