package cuda

import (
	"encoding/binary"
	"errors"
	"math"
	"math/rand"
	"testing"
	"time"
)

// TestGraphCaptureReplay captures pinned H2D, two kernels, a cuBLAS GEMM
// and a pinned D2H on a private stream, then replays the graph on another
// stream with fresh inputs written into the same pinned buffers: every
// replay must compute from the inputs of that replay.
func TestGraphCaptureReplay(t *testing.T) {
	_, c := gpu(t)
	if err := c.GraphsSupported(); err != nil {
		t.Skipf("driver without CUDA graphs: %v", err)
	}
	capS, err := c.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	defer capS.Close()
	run, err := c.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	const n = 1000
	const m, k, nn = 8, 16, 4
	in, _ := c.HostAlloc(4 * n)
	out, _ := c.HostAlloc(4 * n)
	ga, _ := c.HostAlloc(4 * m * k)
	gc, _ := c.HostAlloc(4 * m * nn)
	defer func() {
		for _, b := range [][]byte{in, out, ga, gc} {
			c.HostFree(b)
		}
	}()
	mem := c.Memory()
	a, _ := mem.Alloc(4 * n)
	b, _ := mem.Alloc(4 * n)
	dA, _ := mem.Alloc(4 * m * k)
	dB, _ := mem.Alloc(4 * k * nn)
	dC, _ := mem.Alloc(4 * m * nn)
	defer func() {
		for _, p := range []uint64{a, b, dA, dB, dC} {
			mem.Free(p)
		}
	}()
	r := rand.New(rand.NewSource(time.Now().UnixNano()))
	B := randF(r, k*nn)
	bB := make([]byte, 4*len(B))
	for i, x := range B {
		binary.LittleEndian.PutUint32(bB[4*i:], math.Float32bits(float32(x)))
	}
	if err := run.H2D(dB, bB); err != nil { // a weight, uploaded once
		t.Fatal(err)
	}
	if err := run.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := capS.PrepareCapture(); err != nil {
		t.Fatal(err)
	}
	fill, add := fn(t, c, "fill_u32"), fn(t, c, "add_one")
	if err := capS.BeginCapture(); err != nil {
		t.Fatal(err)
	}
	if on, err := capS.Capturing(); err != nil || !on {
		t.Errorf("Capturing() = %v, %v during a capture", on, err)
	}
	steps := []error{
		capS.H2D(a, in),
		capS.Launch(add, D1(4), D1(256), 0, new(Args).Ptr(b).Ptr(a).I64(n)),
		capS.Launch(add, D1(4), D1(256), 0, new(Args).Ptr(b).Ptr(b).I64(n)),
		capS.D2H(out, b),
		capS.H2D(dA, ga),
		capS.Gemm(GemmArgs{M: m, N: nn, K: k, A: dA, B: dB, C: dC}),
		capS.D2H(gc, dC),
	}
	for i, e := range steps {
		if e != nil {
			t.Fatalf("captured call %d: %v", i, e)
		}
	}
	g, err := capS.EndCapture()
	if err != nil {
		t.Fatal(err)
	}
	ex, err := g.Instantiate()
	if err != nil {
		t.Fatal(err)
	}
	g.Destroy()
	defer ex.Destroy()
	// The capture ran nothing: b still holds what fill writes now.
	if err := run.Launch(fill, D1(4), D1(256), 0, new(Args).Ptr(b).I32(7).I64(n)); err != nil {
		t.Fatal(err)
	}
	for rep := 0; rep < 3; rep++ {
		base := uint32(r.Intn(1 << 20))
		for i := 0; i < n; i++ {
			binary.LittleEndian.PutUint32(in[4*i:], base+uint32(i))
		}
		A := randF(r, m*k)
		for i, x := range A {
			binary.LittleEndian.PutUint32(ga[4*i:], math.Float32bits(float32(x)))
		}
		if err := ex.Launch(run); err != nil {
			t.Fatal(err)
		}
		if err := run.Sync(); err != nil {
			t.Fatal(err)
		}
		for i, v := range u32s(out) {
			if v != base+uint32(i)+2 {
				t.Fatalf("replay %d: out[%d] = %d, want %d", rep, i, v, base+uint32(i)+2)
			}
		}
		for i := 0; i < m; i++ {
			for j := 0; j < nn; j++ {
				var acc float64
				for p := 0; p < k; p++ {
					acc += float64(float32(A[i*k+p])) * float64(float32(B[p*nn+j]))
				}
				got := float64(math.Float32frombits(binary.LittleEndian.Uint32(gc[4*(i*nn+j):])))
				if math.Abs(got-acc) > 1e-4*(1+math.Abs(acc)) {
					t.Fatalf("replay %d: C[%d,%d] = %g, want %g", rep, i, j, got, acc)
				}
			}
		}
	}
}

// TestGraphCaptureRefuses checks that a capturing stream refuses what a
// graph cannot hold (pageable copies, host functions, a sync), that
// EndCapture then fails, and that the stream captures cleanly afterwards.
func TestGraphCaptureRefuses(t *testing.T) {
	_, c := gpu(t)
	if err := c.GraphsSupported(); err != nil {
		t.Skipf("driver without CUDA graphs: %v", err)
	}
	s, err := c.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	mem := c.Memory()
	a, _ := mem.Alloc(64)
	defer mem.Free(a)
	for _, tc := range []struct {
		name string
		do   func() error
	}{
		{"pageable H2D", func() error { return s.H2D(a, make([]byte, 64)) }},
		{"pageable D2H", func() error { return s.D2H(make([]byte, 64), a) }},
		{"sync", func() error { return s.Sync() }},
		{"host function", func() error { return s.Enqueue(func() {}) }},
	} {
		if err := s.BeginCapture(); err != nil {
			t.Fatal(err)
		}
		if err := tc.do(); !errors.Is(err, ErrNotCapturable) {
			t.Errorf("%s during capture: %v, want ErrNotCapturable", tc.name, err)
		}
		if g, err := s.EndCapture(); err == nil {
			g.Destroy()
			if tc.name == "host function" {
				t.Errorf("%s: EndCapture succeeded after a refused call", tc.name)
			}
		}
	}
	if err := s.BeginCapture(); err != nil {
		t.Fatal(err)
	}
	if err := s.Memset(a, 1, 64); err != nil {
		t.Fatal(err)
	}
	g, err := s.EndCapture()
	if err != nil {
		t.Fatalf("clean capture after refusals: %v", err)
	}
	g.Destroy()
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
}
