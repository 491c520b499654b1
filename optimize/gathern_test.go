package optimize_test

import (
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"mstream/graph"
	"mstream/optimize"
	"mstream/optimize/fusiontest"
	"mstream/proto/tfpb"
	"mstream/session"
	"mstream/status"
	"mstream/tensor"
)

// lookup is one embedding lookup of gatherGraph, and what a case changes
// in it.
type lookup struct {
	axis      int64        // the axis Const (0 for a lookup)
	batchDims int64        // the batch_dims attr
	params    tensor.DType // the table's dtype (float32 when 0)
	int64Ids  bool         // indices cast to int64
	int16Ids  bool         // indices cast to int16
	device    string       // requested device
	chained   bool         // ids are the previous lookup's output (an int32 table)
	early     bool         // read at once by an Identity made before the next lookup
}

// gatherGraph builds DLRM's sparse half as bench/gpu/gen writes it, with
// the lookups' Consts interleaved: sparse [B, len(ls)] int32 -> Unpack
// along axis 1 -> a GatherV2 per table [rows, 8] -> an Identity per
// lookup (fetched), then a float32 Pack of the float32 lookups ->
// BatchMatMul with itself -> Reshape -> the interaction's GatherV2 along
// axis 1, which is no lookup.
func gatherGraph(t *testing.T, ls []lookup) (*gb, []string) {
	b := &gb{t: t, g: graph.New(), r: rand.New(rand.NewSource(7))}
	k := int64(len(ls))
	sparse := b.op("Placeholder", "sparse", map[string]*tfpb.AttrValue{"dtype": graph.AttrType(tensor.Int32),
		"shape": graph.AttrShape(tensor.KnownShape(tensor.Shape{-1, k}))})
	unpack := b.op("Unpack", "sparse/unpack", map[string]*tfpb.AttrValue{"num": graph.AttrInt(k), "axis": graph.AttrInt(1)}, sparse).Node
	i32 := func(name string, v ...int32) graph.Output {
		return b.op("Const", name, map[string]*tfpb.AttrValue{"dtype": graph.AttrType(tensor.Int32), "value": graph.AttrTensor(int32s(v...))})
	}
	scalar := func(name string, v int64) graph.Output {
		return b.op("Const", name, map[string]*tfpb.AttrValue{"dtype": graph.AttrType(tensor.Int32), "value": graph.AttrTensor(tensor.ScalarI32(int32(v)))})
	}
	var fetches []string
	var floats []graph.Output
	var prev graph.Output
	for i, l := range ls {
		dt := l.params
		if dt == 0 {
			dt = tensor.Float
		}
		if l.chained {
			dt = tensor.Int32
		}
		tab := fusiontest.Random(b.r, dt, tensor.Shape{3, 8})
		if dt == tensor.Int32 || l.chained {
			tab = tensor.New(tensor.Int32, tensor.Shape{3})
			copy(tab.I32(), []int32{2, 0, 1})
		}
		table := b.op("Const", fmt.Sprintf("embedding/table_%d", i), map[string]*tfpb.AttrValue{"dtype": graph.AttrType(dt), "value": graph.AttrTensor(tab)})
		ids := unpack.Output(i)
		if l.chained {
			ids = prev
		}
		if l.int64Ids {
			ids = b.op("Cast", fmt.Sprintf("sparse/cast_%d", i), map[string]*tfpb.AttrValue{"DstT": graph.AttrType(tensor.Int64)}, ids)
		}
		if l.int16Ids {
			ids = b.op("Cast", fmt.Sprintf("sparse/cast_%d", i), map[string]*tfpb.AttrValue{"DstT": graph.AttrType(tensor.Int16)}, ids)
		}
		nb := b.g.NewBuilder("GatherV2", fmt.Sprintf("embedding/lookup_%d", i))
		nb.AddInput(table)
		nb.AddInput(ids)
		nb.AddInput(scalar(fmt.Sprintf("embedding/axis_%d", i), l.axis))
		nb.SetAttr("batch_dims", graph.AttrInt(l.batchDims))
		nb.SetDevice(l.device)
		n, err := nb.Finish()
		if err != nil {
			t.Fatal(err)
		}
		prev = n.Output(0)
		if l.early {
			b.op("Identity", fmt.Sprintf("embedding/use_%d", i), nil, n.Output(0))
		}
		if dt == tensor.Float && l.axis == 0 {
			floats = append(floats, n.Output(0))
		}
	}
	for i := range ls {
		if !ls[i].early {
			b.op("Identity", fmt.Sprintf("embedding/use_%d", i), nil, b.g.Lookup(fmt.Sprintf("embedding/lookup_%d", i)).Output(0))
		}
		fetches = append(fetches, fmt.Sprintf("embedding/use_%d", i))
	}
	if len(floats) > 0 {
		nb := b.g.NewBuilder("Pack", "interaction/stack")
		nb.AddInputList(floats)
		nb.SetAttr("axis", graph.AttrInt(1))
		stack, err := nb.Finish()
		if err != nil {
			t.Fatal(err)
		}
		f := int32(len(floats))
		z := b.op("BatchMatMulV2", "interaction/dot", map[string]*tfpb.AttrValue{"adj_y": graph.AttrBool(true)}, stack.Output(0), stack.Output(0))
		flat := b.op("Reshape", "interaction/flat", nil, z, i32("interaction/flat/shape", -1, f*f))
		b.op("GatherV2", "interaction/lower", nil, flat, i32("interaction/lower/indices", 1, f, 2*f), scalar("interaction/lower/axis", 1))
		fetches = append(fetches, "interaction/lower")
	}
	return b, fetches
}

// gatherNs returns the N of every _MstreamGatherN among the rewritten
// nodes, sorted, and fails t if any GatherV2 it replaced is still there.
func gatherNs(t *testing.T, res optimize.Result) []int {
	var ns []int
	nodes := fusedOps(res)
	for _, n := range nodes {
		if n.Op == "_MstreamGatherN" {
			ns = append(ns, len(n.OutTypes))
			for _, from := range n.Attrs[optimize.FusedFromAttr].GetList().GetS() {
				if m := nodes[string(from)]; m != nil && m != n && m.Op == "GatherV2" {
					t.Errorf("%s is both merged and kept", from)
				}
			}
		}
	}
	slices.Sort(ns)
	return ns
}

// TestGatherN: sibling lookups become one _MstreamGatherN exactly when the
// merge keeps every output and the plan's order, and the outputs are
// bit-identical to the unrewritten graph's either way. Each must-not-fire
// case breaks one thing the merge relies on while the graph still runs.
func TestGatherN(t *testing.T) {
	many := func(k int, change func(i int, l *lookup)) []lookup {
		ls := make([]lookup, k)
		for i := range ls {
			if change != nil {
				change(i, &ls[i])
			}
		}
		return ls
	}
	for _, c := range []struct {
		name    string
		ls      []lookup
		fetched []string // lookups fetched by name besides the Identities
		group   func(n *graph.Node) (int, bool)
		want    []int // the N of each merge
	}{
		{name: "DLRM's 26 tables", ls: many(26, nil), want: []int{26}},
		{name: "two tables", ls: many(2, nil), want: []int{2}},
		{name: "one table", ls: many(1, nil)},
		{name: "int64 ids", ls: many(5, func(i int, l *lookup) { l.int64Ids = true }), want: []int{5}},
		// TF's GatherV2 takes int16 indices too; _MstreamGatherN does not.
		{name: "int16 ids", ls: many(5, func(i int, l *lookup) { l.int16Ids = true })},
		{name: "some int16 ids", ls: many(6, func(i int, l *lookup) { l.int16Ids = i%2 == 0 }), want: []int{3}},
		{name: "an axis 1", ls: many(6, func(i int, l *lookup) {
			if i == 2 {
				l.axis, l.params = 1, tensor.Double // [3, 8] along 1 by ids in [0, 3)
			}
		}), want: []int{5}},
		{name: "a batch_dims -1", ls: many(6, func(i int, l *lookup) {
			if i == 4 {
				l.batchDims = -1 // 0 once normalised, but not written as 0
			}
		}), want: []int{5}},
		{name: "params dtypes differ", ls: many(7, func(i int, l *lookup) {
			if i%3 == 0 {
				l.params = tensor.Double
			}
		}), want: []int{3, 4}},
		{name: "index dtypes differ", ls: many(6, func(i int, l *lookup) { l.int64Ids = i < 2 }), want: []int{2, 4}},
		{name: "devices differ", ls: many(6, func(i int, l *lookup) {
			if i >= 3 {
				l.device = "/device:CPU:0"
			}
		}), want: []int{3, 3}},
		{name: "a lookup fetched", ls: many(6, nil), fetched: []string{"embedding/lookup_3"}, want: []int{5}},
		{name: "two lookups fetched", ls: many(3, nil), fetched: []string{"embedding/lookup_0", "embedding/lookup_2"}},
		{name: "a lookup reads another", ls: many(2, func(i int, l *lookup) { l.params, l.chained = tensor.Int32, i == 1 })},
		{name: "a lookup read before the next one", ls: many(4, func(i int, l *lookup) { l.early = i == 1 }), want: []int{2, 2}},
		{name: "stream groups by name", ls: many(8, nil), group: func(n *graph.Node) (int, bool) {
			var i int
			fmt.Sscanf(n.Name, "embedding/lookup_%d", &i)
			return i % 2, true
		}, want: []int{4, 4}},
		{name: "a lookup no rule names", ls: many(5, nil), group: func(n *graph.Node) (int, bool) {
			return 1, !strings.HasSuffix(n.Name, "_0")
		}, want: []int{4}},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, fetches := gatherGraph(t, c.ls)
			fetches = append(fetches, c.fetched...)
			var res optimize.Result
			func() {
				b.g.RLock()
				defer b.g.RUnlock()
				res = optimize.Rewrite(outputs(t, b.g, "sparse"), outputs(t, b.g, fetches...), nil,
					optimize.Options{Devices: []string{"CPU"}, Passes: optimize.Remap, Group: c.group})
			}()
			if got := gatherNs(t, res); !slices.Equal(got, c.want) {
				t.Fatalf("merges of %v lookups, want %v", got, c.want)
			}
			r := rand.New(rand.NewSource(3))
			sparse := tensor.New(tensor.Int32, tensor.Shape{5, int64(len(c.ls))})
			for i := range sparse.I32() {
				sparse.I32()[i] = int32(r.Intn(3))
			}
			if c.group != nil {
				return // the sessions below set no rules
			}
			if n := fusiontest.Compare(t, b.g, map[string]*tensor.Tensor{"sparse": sparse}, fetches, 0); (n > 0) != (len(c.want) > 0) {
				t.Errorf("the session's plan has %d fusions, want %d merges", n, len(c.want))
			}
		})
	}
}

// TestGatherNError: an index out of range on the CPU fails as the GatherV2
// the user wrote does, naming that node, and the session runs again.
func TestGatherNError(t *testing.T) {
	b, fetches := gatherGraph(t, make([]lookup, 4))
	feed, _ := fusiontest.Output(b.g, "sparse")
	var outs []graph.Output
	for _, f := range fetches {
		o, _ := fusiontest.Output(b.g, f)
		outs = append(outs, o)
	}
	bad := tensor.New(tensor.Int32, tensor.Shape{2, 4})
	bad.I32()[6] = 7 // row 1, table 2
	good := tensor.New(tensor.Int32, tensor.Shape{2, 4})
	msgs := map[string]string{}
	for _, fusion := range []string{"1", "0"} {
		cfg := &tfpb.ConfigProto{}
		if fusion == "0" {
			cfg = fusiontest.NoRewrites()
		}
		s, err := session.New(b.g, &session.Options{Config: cfg, Env: map[string]string{"MSTREAM_FUSION": fusion}})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		_, _, err = s.Run(nil, []session.Feed{{Output: feed, Tensor: bad}}, outs, nil)
		if status.CodeOf(err) != status.InvalidArgument || !strings.Contains(err.Error(), "{{node embedding/lookup_2}}") ||
			!strings.Contains(err.Error(), "indices[1] = 7 is not in [0, 3)") {
			t.Errorf("MSTREAM_FUSION=%s: %v, want INVALID_ARGUMENT naming embedding/lookup_2 and indices[1] = 7", fusion, err)
		}
		msgs[fusion] = strings.SplitN(err.Error(), " (fused from", 2)[0]
		// The trace names the ops the plan ran: the merged one, or not.
		_, md, err := s.Run(&tfpb.RunOptions{TraceLevel: tfpb.RunOptions_FULL_TRACE}, []session.Feed{{Output: feed, Tensor: good}}, outs, nil)
		if err != nil {
			t.Errorf("MSTREAM_FUSION=%s: the Run after the failed one: %v", fusion, err)
		} else if merged := strings.Contains(md.String(), "_MstreamGatherN"); merged != (fusion == "1") {
			t.Errorf("MSTREAM_FUSION=%s: the plan ran _MstreamGatherN: %v", fusion, merged)
		}
	}
	if msgs["1"] != msgs["0"] {
		t.Errorf("merged: %q\nunmerged: %q", msgs["1"], msgs["0"])
	}
}

// TestGatherNCond: lookups in the two branches of a v1 cond are dead or
// alive apart, so they are not merged (the merged node would be dead with
// either branch), and the taken branch's value comes out either way.
func TestGatherNCond(t *testing.T) {
	b := &gb{t: t, g: graph.New(), r: rand.New(rand.NewSource(4))}
	ids := b.op("Placeholder", "ids", map[string]*tfpb.AttrValue{"dtype": graph.AttrType(tensor.Int32)})
	pred := b.op("Placeholder", "pred", map[string]*tfpb.AttrValue{"dtype": graph.AttrType(tensor.Bool)})
	sw := b.op("Switch", "cond/switch", nil, ids, pred).Node
	axis := b.op("Const", "axis", map[string]*tfpb.AttrValue{"dtype": graph.AttrType(tensor.Int32), "value": graph.AttrTensor(tensor.ScalarI32(0))})
	var branches []graph.Output
	for i := 0; i < 2; i++ {
		tab := b.weights(fmt.Sprintf("table_%d", i), -1, 1, 3, 4)
		branches = append(branches, b.op("GatherV2", fmt.Sprintf("cond/lookup_%d", i), nil, tab, sw.Output(i), axis))
	}
	nb := b.g.NewBuilder("Merge", "cond/merge")
	nb.AddInputList(branches)
	if _, err := nb.Finish(); err != nil {
		t.Fatal(err)
	}
	var res optimize.Result
	func() {
		b.g.RLock()
		defer b.g.RUnlock()
		res = optimize.Rewrite(outputs(t, b.g, "ids", "pred"), outputs(t, b.g, "cond/merge"), nil, optimize.Options{Devices: []string{"CPU"}, Passes: optimize.Remap})
	}()
	if got := gatherNs(t, res); len(got) != 0 {
		t.Fatalf("merges of %v lookups across a cond's branches", got)
	}
	for _, p := range []bool{false, true} {
		pv := tensor.New(tensor.Bool, tensor.Shape{})
		if p {
			pv.Buf[0] = 1
		}
		fusiontest.Compare(t, b.g, map[string]*tensor.Tensor{"ids": int32s(2, 0, 1, 2), "pred": pv}, []string{"cond/merge"}, 0)
	}
}

// TestGatherNInt16: lookups by int16 ids, which TF's GatherV2 takes
// (Tindices int16, int32, int64), run, merged or not, and give what the
// same lookups by int32 ids give.
func TestGatherNInt16(t *testing.T) {
	const k = 4
	r := rand.New(rand.NewSource(5))
	sparse := tensor.New(tensor.Int32, tensor.Shape{5, k})
	for i := range sparse.I32() {
		sparse.I32()[i] = int32(r.Intn(3))
	}
	run := func(ls []lookup, fusion string) []*tensor.Tensor {
		b, fetches := gatherGraph(t, ls)
		feed, err := fusiontest.Output(b.g, "sparse")
		if err != nil {
			t.Fatal(err)
		}
		var outs []graph.Output
		for _, f := range fetches {
			o, err := fusiontest.Output(b.g, f)
			if err != nil {
				t.Fatal(err)
			}
			outs = append(outs, o)
		}
		s, err := session.New(b.g, &session.Options{Env: map[string]string{"MSTREAM_FUSION": fusion}})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		got, _, err := s.Run(nil, []session.Feed{{Output: feed, Tensor: sparse}}, outs, nil)
		if err != nil {
			t.Fatalf("MSTREAM_FUSION=%s: %v", fusion, err)
		}
		return got
	}
	want := run(make([]lookup, k), "0")
	for _, fusion := range []string{"0", "1"} {
		for _, mixed := range []bool{false, true} {
			ls := make([]lookup, k)
			for i := range ls {
				ls[i].int16Ids = !mixed || i%2 == 0
			}
			for i, g := range run(ls, fusion) {
				if !slices.Equal(g.Buf, want[i].Buf) || !slices.Equal(g.Shape, want[i].Shape) {
					t.Errorf("MSTREAM_FUSION=%s, mixed %v: fetch %d is %v%v, want %v%v", fusion, mixed, i, g.DType, g.Shape, want[i].DType, want[i].Shape)
				}
			}
		}
	}
}
