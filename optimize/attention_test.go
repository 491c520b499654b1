package optimize_test

import (
	"math/rand"
	"testing"

	"mstream/graph"
	"mstream/kernels/cpu/vec"
	"mstream/optimize"
	"mstream/optimize/fusiontest"
	"mstream/proto/tfpb"
	"mstream/session"
	"mstream/status"
	"mstream/tensor"
)

// headsAttention is the heads form of an attention core as the benchmark
// transformer (bench/internal/models) writes it, over placeholders q, k
// and v [B, S, H, D] of unknown sizes: each Transpose'd by perm (the
// merge by mergePerm), BatchMatMulV2(q, k, adj_y), a Mul by scale (none
// when 0), Softmax, BatchMatMulV2(p, v), the merge Transpose "out".
func headsAttention(t *testing.T, scale float32, mergePerm []int32) *graph.Graph {
	b := &gb{t: t, g: graph.New(), r: rand.New(rand.NewSource(3))}
	perm := func(name string, p []int32) graph.Output {
		return b.op("Const", name, map[string]*tfpb.AttrValue{"dtype": graph.AttrType(tensor.Int32), "value": graph.AttrTensor(int32s(p...))})
	}
	var heads [3]graph.Output
	for i, name := range []string{"q", "k", "v"} {
		heads[i] = b.op("Transpose", name+"/heads", nil, b.placeholder(name, -1, -1, -1, -1), perm(name+"/perm", []int32{0, 2, 1, 3}))
	}
	s := b.op("BatchMatMulV2", "scores", map[string]*tfpb.AttrValue{"adj_y": graph.AttrBool(true)}, heads[0], heads[1])
	if scale != 0 {
		s = b.op("Mul", "scale", nil, s, b.scalar("scale/y", scale))
	}
	p := b.op("Softmax", "softmax", nil, s)
	c := b.op("BatchMatMulV2", "context", nil, p, heads[2])
	b.op("Transpose", "out", nil, c, perm("merge/perm", mergePerm))
	return b.g
}

// projectedAttention is headsAttention with q, k and v projected from one
// placeholder x [-1, 8] as the benchmark transformer projects them (a
// Dense layer each: MatMul by a Const [8, 6], BiasAdd of a Const [6],
// Reshape to [-1, 5, 2, 3]); change edits the graph before it is built
// (names: <q|k|v>/w, /b, /mm, /bias, /split, x).
func projectedAttention(change func(b *gb, proj map[string]graph.Output)) func(t *testing.T) *graph.Graph {
	return func(t *testing.T) *graph.Graph {
		b := &gb{t: t, g: graph.New(), r: rand.New(rand.NewSource(3))}
		perm := func(name string, p []int32) graph.Output {
			return b.op("Const", name, map[string]*tfpb.AttrValue{"dtype": graph.AttrType(tensor.Int32), "value": graph.AttrTensor(int32s(p...))})
		}
		x := b.placeholder("x", -1, 8)
		proj := map[string]graph.Output{"x": x}
		for _, name := range []string{"q", "k", "v"} {
			mm := b.op("MatMul", name+"/mm", nil, x, b.weights(name+"/w", -1, 1, 8, 6))
			bias := b.op("BiasAdd", name+"/bias", nil, mm, b.weights(name+"/b", -1, 1, 6))
			proj[name] = bias
		}
		if change != nil {
			change(b, proj)
		}
		var heads [3]graph.Output
		for i, name := range []string{"q", "k", "v"} {
			split := b.op("Reshape", name+"/split", nil, proj[name], perm(name+"/split/shape", []int32{-1, 5, 2, 3}))
			heads[i] = b.op("Transpose", name+"/heads", nil, split, perm(name+"/perm", []int32{0, 2, 1, 3}))
		}
		s := b.op("BatchMatMulV2", "scores", map[string]*tfpb.AttrValue{"adj_y": graph.AttrBool(true)}, heads[0], heads[1])
		s = b.op("Mul", "scale", nil, s, b.scalar("scale/y", 0.4))
		p := b.op("Softmax", "softmax", nil, s)
		c := b.op("BatchMatMulV2", "context", nil, p, heads[2])
		b.op("Transpose", "out", nil, c, perm("merge/perm", []int32{0, 2, 1, 3}))
		return b.g
	}
}

// TestAttentionPacked: q, k and v projected from one input by constant
// weights of one shape become one _FusedMatMul of the weights side by
// side read by a packed _MstreamAttention (one fusion where there were
// four), exactly when every check holds; outputs agree with the
// unrewritten graph's either way. Each must-not-pack case keeps the
// attention fusion and the projections' own.
func TestAttentionPacked(t *testing.T) {
	other := func(name string) func(b *gb, proj map[string]graph.Output) {
		return func(b *gb, proj map[string]graph.Output) {
			x2 := b.op("Neg", "x2", nil, proj["x"])
			mm := b.op("MatMul", name+"/mm2", nil, x2, b.weights(name+"/w2", -1, 1, 8, 6))
			proj[name] = b.op("BiasAdd", name+"/bias2", nil, mm, b.weights(name+"/b2", -1, 1, 6))
		}
	}
	for _, c := range []struct {
		name    string
		change  func(b *gb, proj map[string]graph.Output)
		fetches []string // besides out
		packed  bool
	}{
		{name: "packed", packed: true},
		// K = 0: every projection is its bias; packing must not divide
		// the weights' element count by K.
		{name: "zero-size weights", packed: true, change: func(b *gb, proj map[string]graph.Output) {
			ints := func(name string, v ...int32) graph.Output {
				return b.op("Const", name, map[string]*tfpb.AttrValue{"dtype": graph.AttrType(tensor.Int32), "value": graph.AttrTensor(int32s(v...))})
			}
			x0 := b.op("Slice", "x0", nil, proj["x"], ints("x0/begin", 0, 0), ints("x0/size", -1, 0))
			for _, name := range []string{"q", "k", "v"} {
				mm := b.op("MatMul", name+"/mm0", nil, x0, b.weights(name+"/w0", -1, 1, 0, 6))
				proj[name] = b.op("BiasAdd", name+"/bias0", nil, mm, b.weights(name+"/b0", -1, 1, 6))
			}
		}},
		{name: "key projected from another input", change: other("k")},
		{name: "value fetched", fetches: []string{"v/bias"}},
		{name: "query split fetched", fetches: []string{"q/split"}},
		{name: "key with an activation", change: func(b *gb, proj map[string]graph.Output) {
			proj["k"] = b.op("Relu", "k/relu", nil, proj["k"])
		}},
		{name: "value weights not a Const", change: func(b *gb, proj map[string]graph.Output) {
			mm := b.op("MatMul", "v/mm4", nil, proj["x"], b.op("Neg", "v/w4", nil, b.weights("v/w4/x", -1, 1, 8, 6)))
			proj["v"] = b.op("BiasAdd", "v/bias4", nil, mm, b.weights("v/b4", -1, 1, 6))
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := projectedAttention(c.change)(t)
			feeds := map[string]*tensor.Tensor{"x": fusiontest.Random(rand.New(rand.NewSource(5)), tensor.Float, tensor.Shape{3 * 5, 8})}
			fetches := append([]string{"out"}, c.fetches...)
			var res optimize.Result
			func() {
				g.RLock()
				defer g.RUnlock()
				res = optimize.Rewrite(outputs(t, g, "x"), outputs(t, g, fetches...), nil, optimize.Options{Devices: []string{"CPU"}, Passes: optimize.Remap})
			}()
			attn, gemms, wide := 0, 0, 0
			for _, m := range fusedOps(res) {
				switch m.Op {
				case "_MstreamAttention":
					attn++
					if m.Attrs["packed"].GetB() != c.packed {
						t.Errorf("packed %v, want %v", m.Attrs["packed"].GetB(), c.packed)
					}
				case "_FusedMatMul":
					gemms++
					if m.OutShapes[0].Known && len(m.OutShapes[0].Dims) == 2 && m.OutShapes[0].Dims[1] == 18 {
						wide++
					}
				}
			}
			if want := map[bool]int{true: 1}[c.packed]; attn != 1 || wide != want {
				t.Fatalf("%d _MstreamAttention, %d _FusedMatMul of q, k and v side by side; want 1 and %d", attn, wide, want)
			}
			if c.packed && (gemms != 1 || res.Fused != 1) {
				t.Errorf("%d _FusedMatMul, %d fusions; want the one merged", gemms, res.Fused)
			}
			if n := fusiontest.Compare(t, g, feeds, fetches, 1e-5); n == 0 {
				t.Error("the session's plan has no fusion")
			}
		})
	}
}

// TestAttentionPackedCPUOnly: where a device the plan may use has no
// _MstreamAttention kernel (testDevice has _FusedMatMul alone), q, k and
// v keep their own _FusedMatMul.
func TestAttentionPackedCPUOnly(t *testing.T) {
	g := projectedAttention(nil)(t)
	g.RLock()
	res := optimize.Rewrite(outputs(t, g, "x"), outputs(t, g, "out"), nil, optimize.Options{Devices: []string{"CPU", testDevice}, Passes: optimize.Remap})
	g.RUnlock()
	ops := map[string]int{}
	for _, m := range fusedOps(res) {
		ops[m.Op]++
	}
	if ops["_FusedMatMul"] != 3 || ops["_MstreamAttention"] != 0 || res.Fused != 3 {
		t.Errorf("%d _FusedMatMul, %d _MstreamAttention, %d fusions; want 3, 0, 3", ops["_FusedMatMul"], ops["_MstreamAttention"], res.Fused)
	}
}

// TestAttention: the attention core, in the heads form (Transposes and
// BatchMatMulV2) and in Keras' MultiHeadAttention as TF 2.15 exports it
// (testdata/attention_keras.pbtxt, attention_gen.py), becomes one
// _MstreamAttention exactly when every check holds, and the outputs agree
// with the unrewritten graph's either way, errors included. Each
// must-not-fire case breaks one thing the fusion relies on while the
// graph still runs.
func TestAttention(t *testing.T) {
	swap := []int32{0, 2, 1, 3}
	shapes := func(q, k, v tensor.Shape) map[string]tensor.Shape {
		return map[string]tensor.Shape{"q": q, "k": k, "v": v}
	}
	self := shapes(tensor.Shape{3, 5, 2, 4}, tensor.Shape{3, 5, 2, 4}, tensor.Shape{3, 5, 2, 4})
	keras := map[string]tensor.Shape{"x": {3, 5, 8}}
	for _, c := range []struct {
		name    string
		g       func(t *testing.T) *graph.Graph
		feeds   map[string]tensor.Shape
		fetches []string // besides the output
		fuse    bool
		packed  bool // q, k and v from one merged projection (packProjections)
	}{
		{name: "heads", g: func(t *testing.T) *graph.Graph { return headsAttention(t, 0.35, swap) }, feeds: self, fuse: true},
		{name: "heads, no scale", g: func(t *testing.T) *graph.Graph { return headsAttention(t, 0, swap) }, feeds: self, fuse: true},
		{name: "heads, cross attention", g: func(t *testing.T) *graph.Graph { return headsAttention(t, 0.5, swap) }, fuse: true,
			feeds: shapes(tensor.Shape{2, 3, 2, 4}, tensor.Shape{2, 7, 2, 4}, tensor.Shape{2, 7, 2, 6})},
		{name: "heads, key and value broadcast over the batch", g: func(t *testing.T) *graph.Graph { return headsAttention(t, 0.5, swap) }, fuse: true,
			feeds: shapes(tensor.Shape{3, 5, 2, 4}, tensor.Shape{1, 5, 2, 4}, tensor.Shape{1, 5, 1, 4})},
		{name: "heads, query broadcast over the batch", g: func(t *testing.T) *graph.Graph { return headsAttention(t, 0.5, swap) }, fuse: true,
			feeds: shapes(tensor.Shape{1, 5, 2, 4}, tensor.Shape{3, 5, 2, 4}, tensor.Shape{3, 5, 2, 4})},
		{name: "heads, one query", g: func(t *testing.T) *graph.Graph { return headsAttention(t, 0.5, swap) }, fuse: true,
			feeds: shapes(tensor.Shape{2, 1, 2, 4}, tensor.Shape{2, 5, 2, 4}, tensor.Shape{2, 5, 2, 4})},
		{name: "heads, depth 0", g: func(t *testing.T) *graph.Graph { return headsAttention(t, 0.5, swap) }, fuse: true,
			feeds: shapes(tensor.Shape{2, 3, 2, 0}, tensor.Shape{2, 5, 2, 0}, tensor.Shape{2, 5, 2, 4})},
		{name: "heads, depths disagree (both fail)", g: func(t *testing.T) *graph.Graph { return headsAttention(t, 0.5, swap) }, fuse: true,
			feeds: shapes(tensor.Shape{2, 5, 2, 4}, tensor.Shape{2, 5, 2, 3}, tensor.Shape{2, 5, 2, 4})},
		{name: "heads, batches disagree (both fail)", g: func(t *testing.T) *graph.Graph { return headsAttention(t, 0.5, swap) }, fuse: true,
			feeds: shapes(tensor.Shape{2, 5, 2, 4}, tensor.Shape{3, 5, 2, 4}, tensor.Shape{3, 5, 2, 4})},
		{name: "heads, merged by another perm", g: func(t *testing.T) *graph.Graph { return headsAttention(t, 0.5, []int32{0, 1, 3, 2}) }, feeds: self},
		{name: "heads, scores fetched", g: func(t *testing.T) *graph.Graph { return headsAttention(t, 0.5, swap) }, feeds: self, fetches: []string{"scores"}},
		{name: "heads, probabilities fetched", g: func(t *testing.T) *graph.Graph { return headsAttention(t, 0.5, swap) }, feeds: self, fetches: []string{"softmax"}},
		{name: "heads, query heads fetched", g: func(t *testing.T) *graph.Graph { return headsAttention(t, 0.5, swap) }, feeds: self, fetches: []string{"q/heads"}},
		{name: "keras", g: kerasAttention(nil), feeds: keras, fuse: true, packed: true},
		{name: "keras, key projection fetched", g: kerasAttention(nil), feeds: keras, fetches: []string{"model/multi_head_attention/key/add"}, fuse: true},
		{name: "keras, scaled query fetched", g: kerasAttention(nil), feeds: keras, fetches: []string{"model/multi_head_attention/Mul"}, fuse: true},
		{name: "keras, dropout fetched", g: kerasAttention(nil), feeds: keras, fetches: []string{"model/multi_head_attention/dropout/Identity"}},
		{name: "keras, context einsum of another layout", feeds: keras, g: kerasAttention(func(gd *tfpb.GraphDef) {
			nodeDef(t, gd, "einsum_1/Einsum").Attr["equation"] = graph.AttrString("acbe,aecd->abdc")
		})},
		// The first operand then plays the query: scores [a, c, e, b].
		{name: "keras, scores with the query first", feeds: keras, fuse: true, g: kerasAttention(func(gd *tfpb.GraphDef) {
			nodeDef(t, gd, "multi_head_attention/einsum/Einsum").Attr["equation"] = graph.AttrString("aecd,abcd->aceb")
		})},
		{name: "keras, scores of another layout (both fail)", feeds: keras, g: kerasAttention(func(gd *tfpb.GraphDef) {
			nodeDef(t, gd, "multi_head_attention/einsum/Einsum").Attr["equation"] = graph.AttrString("aecd,abcd->abce")
		})},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := c.g(t)
			r := rand.New(rand.NewSource(5))
			feeds := map[string]*tensor.Tensor{}
			var names []string
			for name, s := range c.feeds {
				feeds[name] = fusiontest.Random(r, tensor.Float, s)
				names = append(names, name)
			}
			out := "out"
			if _, ok := c.feeds["x"]; ok {
				out = "output"
			}
			fetches := append([]string{out}, c.fetches...)
			var res optimize.Result
			func() {
				g.RLock()
				defer g.RUnlock()
				res = optimize.Rewrite(outputs(t, g, names...), outputs(t, g, fetches...), nil, optimize.Options{Devices: []string{"CPU"}, Passes: optimize.Remap})
			}()
			n := 0
			for _, m := range fusedOps(res) {
				if m.Op == "_MstreamAttention" {
					n++
					if m.Attrs["packed"].GetB() != c.packed {
						t.Errorf("packed %v, want %v", m.Attrs["packed"].GetB(), c.packed)
					}
				}
			}
			if want := map[bool]int{true: 1}[c.fuse]; n != want {
				t.Fatalf("%d _MstreamAttention nodes, want %d", n, want)
			}
			fusiontest.Compare(t, g, feeds, fetches, 1e-5)
		})
	}
}

// kerasAttention loads testdata/attention_keras.pbtxt, changed by mutate.
func kerasAttention(mutate func(gd *tfpb.GraphDef)) func(t *testing.T) *graph.Graph {
	return func(t *testing.T) *graph.Graph {
		gd := loadLayerNorm(t, "attention_keras")
		if mutate != nil {
			mutate(gd)
		}
		g := graph.New()
		if _, err := g.Import(gd, nil); err != nil {
			t.Fatal(err)
		}
		return g
	}
}

// TestAttentionCPUOnly: _MstreamAttention has a CPU kernel only, so where
// a plan may place nodes on another device the graph is left as it is.
func TestAttentionCPUOnly(t *testing.T) {
	g := headsAttention(t, 0.5, []int32{0, 2, 1, 3})
	g.RLock()
	res := optimize.Rewrite(outputs(t, g, "q", "k", "v"), outputs(t, g, "out"), nil, optimize.Options{Devices: []string{"CPU", testDevice}, Passes: optimize.Remap})
	g.RUnlock()
	if res.Fused != 0 {
		t.Errorf("%d fusions with a device that has no _MstreamAttention kernel", res.Fused)
	}
}

// TestAttentionScratchLimit: the fused kernel's scratch lies outside the
// allocator, held to the host's limit as the unfused graph's scores
// tensor is. With 32 MiB, [1, 4096, 1, 1] inputs (64 MiB of scores) fail
// with RESOURCE_EXHAUSTED unfused, and fused where the kernel holds every
// score (below AVX-512); with AVX-512 it holds k transposed and one block
// of rows' scores (vec.Attention) and runs. Smaller inputs run either way.
func TestAttentionScratchLimit(t *testing.T) {
	g := headsAttention(t, 0.5, []int32{0, 2, 1, 3})
	out, _ := fusiontest.Output(g, "out")
	best := vec.SetLevel(vec.AVX512)
	defer vec.SetLevel(best)
	for _, level := range []vec.Level{vec.AVX2, best} {
		vec.SetLevel(level)
		for _, seq := range []int64{4096, 512} {
			r := rand.New(rand.NewSource(1))
			var fs []session.Feed
			for _, n := range []string{"q", "k", "v"} {
				o, _ := fusiontest.Output(g, n)
				fs = append(fs, session.Feed{Output: o, Tensor: fusiontest.Random(r, tensor.Float, tensor.Shape{1, seq, 1, 1})})
			}
			for _, fusion := range []string{"0", "1"} {
				s, err := session.New(g, &session.Options{Env: map[string]string{"MSTREAM_FUSION": fusion, "MSTREAM_HOST_MEMORY_MB": "32"}})
				if err != nil {
					t.Fatal(err)
				}
				_, _, err = s.Run(nil, fs, []graph.Output{out}, nil)
				s.Close()
				refuse := seq == 4096 && (fusion == "0" || vec.CurrentLevel() < vec.AVX512)
				if refuse != (status.CodeOf(err) == status.ResourceExhausted) || !refuse && err != nil {
					t.Errorf("%v, seq %d, MSTREAM_FUSION=%s: %v", vec.CurrentLevel(), seq, fusion, err)
				}
			}
		}
	}
}
