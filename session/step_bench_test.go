package session

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"mstream/graph"
	"mstream/proto/tfpb"
	"mstream/tensor"
)

// The executor's per-node cost through a whole session on the CPU, the
// graphs of bench/cpu/vs_tf.sh's chain_noopt, wide_noopt and while1000
// (1000 scalar AddV2s in a chain, 1000 independent ones run as a target's
// control inputs, a v1 while loop of 1000 iterations), with TF's graph
// optimizations off as there. bench/cpu/vs_tf.sh puts real TF beside the
// same graphs; these are for profiling:
//
//	go test ./session -run '^$' -bench 'Step' -cpuprofile cpu.out

// noOptConfig is vs_tf's cfg_noopt.pb: 2 intra- and inter-op threads,
// every graph rewrite off.
func noOptConfig() *tfpb.ConfigProto {
	return &tfpb.ConfigProto{
		IntraOpParallelismThreads: 2, InterOpParallelismThreads: 2,
		GraphOptions: &tfpb.GraphOptions{
			OptimizerOptions: &tfpb.OptimizerOptions{OptLevel: tfpb.OptimizerOptions_L0},
			RewriteOptions:   &tfpb.RewriterConfig{DisableMetaOptimizer: true},
		},
	}
}

func scalarGraph(b testing.TB, wide bool) (*graph.Graph, graph.Output, []graph.Output, []*graph.Node) {
	gb := newGB(b)
	x := gb.op("Placeholder", "x", map[string]any{"dtype": tensor.Float, "shape": tensor.PartialShape{Known: true}})
	y := x
	var ctrl []graph.Output
	for i := 0; i < 1000; i++ {
		c := gb.constant(fmt.Sprint("c", i), tensor.ScalarF32(float32(i)))
		if wide {
			ctrl = append(ctrl, gb.add(fmt.Sprint("add", i), x, c))
		} else {
			y = gb.add(fmt.Sprint("add", i), y, c)
		}
	}
	if !wide {
		return gb.g, x, []graph.Output{gb.op("Identity", "output", nil, y)}, nil
	}
	nb := gb.g.NewBuilder("NoOp", "output")
	for _, c := range ctrl {
		nb.AddControlInput(c.Node)
	}
	n, err := nb.Finish()
	if err != nil {
		b.Fatal(err)
	}
	return gb.g, x, nil, []*graph.Node{n}
}

func benchStep(b *testing.B, g *graph.Graph, feeds []Feed, fetches []graph.Output, targets []*graph.Node, perStep float64, unit string) {
	s, err := New(g, &Options{Config: noOptConfig(), Env: hostEnv(nil)})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if _, _, err := s.Run(nil, feeds, fetches, targets); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	cpu0 := cpuTime()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, _, err := s.Run(nil, feeds, fetches, targets); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	// On a loaded machine wall time mostly measures waiting for a core:
	// the process's CPU time (every thread's, GC included) says what a
	// step costs.
	b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N)/perStep/1000, "cpu-"+unit)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/perStep/1000, unit)
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func BenchmarkStepChain1000(b *testing.B) {
	g, x, fetches, _ := scalarGraph(b, false)
	benchStep(b, g, []Feed{{x, tensor.ScalarF32(1)}}, fetches, nil, 1000, "us/node")
}

func BenchmarkStepWide1000(b *testing.B) {
	g, x, _, targets := scalarGraph(b, true)
	benchStep(b, g, []Feed{{x, tensor.ScalarF32(1)}}, nil, targets, 1000, "us/node")
}

// BenchmarkStepWhile1000 runs test/controlflow's while_counter_par10 (made
// by TF: a counter and a float vector carried, parallel_iterations 10) for
// 1000 iterations.
func BenchmarkStepWhile1000(b *testing.B) {
	g, err := graph.ImportTextFile("../test/controlflow/while_counter_par10.pbtxt", &graph.ImportOptions{})
	if err != nil {
		b.Fatal(err)
	}
	out := func(name string) graph.Output { return graph.Output{Node: g.Lookup(name)} }
	xv := tensor.New(tensor.Float, tensor.Shape{3})
	feeds := []Feed{{out("x"), xv}, {out("n"), tensor.ScalarI32(1000)}}
	benchStep(b, g, feeds, []graph.Output{out("y_out")}, nil, 1000, "us/iter")
}

// BenchmarkStepModel runs bench/cpu/vs_tf.sh's models (build/vs_tf/models,
// written by its first run; skipped without them) at B 1 and 16 with
// intra_op = inter_op = 2 and TF's default optimizations, as vs_tf does,
// 1 and 2 concurrent callers. MS_BENCH_MODELS names others (space
// separated: "mlp dlrm_small cnn"), MS_BENCH_BATCHES other batch sizes
// ("256"); the process's MSTREAM_BLAS and
// MSTREAM_DNNL (scripts/venv.sh's) reach the session, so the kernels are
// those of vs_tf's runs:
//
//	. scripts/venv.sh; MS_BENCH_MODELS=cnn go test ./session -run '^$' \
//	  -bench 'StepModel/cnn/B16/T1' -cpuprofile cpu.out
func BenchmarkStepModel(b *testing.B) {
	models := []string{"model_test", "mlp"}
	if v := os.Getenv("MS_BENCH_MODELS"); v != "" {
		models = strings.Fields(v)
	}
	batches := []int64{1, 16}
	if v := os.Getenv("MS_BENCH_BATCHES"); v != "" {
		batches = nil
		for _, f := range strings.Fields(v) {
			n, err := strconv.ParseInt(f, 10, 64)
			if err != nil || n < 1 {
				b.Fatalf("MS_BENCH_BATCHES=%q: %q is not a batch size", v, f)
			}
			batches = append(batches, n)
		}
	}
	env := map[string]string{}
	for _, k := range []string{"MSTREAM_BLAS", "MSTREAM_DNNL"} {
		if v, ok := os.LookupEnv(k); ok {
			env[k] = v
		}
	}
	for _, name := range models {
		raw, err := os.ReadFile("../build/vs_tf/models/" + name + ".pb")
		if err != nil {
			b.Skip("no vs_tf models: run bench/cpu/vs_tf.sh once")
		}
		gd, err := graph.ParseGraphDef(raw)
		if err != nil {
			b.Fatal(err)
		}
		g := graph.New()
		if _, err := g.Import(gd, &graph.ImportOptions{}); err != nil {
			b.Fatal(err)
		}
		for _, batch := range batches {
			var feeds []Feed
			for _, n := range g.Nodes() {
				if n.Op != "Placeholder" {
					continue
				}
				ps := n.OutShapes[0]
				shape := tensor.Shape{batch}
				for _, d := range ps.Dims[1:] {
					shape = append(shape, d)
				}
				t := tensor.New(n.OutTypes[0], shape)
				switch n.OutTypes[0] {
				case tensor.Float:
					for i, v := 0, t.F32(); i < len(v); i++ {
						v[i] = float32(i%7) / 7
					}
				case tensor.Int32:
					for i, v := 0, t.I32(); i < len(v); i++ {
						v[i] = int32(i % 100)
					}
				case tensor.Int64:
					for i, v := 0, t.I64(); i < len(v); i++ {
						v[i] = int64(i % 100)
					}
				}
				feeds = append(feeds, Feed{n.Output(0), t})
			}
			fetches := []graph.Output{g.Lookup("output").Output(0)}
			for _, callers := range []int{1, 2} {
				b.Run(fmt.Sprintf("%s/B%d/T%d", name, batch, callers), func(b *testing.B) {
					cfg := &tfpb.ConfigProto{IntraOpParallelismThreads: 2, InterOpParallelismThreads: 2}
					s, err := New(g, &Options{Config: cfg, Env: hostEnv(env)})
					if err != nil {
						b.Fatal(err)
					}
					defer s.Close()
					if _, _, err := s.Run(nil, feeds, fetches, nil); err != nil {
						b.Fatal(err)
					}
					cpu0 := cpuTime()
					b.ResetTimer()
					var wg sync.WaitGroup
					for c := 0; c < callers; c++ {
						wg.Add(1)
						go func() {
							defer wg.Done()
							for i := 0; i < b.N; i++ {
								if _, _, err := s.Run(nil, feeds, fetches, nil); err != nil {
									b.Error(err)
									return
								}
							}
						}()
					}
					wg.Wait()
					b.StopTimer()
					runs := float64(b.N * callers)
					b.ReportMetric(runs/b.Elapsed().Seconds(), "QPS")
					b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/runs, "cpu-us/run")
				})
			}
		}
	}
}
