package dataset_test

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"mstream/graph"
	"mstream/proto/tfpb"
	"mstream/session"
	"mstream/status"
	"mstream/tensor"
)

func build(t *testing.T, g *graph.Graph, op, name string, ins []graph.Output, attrs map[string]*tfpb.AttrValue) *graph.Node {
	t.Helper()
	b := g.NewBuilder(op, name)
	for _, in := range ins {
		b.AddInput(in)
	}
	for k, v := range attrs {
		b.SetAttr(k, v)
	}
	n, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func constI64(t *testing.T, g *graph.Graph, name string, v int64) graph.Output {
	return build(t, g, "Const", name, nil, map[string]*tfpb.AttrValue{
		"dtype": {Value: &tfpb.AttrValue_Type{Type: tfpb.DataType(tensor.Int64)}},
		"value": {Value: &tfpb.AttrValue_Tensor{Tensor: tensor.ToProto(tensor.ScalarI64(v))}},
	}).Output(0)
}

// elemAttrs are output_types/output_shapes of a dataset of int64 scalars.
func elemAttrs() map[string]*tfpb.AttrValue {
	return map[string]*tfpb.AttrValue{
		"output_types":  {Value: &tfpb.AttrValue_List{List: &tfpb.AttrValue_ListValue{Type: []tfpb.DataType{tfpb.DataType(tensor.Int64)}}}},
		"output_shapes": {Value: &tfpb.AttrValue_List{List: &tfpb.AttrValue_ListValue{Shape: []*tfpb.TensorShapeProto{{}}}}},
	}
}

// TestConcurrentGetNext: goroutines running IteratorGetNext on one session
// at once share its iterator (range, shuffle, prefetch): every element is
// delivered exactly once, and every goroutine then sees OUT_OF_RANGE. A
// second MakeIterator starts the pass again. Run under -race.
func TestConcurrentGetNext(t *testing.T) {
	const n, workers = 2000, 8
	g := graph.New()
	rng := build(t, g, "RangeDataset", "range", []graph.Output{constI64(t, g, "start", 0), constI64(t, g, "stop", n), constI64(t, g, "step", 1)}, elemAttrs())
	shuf := build(t, g, "ShuffleDataset", "shuffle", []graph.Output{rng.Output(0), constI64(t, g, "buf", 64), constI64(t, g, "seed", 0), constI64(t, g, "seed2", 0)}, elemAttrs())
	pre := build(t, g, "PrefetchDataset", "prefetch", []graph.Output{shuf.Output(0), constI64(t, g, "depth", 4)}, elemAttrs())
	itAttrs := elemAttrs()
	itAttrs["shared_name"] = &tfpb.AttrValue{Value: &tfpb.AttrValue_S{S: []byte("")}}
	itAttrs["container"] = &tfpb.AttrValue{Value: &tfpb.AttrValue_S{S: []byte("")}}
	it := build(t, g, "IteratorV2", "it", nil, itAttrs)
	mk := build(t, g, "MakeIterator", "init", []graph.Output{pre.Output(0), it.Output(0)}, nil)
	next := build(t, g, "IteratorGetNext", "next", []graph.Output{it.Output(0)}, elemAttrs())
	s, err := session.New(g, &session.Options{Env: map[string]string{"MSTREAM_DEVICE": "cpu"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, _, err := s.Run(nil, nil, []graph.Output{next.Output(0)}, nil); status.CodeOf(err) != status.FailedPrecondition {
		t.Fatalf("GetNext before MakeIterator: %v", err)
	}
	for pass := 0; pass < 2; pass++ {
		if _, _, err := s.Run(nil, nil, nil, []*graph.Node{mk}); err != nil {
			t.Fatal(err)
		}
		seen := make([]int, n)
		var mu sync.Mutex
		var wg sync.WaitGroup
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					out, _, err := s.Run(nil, nil, []graph.Output{next.Output(0)}, nil)
					if status.CodeOf(err) == status.OutOfRange {
						return
					}
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					seen[out[0].I64()[0]]++
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		for v, c := range seen {
			if c != 1 {
				t.Fatalf("pass %d: element %d delivered %d times", pass, v, c)
			}
		}
	}
}

// TestCloseStopsPrefetch: closing a session whose iterator has a prefetch
// goroutine running ahead (AUTOTUNE buffer, an endless input) stops that
// goroutine: the session's resources close with it.
func TestCloseStopsPrefetch(t *testing.T) {
	g := graph.New()
	rng := build(t, g, "RangeDataset", "range", []graph.Output{constI64(t, g, "start", 0), constI64(t, g, "stop", 1<<62), constI64(t, g, "step", 1)}, elemAttrs())
	pre := build(t, g, "PrefetchDataset", "prefetch", []graph.Output{rng.Output(0), constI64(t, g, "depth", -1)}, elemAttrs())
	itAttrs := elemAttrs()
	itAttrs["shared_name"] = &tfpb.AttrValue{Value: &tfpb.AttrValue_S{S: []byte("")}}
	itAttrs["container"] = &tfpb.AttrValue{Value: &tfpb.AttrValue_S{S: []byte("")}}
	it := build(t, g, "IteratorV2", "it", nil, itAttrs)
	mk := build(t, g, "MakeIterator", "init", []graph.Output{pre.Output(0), it.Output(0)}, nil)
	next := build(t, g, "IteratorGetNext", "next", []graph.Output{it.Output(0)}, elemAttrs())
	s, err := session.New(g, &session.Options{Env: map[string]string{"MSTREAM_DEVICE": "cpu"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Run(nil, nil, nil, []*graph.Node{mk}); err != nil {
		t.Fatal(err)
	}
	for i := int64(0); i < 50; i++ {
		out, _, err := s.Run(nil, nil, []graph.Output{next.Output(0)}, nil)
		if err != nil || out[0].I64()[0] != i {
			t.Fatalf("element %d: %v %v", i, out, err)
		}
	}
	if !prefetching() {
		t.Fatal("no prefetch goroutine while the session is open")
	}
	s.Close()
	for i := 0; prefetching(); i++ {
		if i == 500 {
			t.Fatal("the prefetch goroutine outlived its session")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// prefetching says whether a prefetch goroutine is alive in the process.
func prefetching() bool {
	buf := make([]byte, 1<<20)
	return strings.Contains(string(buf[:runtime.Stack(buf, true)]), "dataset.(*prefetchIt).fill")
}

// TestWrappersPassThrough: the OptimizeDataset(V2) and ModelDataset that TF
// wraps a pipeline in change nothing it yields: a range read through them
// (and IteratorGetNextSync) gives what the bare range gives.
func TestWrappersPassThrough(t *testing.T) {
	g := graph.New()
	rng := build(t, g, "RangeDataset", "range", []graph.Output{constI64(t, g, "start", 3), constI64(t, g, "stop", 40), constI64(t, g, "step", 7)}, elemAttrs())
	strs := func(name string) graph.Output {
		return build(t, g, "Const", name, nil, map[string]*tfpb.AttrValue{
			"dtype": {Value: &tfpb.AttrValue_Type{Type: tfpb.DataType(tensor.String)}},
			"value": {Value: &tfpb.AttrValue_Tensor{Tensor: tensor.ToProto(tensor.New(tensor.String, tensor.Shape{0}))}},
		}).Output(0)
	}
	opt := build(t, g, "OptimizeDataset", "opt", []graph.Output{rng.Output(0), strs("o1")}, elemAttrs())
	opt2 := build(t, g, "OptimizeDatasetV2", "opt2", []graph.Output{opt.Output(0), strs("o2"), strs("o3"), strs("o4")}, elemAttrs())
	model := build(t, g, "ModelDataset", "model", []graph.Output{opt2.Output(0)}, elemAttrs())
	s, err := session.New(g, &session.Options{Env: map[string]string{"MSTREAM_DEVICE": "cpu"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	read := func(ds *graph.Node, sync bool) []int64 {
		itAttrs := elemAttrs()
		itAttrs["shared_name"] = &tfpb.AttrValue{Value: &tfpb.AttrValue_S{S: []byte("")}}
		itAttrs["container"] = &tfpb.AttrValue{Value: &tfpb.AttrValue_S{S: []byte("")}}
		it := build(t, g, "IteratorV2", ds.Name+"/it", nil, itAttrs)
		mk := build(t, g, "MakeIterator", ds.Name+"/init", []graph.Output{ds.Output(0), it.Output(0)}, nil)
		op := "IteratorGetNext"
		if sync {
			op = "IteratorGetNextSync"
		}
		next := build(t, g, op, ds.Name+"/next", []graph.Output{it.Output(0)}, elemAttrs())
		if _, _, err := s.Run(nil, nil, nil, []*graph.Node{mk}); err != nil {
			t.Fatal(err)
		}
		var got []int64
		for {
			out, _, err := s.Run(nil, nil, []graph.Output{next.Output(0)}, nil)
			if status.CodeOf(err) == status.OutOfRange {
				return got
			}
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, out[0].I64()[0])
		}
	}
	want, got := read(rng, false), read(model, true)
	if len(want) != 6 || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("through the wrappers %v, the range %v", got, want)
	}
}
