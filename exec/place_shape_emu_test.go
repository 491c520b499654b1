package exec

import (
	"context"
	"fmt"
	"math/rand"
	"sync"
	"testing"
	"time"

	"mstream/device"
	"mstream/graph"
	"mstream/kernels"
	"mstream/tensor"
)

// Test ops for host placement (place_shape.go), each with a host kernel
// and an asynchronous "GPU" one for the emulated device:
// ExecTestView forwards its input (kernels.Def.Forwards, as Reshape on the
// GPU); ExecTestHostRead sums its input and, on the device, waits for its
// stream first (SyncsHost, as Unique); ExecTestI32 is an int32 sum.
var syncReads sync.Map // ExecTestHostRead node name -> address of the bytes its host kernel read

func init() {
	view := func(n *graph.Node) (kernels.Kernel, error) {
		return kernels.KernelFunc(func(ctx *kernels.Context) error {
			in := ctx.Inputs[0]
			ctx.Outputs[0] = &tensor.Tensor{DType: in.DType, Shape: in.Shape, Buf: in.Buf}
			return nil
		}), nil
	}
	kernels.Register(kernels.Def{Op: "ExecTestView", Device: kernels.CPU, Factory: view})
	kernels.Register(kernels.Def{Op: "ExecTestView", Device: kernels.GPU, Forwards: true, Factory: view})
	sum := func(ctx *kernels.Context) float32 {
		var s float32
		for _, in := range ctx.Inputs {
			s += in.F32()[0]
		}
		return s
	}
	kernels.Register(kernels.Def{Op: "ExecTestHostRead", Device: kernels.CPU, Factory: func(n *graph.Node) (kernels.Kernel, error) {
		return kernels.KernelFunc(func(ctx *kernels.Context) error {
			syncReads.Store(n.Name, &ctx.Inputs[0].Buf[0])
			t, err := ctx.Allocate(0, nil)
			if err == nil {
				t.F32()[0] = sum(ctx)
			}
			return err
		}), nil
	}})
	kernels.Register(kernels.Def{Op: "ExecTestHostRead", Device: kernels.GPU, SyncsHost: true, Factory: func(n *graph.Node) (kernels.Kernel, error) {
		return kernels.KernelFunc(func(ctx *kernels.Context) error {
			if err := ctx.Stream.Synchronize(); err != nil {
				return err
			}
			t, err := ctx.Allocate(0, nil)
			if err == nil {
				v := sum(ctx)
				out := t.F32() // at launch, as ExecTestGAdd
				err = device.Enqueue(ctx.Stream, func() { out[0] = v })
			}
			return err
		}), nil
	}})
	i32 := func(async bool) kernels.Factory {
		return func(n *graph.Node) (kernels.Kernel, error) {
			return kernels.KernelFunc(func(ctx *kernels.Context) error {
				t, err := ctx.Allocate(0, nil)
				if err != nil {
					return err
				}
				ins := make([][]float32, len(ctx.Inputs)) // at launch, as ExecTestGAdd
				for j, in := range ctx.Inputs {
					ins[j] = in.F32()
				}
				out := t.I32()
				work := func() {
					var s int32
					for _, in := range ins {
						s += int32(in[0])
					}
					out[0] = s
				}
				if !async {
					work()
					return nil
				}
				return device.Enqueue(ctx.Stream, work)
			}), nil
		}
	}
	kernels.Register(kernels.Def{Op: "ExecTestI32", Device: kernels.CPU, Factory: i32(false)})
	kernels.Register(kernels.Def{Op: "ExecTestI32", Device: kernels.GPU, Factory: i32(true)})
}

// TestHostPlacementEmulated: on a placed plan, int32 arithmetic over
// host values and a host-syncing kernel over a host-held value (a feed
// forwarded by a GPU kernel) run on the host, their device twins over
// device values stay on the GPU, and HostSyncs lists only the one point
// left (the syncing kernel over a device value). On the emulated device,
// one group and two, under jitter, every value is right and the host
// kernel reads the feed's own bytes through the forward: nothing was
// copied back.
func TestHostPlacementEmulated(t *testing.T) {
	x := node("x", "Placeholder", 0)
	k := constNode("k")
	v := node("v", "ExecTestView", 0, x)
	s := node("s", "ExecTestHostRead", 0, v)
	g := node("g", "ExecTestGAdd", 1, x)
	s2 := node("s2", "ExecTestHostRead", 0, g)
	i := node("i", "ExecTestI32", 0, k)
	i2 := node("i2", "ExecTestI32", 0, g)
	i.OutTypes, i2.OutTypes = []tensor.DType{tensor.Int32}, []tensor.DType{tensor.Int32}
	fetches := []graph.Output{{Node: s}, {Node: s2}, {Node: i}, {Node: i2}}
	p, err := build(nil, []graph.Output{{Node: x}}, fetches, nil, Placement{GPUs: 1})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"k": "Const", "v": "GPU", "s": "CPU", "g": "GPU", "s2": "GPU", "i": "CPU", "i2": "GPU"}
	if got := placed(t, p); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("placement %v, want %v", got, want)
	}
	if got := p.HostSyncs(); len(got) != 1 || got[0] != "'s2' (op ExecTestHostRead) reads its device values back as it runs" {
		t.Errorf("HostSyncs %q, want only s2's", got)
	}
	r := rand.New(rand.NewSource(3))
	for _, groups := range []int{1, 2} {
		set := emuSet(t, groups, false, 100*time.Microsecond)
		sr := &Runtime{Streams: true, Groups: set.Groups(), ReduceWaits: true, Holder: &set.Holder, Intra: kernels.Serial{}}
		if groups > 1 {
			sr.Assign = make([]int, len(p.nodes))
			for j := range sr.Assign {
				sr.Assign[j] = r.Intn(groups)
			}
		}
		for step := 0; step < 5; step++ {
			xv := float32(r.Intn(100))
			feed := tensor.ScalarF32(xv)
			out, _, err := p.Run(context.Background(), sr, []*tensor.Tensor{feed}, Options{})
			if err != nil {
				t.Fatalf("%d groups, step %d: %v", groups, step, err)
			}
			got := fmt.Sprint(out[0].F32()[0], out[1].F32()[0], out[2].I32()[0], out[3].I32()[0])
			if w := fmt.Sprint(xv, xv+1, int32(2), int32(xv+1)); got != w {
				t.Errorf("%d groups, step %d: fetched %s, want %s", groups, step, got, w)
			}
			if a, _ := syncReads.Load("s"); a != &feed.Buf[0] {
				t.Errorf("%d groups, step %d: the host kernel of s read a copy of the feed, not its bytes", groups, step)
			}
		}
		set.Holder.Drain()
		for _, gr := range set.Groups() {
			if n := gr.Alloc.Stats().BytesInUse; n != 0 {
				t.Errorf("%d groups: group %d: %d bytes still allocated after the steps", groups, gr.ID, n)
			}
		}
	}
}
