package exec

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"mstream/graph"
	"mstream/kernels"
)

// closeProbe is an ExecTestClose kernel's record: its Compute waits for
// release (when set) and its Close counts, noting a Close under a Compute.
type closeProbe struct {
	started   chan struct{}
	release   chan struct{}
	computing atomic.Int32
	closed    atomic.Int32
	underRun  atomic.Bool
}

var (
	probesMu sync.Mutex
	probes   = map[string]*closeProbe{} // by node name
)

func init() {
	// ExecTestClose: ExecTestAdd as a kernels.Closer (closeProbe).
	kernels.Register(kernels.Def{Op: "ExecTestClose", Device: kernels.CPU, Factory: func(n *graph.Node) (kernels.Kernel, error) {
		c := float32(n.Attrs["c"].GetF())
		probesMu.Lock()
		pr := probes[n.Name]
		probesMu.Unlock()
		return kernels.WithClose(func(ctx *kernels.Context) error {
			pr.computing.Add(1)
			defer pr.computing.Add(-1)
			select {
			case pr.started <- struct{}{}:
			default:
			}
			if pr.release != nil {
				<-pr.release
			}
			return addScalars(ctx, c)
		}, closerFunc(func() error {
			if pr.computing.Load() != 0 {
				pr.underRun.Store(true)
			}
			pr.closed.Add(1)
			return nil
		})), nil
	}})
}

type closerFunc func() error

func (f closerFunc) Close() error { return f() }

// closingPlan is a plan of one ExecTestClose node named name, whose
// Compute blocks until release is closed when block is set.
func closingPlan(t *testing.T, name string, block bool) (*Plan, *closeProbe) {
	t.Helper()
	pr := &closeProbe{started: make(chan struct{}, 1)}
	if block {
		pr.release = make(chan struct{})
	}
	probesMu.Lock()
	probes[name] = pr
	probesMu.Unlock()
	p, err := Build(nil, nil, []graph.Output{out(node(name, "ExecTestClose", 1))}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p, pr
}

// waitClosed waits (a bounded time, not asserted) for the kernel's Close.
func waitClosed(pr *closeProbe) int32 {
	for i := 0; i < 2000 && pr.closed.Load() == 0; i++ {
		time.Sleep(time.Millisecond)
	}
	return pr.closed.Load()
}

// TestPlanCloseClosesKernels: Plan.Close closes each kernels.Closer once,
// never under a running step (the step that runs at Close keeps it open
// until it ends, also a cancelled one), and a Run after Close fails with ErrClosed, running
// nothing.
func TestPlanCloseClosesKernels(t *testing.T) {
	for _, tc := range []struct {
		name string
		// during: what runs when Close is called: nothing, a step
		// blocked in the kernel, or a cancelled step's kernel still
		// running after its Run returned.
		during string
	}{{"idle", ""}, {"running", "step"}, {"cancelled", "cancelled"}} {
		t.Run(tc.name, func(t *testing.T) {
			p, pr := closingPlan(t, "close_"+tc.name, tc.during != "")
			var wg sync.WaitGroup
			var runErr error
			switch tc.during {
			case "step":
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, _, runErr = p.Run(context.Background(), rt(t), nil, Options{})
				}()
				<-pr.started
			case "cancelled":
				ctx, cancel := context.WithCancel(context.Background())
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, _, runErr = p.Run(ctx, rt(t), nil, Options{})
				}()
				<-pr.started
				// The kernel may run on Run's own goroutine, so Run
				// need not have returned; either way it still runs.
				cancel()
			}
			p.Close()
			if tc.during != "" {
				if n := pr.closed.Load(); n != 0 {
					t.Fatalf("kernel closed %d times while a step ran it", n)
				}
				close(pr.release)
			}
			wg.Wait()
			if tc.during == "step" && runErr != nil {
				t.Fatalf("step running at Close: %v", runErr)
			}
			if n := waitClosed(pr); n != 1 {
				t.Fatalf("kernel closed %d times, want 1", n)
			}
			if pr.underRun.Load() {
				t.Fatal("kernel closed under a running Compute")
			}
			p.Close()
			if _, _, err := p.Run(context.Background(), rt(t), nil, Options{}); !errors.Is(err, ErrClosed) {
				t.Fatalf("Run after Close: %v, want ErrClosed", err)
			}
			if n := pr.closed.Load(); n != 1 {
				t.Fatalf("kernel closed %d times after a second Close and a Run, want 1", n)
			}
		})
	}
}

// TestPlanCloseHammer closes a plan while goroutines run it: the kernel is
// closed once, after every step that entered has left, and each Run
// either succeeds or fails with ErrClosed.
func TestPlanCloseHammer(t *testing.T) {
	p, pr := closingPlan(t, "close_hammer", false)
	r := rt(t)
	var wg sync.WaitGroup
	var bad atomic.Value
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				_, _, err := p.Run(context.Background(), r, nil, Options{})
				if errors.Is(err, ErrClosed) {
					return
				}
				if err != nil {
					bad.Store(err)
					return
				}
			}
		}()
	}
	<-pr.started
	time.Sleep(2 * time.Millisecond)
	p.Close()
	wg.Wait()
	if err := bad.Load(); err != nil {
		t.Fatal(err)
	}
	if n := pr.closed.Load(); n != 1 || pr.underRun.Load() {
		t.Fatalf("kernel closed %d times (under a Compute: %v), want once after the last step", n, pr.underRun.Load())
	}
}

// TestPlanWithoutClosersCountsNoSteps: a plan with no kernels.Closer
// writes nothing shared on a step (life stays 0 while one runs), and a
// Run after its Close still fails with ErrClosed.
func TestPlanWithoutClosersCountsNoSteps(t *testing.T) {
	p, err := Build(nil, nil, []graph.Output{out(node("plain", "ExecTestAdd", 1))}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.closers {
		t.Fatal("a plan of ExecTestAdd has a Closer")
	}
	if _, _, err := p.Run(context.Background(), rt(t), nil, Options{}); err != nil {
		t.Fatal(err)
	}
	if !p.enter() || p.life.Load() != 0 {
		t.Fatalf("a step entered on a plan without closers: life %d, want 0", p.life.Load())
	}
	p.exit()
	if p.life.Load() != 0 {
		t.Fatalf("life %d after a step left, want 0", p.life.Load())
	}
	p.Close()
	if _, _, err := p.Run(context.Background(), rt(t), nil, Options{}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Run after Close: %v, want ErrClosed", err)
	}
	c, _ := closingPlan(t, "with_closer", false)
	if !c.closers {
		t.Fatal("a plan of ExecTestClose has no Closer")
	}
}
