package exec

import (
	"context"
	"strings"
	"testing"

	"mstream/graph"
	"mstream/groups"
	"mstream/proto/tfpb"
	"mstream/tensor"
)

// gplan places a plan fetching out with feed fed, as a session with one
// GPU does.
func gplan(t *testing.T, fed *graph.Node, out *graph.Node) *Plan {
	t.Helper()
	var feeds []graph.Output
	if fed != nil {
		feeds = []graph.Output{{Node: fed}}
	}
	p, err := build(nil, feeds, []graph.Output{{Node: out}}, nil, Placement{GPUs: 1})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestGraphIneligible checks which plans a CUDA graph may replay: only
// those whose host work is the same on every run of a key.
func TestGraphIneligible(t *testing.T) {
	in := node("in", "Placeholder", 0)
	c := constNode("c")
	stateful := gnode("stateful", "ExecTestG", "", in, c)
	stateful.Def = &tfpb.OpDef{Name: "ExecTestG", IsStateful: true}
	str := node("str", "Placeholder", 0)
	str.OutTypes = []tensor.DType{tensor.String}
	onHostConst := gnode("hc", "ExecTestAdd", "", c)
	gpuA := gnode("a", "ExecTestG", "", in, c)
	for _, tc := range []struct {
		name string
		fed  *graph.Node
		out  *graph.Node
		why  string // "" eligible; else a part of the reason
	}{
		{"GPU chain, host input a constant", in, gnode("b", "ExecTestG", "", gpuA, c), ""},
		{"host node over constants feeds a host input", in, gnode("d", "ExecTestG", "", in, onHostConst), ""},
		{"host input reads the feed", in, gnode("e", "ExecTestG", "", in, in), "node 'e' (op ExecTestG) reads input 1 on the host"},
		{"host input reads a device value", in, gnode("f", "ExecTestG", "", in, gpuA), "node 'f' (op ExecTestG) reads input 1 on the host"},
		{"host node over a device value", in, gnode("h", "ExecTestAdd", "", gpuA), "node 'h' (op ExecTestAdd) runs on the host on input 0"},
		{"host node over a host node over the feed", in, gnode("k", "ExecTestG", "", gnode("j", "ExecTestAdd", "", in)), "node 'j' (op ExecTestAdd) runs on the host"},
		{"stateful op", in, stateful, "node 'stateful' (op ExecTestG) is stateful"},
		{"GPU kernel reading its values back", in, gnode("sync", "ExecTestSync", "", gpuA), "node 'sync' (op ExecTestSync) reads its device values on the host"},
		{"string feed", str, gnode("s", "ExecTestG", "", c, c), "is a string"},
	} {
		p := gplan(t, tc.fed, tc.out)
		if !p.OnGPU() {
			t.Fatalf("%s: plan has no GPU node", tc.name)
		}
		got := graphIneligible(p)
		switch {
		case tc.why == "" && got != "":
			t.Errorf("%s: ineligible (%s), want eligible", tc.name, got)
		case tc.why != "" && !strings.Contains(got, tc.why):
			t.Errorf("%s: reason %q, want one containing %q", tc.name, got, tc.why)
		}
	}
}

func TestGraphFeedKey(t *testing.T) {
	f := func(dt tensor.DType, dims ...int64) *tensor.Tensor { return tensor.New(dt, tensor.Shape(dims)) }
	keys := map[string]string{}
	for name, feeds := range map[string][]*tensor.Tensor{
		"f[2,3]":        {f(tensor.Float, 2, 3)},
		"f[3,2]":        {f(tensor.Float, 3, 2)},
		"f[6]":          {f(tensor.Float, 6)},
		"i[2,3]":        {f(tensor.Int32, 2, 3)},
		"f[]":           {f(tensor.Float)},
		"f[2,3] f[1]":   {f(tensor.Float, 2, 3), f(tensor.Float, 1)},
		"f[2] f[3,1]":   {f(tensor.Float, 2), f(tensor.Float, 3, 1)},
		"f[2,3,1]":      {f(tensor.Float, 2, 3, 1)},
		"f[0,3]":        {f(tensor.Float, 0, 3)},
		"f[200,300]":    {f(tensor.Float, 200, 300)},
		"f[200] f[300]": {f(tensor.Float, 200), f(tensor.Float, 300)},
	} {
		k := feedKey(feeds)
		if other, dup := keys[k]; dup {
			t.Errorf("feeds %s and %s share a key", name, other)
		}
		keys[k] = name
		if k2 := feedKey([]*tensor.Tensor{}); len(feeds) > 0 && k2 == k {
			t.Errorf("feeds %s key like no feeds", name)
		}
		again := make([]*tensor.Tensor, len(feeds))
		for i, x := range feeds {
			again[i] = tensor.New(x.DType, x.Shape.Clone())
		}
		if feedKey(again) != k {
			t.Errorf("feeds %s: equal feeds give different keys", name)
		}
	}
}

// TestGraphCacheAcquire walks the cache's decisions without a GPU:
// warm-up, capture, reuse of idle instances, the instance bound, failed
// keys, the key bound with least-recently-used eviction, and close.
func TestGraphCacheAcquire(t *testing.T) {
	in := node("in", "Placeholder", 0)
	p := gplan(t, in, gnode("b", "ExecTestG", "", gnode("a", "ExecTestG", "", in, constNode("c")), constNode("c2")))
	var logs []string
	gc := NewGraphCache(func(f string, a ...any) { logs = append(logs, f) })
	g1, g2 := &groups.Group{ID: 1}, &groups.Group{ID: 2}
	feeds := func(n int64) []*tensor.Tensor { return []*tensor.Tensor{tensor.New(tensor.Float, tensor.Shape{n, 4})} }
	// done finishes a capture the way run does.
	done := func(e *graphEntry, ok bool) *graphInst {
		gc.mu.Lock()
		defer gc.mu.Unlock()
		e.capturing--
		if !ok {
			e.bad = "failed"
			return nil
		}
		gi := &graphInst{busy: true}
		e.insts = append(e.insts, gi)
		return gi
	}
	release := func(gi *graphInst) { gc.mu.Lock(); gi.busy = false; gc.mu.Unlock() }

	for w := 0; w < graphWarmup; w++ {
		if gi, capt, _ := gc.acquire(p, g1, feeds(1)); gi != nil || capt {
			t.Fatalf("warm-up run %d: got an instance or a capture", w)
		}
	}
	_, capt, e := gc.acquire(p, g1, feeds(1))
	if !capt {
		t.Fatal("after warm-up: no capture")
	}
	// Concurrent runs of the key capture more instances, up to the bound;
	// past it they run the ordinary way.
	for k := 1; k < graphInstances; k++ {
		_, captK, eK := gc.acquire(p, g1, feeds(1))
		if !captK || eK != e {
			t.Fatalf("concurrent run %d: no capture of instance %d", k+1, k+1)
		}
	}
	if gi, captN, _ := gc.acquire(p, g1, feeds(1)); gi != nil || captN {
		t.Fatal("one concurrent run past the instance bound got an instance or a capture")
	}
	var insts []*graphInst
	for k := 0; k < graphInstances; k++ {
		insts = append(insts, done(e, true))
	}
	if gc.Stats().Live != graphInstances {
		t.Fatalf("live %d, want %d", gc.Stats().Live, graphInstances)
	}
	if gi, _, _ := gc.acquire(p, g1, feeds(1)); gi != nil {
		t.Fatal("every instance busy, yet one was handed out")
	}
	b := insts[graphInstances-1]
	release(b)
	if gi, _, _ := gc.acquire(p, g1, feeds(1)); gi != b {
		t.Fatal("the idle instance was not reused")
	}
	for _, x := range insts {
		release(x)
	}

	// Same shapes on another group: a key of its own.
	for i := 0; i <= graphWarmup; i++ {
		_, capt, e = gc.acquire(p, g2, feeds(1))
	}
	if !capt {
		t.Fatal("group 2: no capture after warm-up")
	}
	done(e, false)
	for i := 0; i < 3; i++ {
		if gi, capt, _ := gc.acquire(p, g2, feeds(1)); gi != nil || capt {
			t.Fatal("a failed key captured again or handed out an instance")
		}
	}

	// Key bound: new shapes on g1 evict the least recently used idle key;
	// the original key (shape 1) was used last before them, so it goes
	// when the bound is first passed.
	for n := int64(2); n < 2+graphKeysPerGroup; n++ {
		gc.acquire(p, g1, feeds(n))
	}
	gc.mu.Lock()
	nk := 0
	_, kept := gc.plans[p].keys[graphKey{g1, feedKey(feeds(1))}]
	for k := range gc.plans[p].keys {
		if k.g == g1 {
			nk++
		}
	}
	gc.mu.Unlock()
	if nk != graphKeysPerGroup || kept {
		t.Errorf("after %d new shapes: %d keys on the group (want %d), first key kept %v", graphKeysPerGroup, nk, graphKeysPerGroup, kept)
	}
	if gc.Stats().Live != 0 {
		t.Errorf("evicted instances still counted: live %d", gc.Stats().Live)
	}
	// With every key busy there is no room: the new shape runs normally.
	gc.mu.Lock()
	for k, e := range gc.plans[p].keys {
		if k.g == g1 {
			e.capturing = 1
		}
	}
	gc.mu.Unlock()
	if gi, capt, _ := gc.acquire(p, g1, feeds(99)); gi != nil || capt {
		t.Error("no idle key to evict, yet the new shape got a graph")
	}

	// An ineligible plan is logged once and never captured.
	q := gplan(t, in, gnode("e", "ExecTestG", "", in, in))
	for i := 0; i < 3; i++ {
		if gi, capt, _ := gc.acquire(q, g1, feeds(1)); gi != nil || capt {
			t.Fatal("ineligible plan captured")
		}
	}
	n := 0
	for _, l := range logs {
		if strings.Contains(l, "runs node by node") {
			n++
		}
	}
	if n != 1 || gc.Stats().Ineligible != 1 {
		t.Errorf("ineligible plan: %d log lines, %d ineligible plans; want 1, 1", n, gc.Stats().Ineligible)
	}

	if err := gc.Close(); err != nil {
		t.Fatal(err)
	}
	if gi, capt, _ := gc.acquire(p, g1, feeds(1)); gi != nil || capt {
		t.Error("closed cache handed out work")
	}
}

// TestGraphCacheCaptureFailure drives run through a capture that fails (a
// group without CUDA streams): the step is left to the ordinary path, the
// key is not captured again, and the failure is logged once per plan
// however many keys fail.
func TestGraphCacheCaptureFailure(t *testing.T) {
	in := node("in", "Placeholder", 0)
	p := gplan(t, in, gnode("b", "ExecTestG", "", in, constNode("c")))
	var logs []string
	gc := NewGraphCache(func(f string, a ...any) { logs = append(logs, f) })
	defer gc.Close()
	rt := &Runtime{Streams: true, Groups: []*groups.Group{{ID: 3}}}
	feeds := func(n int64) []*tensor.Tensor { return []*tensor.Tensor{tensor.New(tensor.Float, tensor.Shape{n, 4})} }
	for _, n := range []int64{1, 2} {
		for i := 0; i < 4; i++ {
			out, handled, err := gc.run(context.Background(), p, rt, feeds(n))
			if handled || out != nil || err != nil {
				t.Fatalf("shape %d run %d: handled %v, %v; want the ordinary path", n, i, handled, err)
			}
		}
	}
	st := gc.Stats()
	if st.Failures != 2 || st.Captures != 0 || st.Replays != 0 || st.Live != 0 || st.Fallbacks != 8 {
		t.Errorf("stats %+v: want 2 failures (one per key, never retried), 8 fallbacks, nothing else", st)
	}
	if len(logs) != 1 || !strings.Contains(logs[0], "cannot be captured") {
		t.Errorf("logs %q: want one line for the plan", logs)
	}
}
