package cuda

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"mstream/bfc"
	"mstream/device"
	"mstream/status"
)

// GPU tests: they skip when no GPU is usable, except under
// MSTREAM_DEVICE=gpu (the GPU machine's runs), where that is a failure.

func TestMain(m *testing.M) {
	// Two contexts on GPU 0, so the multi-context paths are exercised;
	// SetContexts must come before any stream exists.
	if lib, err := Load(); err == nil {
		devs, _ := lib.Devices()
		if err := devs[0].SetContexts(2); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	os.Exit(m.Run())
}

func gpu(t testing.TB) (*Device, *Context) {
	t.Helper()
	lib, err := Load()
	if err != nil {
		if errors.Is(err, ErrNoCUDA) && os.Getenv("MSTREAM_DEVICE") != "gpu" {
			t.Skipf("no GPU: %v", err)
		}
		t.Fatal(err)
	}
	devs, err := lib.Devices()
	if err != nil {
		t.Fatal(err)
	}
	c, err := devs[0].Primary()
	if err != nil {
		t.Fatal(err)
	}
	return devs[0], c
}

var testProg = &Program{Name: "device_test.cu", Source: `
extern "C" __global__ void ms_empty() {}

extern "C" __global__ void fill_u32(unsigned *p, unsigned v, long long n) {
	for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
		p[i] = v + (unsigned)i;
}

// slow_fill spins for about cycles clocks before writing, so that work
// queued behind it on another stream would overtake it without a wait.
extern "C" __global__ void slow_fill(unsigned *p, unsigned v, long long n, long long cycles) {
	long long t0 = clock64();
	while (clock64() - t0 < cycles) {}
	for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
		p[i] = v + (unsigned)i;
}

extern "C" __global__ void add_one(unsigned *dst, const unsigned *src, long long n) {
	for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
		dst[i] = src[i] + 1;
}

extern "C" __global__ void six_args(unsigned *p, long long a, long long b, float c, int d, double e) {
	if (threadIdx.x == 0 && blockIdx.x == 0) p[0] = (unsigned)(a + b + (long long)c + d + (long long)e);
}

extern "C" __global__ void write_bad(unsigned *p) { p[threadIdx.x] = 1; }

`}

func fn(t testing.TB, c *Context, name string) *Function {
	t.Helper()
	m, err := c.Module(testProg)
	if err != nil {
		t.Fatal(err)
	}
	f, err := m.Function(name)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func u32s(b []byte) []uint32 {
	v := make([]uint32, len(b)/4)
	for i := range v {
		v[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	return v
}

func TestDevicesAndContexts(t *testing.T) {
	d, c := gpu(t)
	if d.Arch() < 35 || d.Multiprocessors() < 1 || d.MemoryBytes() < 1<<30 {
		t.Errorf("implausible device: arch %d, %d SMs, %d bytes", d.Arch(), d.Multiprocessors(), d.MemoryBytes())
	}
	if d.Name() != "/job:localhost/replica:0/task:0/device:GPU:0" || d.Type() != "GPU" {
		t.Errorf("name %q type %q", d.Name(), d.Type())
	}
	free, total, err := c.MemInfo()
	if err != nil || free <= 0 || total < free {
		t.Errorf("MemInfo = %d, %d, %v", free, total, err)
	}
	if d.Contexts() != 2 {
		t.Fatalf("Contexts() = %d, want 2 (TestMain)", d.Contexts())
	}
	c1, err := d.Context(1)
	if err != nil {
		t.Fatal(err)
	}
	if c1 == c || c1.ID() != 1 {
		t.Errorf("context 1 is %v", c1)
	}
	if _, err := d.Context(2); status.CodeOf(err) != status.InvalidArgument {
		t.Errorf("Context(2) = %v, want INVALID_ARGUMENT", err)
	}
	if err := d.SetContexts(3); status.CodeOf(err) != status.FailedPrecondition {
		t.Errorf("SetContexts after use = %v, want FAILED_PRECONDITION", err)
	}
}

// TestCopyRoundTrip copies random bytes host->device->device->host through
// pageable and pinned memory, in both contexts.
func TestCopyRoundTrip(t *testing.T) {
	d, _ := gpu(t)
	r := rand.New(rand.NewSource(time.Now().UnixNano()))
	for ci := 0; ci < d.Contexts(); ci++ {
		c, err := d.Context(ci)
		if err != nil {
			t.Fatal(err)
		}
		s, err := c.NewStream()
		if err != nil {
			t.Fatal(err)
		}
		mem := c.Memory()
		for _, n := range []int{1, 7, 4096, 1<<20 + 3, 8 << 20} {
			for _, pinnedIO := range []bool{false, true} {
				src := make([]byte, n)
				r.Read(src)
				dst := make([]byte, n)
				if pinnedIO {
					ps, err := c.HostAlloc(n)
					if err != nil {
						t.Fatal(err)
					}
					pd, err := c.HostAlloc(n)
					if err != nil {
						t.Fatal(err)
					}
					copy(ps, src)
					for i := range pd {
						pd[i] = 0xa5
					}
					src, dst = ps, pd
					if !IsPinned(src) || !IsPinned(dst) {
						t.Fatal("HostAlloc memory not seen as pinned")
					}
				}
				want := append([]byte(nil), src...)
				a, err := mem.Alloc(uint64(n))
				if err != nil {
					t.Fatal(err)
				}
				b, err := mem.Alloc(uint64(n))
				if err != nil {
					t.Fatal(err)
				}
				if err := s.H2D(a, src); err != nil {
					t.Fatal(err)
				}
				if !pinnedIO {
					// The source of a staged copy is free on return.
					for i := range src {
						src[i] = 0
					}
				}
				if err := s.Memset(b, 0x5a, n); err != nil {
					t.Fatal(err)
				}
				if err := s.D2D(b, a, uint64(n)); err != nil {
					t.Fatal(err)
				}
				if err := s.D2H(dst, b); err != nil {
					t.Fatal(err)
				}
				if err := s.Sync(); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(dst, want) {
					t.Errorf("context %d, %d bytes, pinned %v: round trip differs", ci, n, pinnedIO)
				}
				mem.Free(a)
				mem.Free(b)
				if pinnedIO {
					c.HostFree(src)
					c.HostFree(dst)
				}
			}
		}
		if n := s.staging.Live(); n != 0 {
			t.Errorf("context %d: %d staging buffers still live after Sync", ci, n)
		}
		s.Close()
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestManyStagedCopies queues many pageable copies without syncing between
// them, so staging buffers are reused only after their events complete.
func TestManyStagedCopies(t *testing.T) {
	_, c := gpu(t)
	s, err := c.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const k, n = 200, 64 << 10
	base, err := c.Memory().Alloc(k * n)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Memory().Free(base)
	outs := make([][]byte, k)
	for i := 0; i < k; i++ {
		src := bytes.Repeat([]byte{byte(i), byte(i * 7)}, n/2)
		if err := s.H2D(base+uint64(i*n), src); err != nil {
			t.Fatal(err)
		}
		outs[i] = make([]byte, n)
	}
	for i := 0; i < k; i++ {
		if err := s.D2H(outs[i], base+uint64(i*n)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < k; i++ {
		if !bytes.Equal(outs[i], bytes.Repeat([]byte{byte(i), byte(i * 7)}, n/2)) {
			t.Fatalf("copy %d differs", i)
		}
	}
}

// TestCrossStreamWait: a slow kernel on stream A fills a buffer; stream B
// waits on an event recorded after it and reads the buffer. With the wait
// B must see A's values; B runs in the other context, so the event crosses
// contexts too.
func TestCrossStreamWait(t *testing.T) {
	d, c0 := gpu(t)
	c1, err := d.Context(1)
	if err != nil {
		t.Fatal(err)
	}
	for _, cb := range []*Context{c0, c1} {
		a, err := c0.NewStream()
		if err != nil {
			t.Fatal(err)
		}
		b, err := cb.NewStream()
		if err != nil {
			t.Fatal(err)
		}
		const n = 1 << 16
		buf, err := c0.Memory().Alloc(4 * n)
		if err != nil {
			t.Fatal(err)
		}
		// Stream B writes into memory of its own context and reads A's
		// through a peer copy when the contexts differ.
		out, err := cb.Memory().Alloc(4 * n)
		if err != nil {
			t.Fatal(err)
		}
		src := buf
		if cb != c0 {
			if src, err = cb.Memory().Alloc(4 * n); err != nil {
				t.Fatal(err)
			}
		}
		for rep := 0; rep < 5; rep++ {
			v := uint32(1000 * (rep + 1))
			if err := b.Memset(out, 0, 4*n); err != nil {
				t.Fatal(err)
			}
			if err := a.Memset(buf, 0, 4*n); err != nil {
				t.Fatal(err)
			}
			var args Args
			args.Ptr(buf).I32(int32(v)).I64(n).I64(20_000_000) // ~10 ms
			if err := a.Launch(fn(t, c0, "slow_fill"), D1(64), D1(256), 0, &args); err != nil {
				t.Fatal(err)
			}
			e, err := c0.NewEvent()
			if err != nil {
				t.Fatal(err)
			}
			if err := a.RecordEvent(e); err != nil {
				t.Fatal(err)
			}
			if err := b.WaitEvent(e); err != nil {
				t.Fatal(err)
			}
			if cb != c0 {
				if err := b.Peer(src, buf, c0, 4*n); err != nil {
					t.Fatal(err)
				}
			}
			var a2 Args
			a2.Ptr(out).Ptr(src).I64(n)
			if err := b.Launch(fn(t, cb, "add_one"), D1(64), D1(256), 0, &a2); err != nil {
				t.Fatal(err)
			}
			host := make([]byte, 4*n)
			if err := b.D2H(host, out); err != nil {
				t.Fatal(err)
			}
			if err := b.Sync(); err != nil {
				t.Fatal(err)
			}
			for i, x := range u32s(host) {
				if x != v+uint32(i)+1 {
					t.Fatalf("contexts %d->%d rep %d: element %d = %d, want %d (the wait did not order B after A)",
						c0.ID(), cb.ID(), rep, i, x, v+uint32(i)+1)
				}
			}
			e.Destroy()
		}
		a.Close()
		b.Close()
	}
}

// TestEventSemantics: a never-recorded event is complete and waiting on it
// is a no-op; Query turns true once the stream passes the record.
func TestEventSemantics(t *testing.T) {
	_, c := gpu(t)
	s, err := c.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	e, err := c.NewEvent()
	if err != nil {
		t.Fatal(err)
	}
	if !e.Query() {
		t.Error("never-recorded event not complete")
	}
	s.Wait(e)
	buf, _ := c.Memory().Alloc(4)
	var args Args
	args.Ptr(buf).I32(1).I64(1).I64(50_000_000)
	if err := s.Launch(fn(t, c, "slow_fill"), D1(1), D1(1), 0, &args); err != nil {
		t.Fatal(err)
	}
	s.Record(e)
	if e.Query() {
		t.Log("event complete right after a ~25 ms kernel was queued (possible but unlikely)")
	}
	e.Synchronize()
	if !e.Query() {
		t.Error("event not complete after Synchronize")
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
}

// TestEnqueueOrder: host functions run in stream order with device work,
// and a panicking one is reported by Err.
func TestEnqueueOrder(t *testing.T) {
	_, c := gpu(t)
	s, err := c.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	buf, _ := c.Memory().Alloc(4)
	host := make([]byte, 4)
	var mu sync.Mutex
	var seen []uint32
	for i := 0; i < 20; i++ {
		var args Args
		args.Ptr(buf).I32(int32(i)).I64(1).I64(100_000)
		if err := s.Launch(fn(t, c, "slow_fill"), D1(1), D1(1), 0, &args); err != nil {
			t.Fatal(err)
		}
		if err := s.D2H(host, buf); err != nil {
			t.Fatal(err)
		}
		s.Enqueue(func() {
			mu.Lock()
			seen = append(seen, binary.LittleEndian.Uint32(host))
			mu.Unlock()
		})
	}
	s.Synchronize()
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	for i, v := range seen {
		if v != uint32(i) {
			t.Fatalf("host function %d saw %d: %v", i, v, seen)
		}
	}
	if len(seen) != 20 {
		t.Fatalf("%d host functions ran, want 20", len(seen))
	}
	s.Enqueue(func() { panic("boom") })
	if err := s.Synchronize(); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Errorf("Synchronize after a panicking host function = %v", err)
	}
	if err := s.Synchronize(); err != nil {
		t.Errorf("second Synchronize after a panicking host function = %v, want nil (the error is taken once)", err)
	}
}

// TestBFCOverDeviceMemory runs the bfc allocator over cuMemAlloc regions,
// plain and stream-aware across two streams, and checks data integrity of
// every live allocation.
var _ bfc.Backend = (*DeviceMemory)(nil)

func TestBFCOverDeviceMemory(t *testing.T) {
	d, c := gpu(t)
	for _, aware := range []bool{false, true} {
		s1, _ := c.NewStream()
		s2, _ := c.NewStream()
		// Stream-aware: one fixed region, so reuse across streams (and its
		// device-side waits) happens rather than growth.
		opts := bfc.Options{Name: "test_gpu_bfc", Limit: 256 << 20, AllowGrowth: true, StreamAware: aware}
		if aware {
			opts.Limit, opts.AllowGrowth = 48<<20, false
		}
		if aware {
			opts.NewEvent = func() (device.Event, error) { return d.NewEvent() }
		}
		a, err := bfc.New(c.Memory(), opts)
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewSource(1))
		type live struct {
			addr uint64
			data []byte
			s    *Stream
		}
		var lives []live
		for i := 0; i < 300; i++ {
			if len(lives) > 0 && r.Intn(3) == 0 {
				k := r.Intn(len(lives))
				l := lives[k]
				got := make([]byte, len(l.data))
				if err := l.s.D2H(got, l.addr); err != nil {
					t.Fatal(err)
				}
				if err := l.s.Sync(); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, l.data) {
					t.Fatalf("aware=%v: allocation at %#x corrupted", aware, l.addr)
				}
				if err := a.Free(l.addr); err != nil {
					t.Fatal(err)
				}
				lives = append(lives[:k], lives[k+1:]...)
				continue
			}
			s := s1
			if r.Intn(2) == 0 {
				s = s2
			}
			maxN := 1 << 20
			if aware {
				maxN = 256 << 10
			}
			n := 1 + r.Intn(maxN)
			addr, err := a.Allocate(uint64(n), s)
			if err != nil {
				t.Fatal(err)
			}
			data := make([]byte, n)
			r.Read(data)
			if err := s.H2D(addr, data); err != nil {
				t.Fatal(err)
			}
			lives = append(lives, live{addr, data, s})
		}
		if err := a.Check(); err != nil {
			t.Fatal(err)
		}
		st := a.Stats()
		t.Logf("aware=%v: %d regions, %d bytes, peak %d, cross-stream waits %d", aware, st.Regions, st.RegionBytes,
			st.PeakBytesInUse, st.CrossStreamWaits)
		s1.Close()
		s2.Close()
		a.Close()
		for _, s := range []*Stream{s1, s2} {
			if err := s.Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func TestLaunchArgs(t *testing.T) {
	_, c := gpu(t)
	s, _ := c.NewStream()
	defer s.Close()
	buf, _ := c.Memory().Alloc(4)
	var args Args
	args.Ptr(buf).I64(1 << 33).I64(-(1 << 33) + 5).F32(2.5).I32(-3).F64(1e3)
	if err := s.Launch(fn(t, c, "six_args"), D1(1), D1(32), 0, &args); err != nil {
		t.Fatal(err)
	}
	host := make([]byte, 4)
	if err := s.D2H(host, buf); err != nil {
		t.Fatal(err)
	}
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	if got := binary.LittleEndian.Uint32(host); got != 5+2-3+1000 {
		t.Errorf("six_args wrote %d, want %d", got, 5+2-3+1000)
	}
}

// TestConcurrentLaunches: goroutines launching on one stream, more of
// them than the stream has argument slots (the rest take its locked
// buffer), each filling its own region, its last launch's values last:
// every region holds its goroutine's last values, so no launch read
// another's parameters.
func TestConcurrentLaunches(t *testing.T) {
	_, c := gpu(t)
	s, _ := c.NewStream()
	defer s.Close()
	const workers, launches, n = 3 * argSlots, 200, 256
	buf, err := c.Memory().Alloc(workers * n * 4)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Memory().Free(buf)
	f := fn(t, c, "fill_u32")
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < launches; i++ {
				var args Args
				args.Ptr(buf + uint64(w*n*4)).I32(int32(w*100000 + i)).I64(n)
				if err := s.Launch(f, D1(1), D1(n), 0, &args); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	host := make([]byte, workers*n*4)
	if err := s.D2H(host, buf); err != nil {
		t.Fatal(err)
	}
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	if s.free.Load() != 1<<argSlots-1 {
		t.Errorf("argument slots left taken: free set %#b", s.free.Load())
	}
	v := u32s(host)
	for w := 0; w < workers; w++ {
		for i := 0; i < n; i++ {
			if want := uint32(w*100000+launches-1) + uint32(i); v[w*n+i] != want {
				t.Fatalf("worker %d element %d: %d, want %d", w, i, v[w*n+i], want)
			}
		}
	}
}

// TestConcurrentFunctionLookup looks many kernels of several programs up
// from many goroutines at once, first while the programs load and then
// from the lock-free map: every caller gets the same function per kernel,
// each program loads once, a kernel the program lacks fails with its name
// every time, and a looked-up kernel launches and computes.
func TestConcurrentFunctionLookup(t *testing.T) {
	_, c := gpu(t)
	const progs, kernels, workers, rounds = 4, 16, 16, 50
	var ps [progs]*Program
	for i := range ps {
		var src strings.Builder
		for k := 0; k < kernels; k++ {
			fmt.Fprintf(&src, "extern \"C\" __global__ void k%d(unsigned *p) { p[threadIdx.x] = %du + threadIdx.x; }\n", k, 1000*i+k)
		}
		ps[i] = &Program{Name: fmt.Sprintf("lookup%d.cu", i), Source: src.String()}
	}
	CompileStats.mu.Lock()
	loads0 := CompileStats.Loads
	CompileStats.mu.Unlock()
	got := make([][progs * kernels]*Function, workers)
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < rounds; r++ {
				for j := 0; j < progs*kernels; j++ {
					// Each worker walks the kernels from its own start.
					x := (j + w*7) % (progs * kernels)
					f, err := c.Function(ps[x/kernels], fmt.Sprintf("k%d", x%kernels))
					if err != nil {
						errs <- err
						return
					}
					if got[w][x] != nil && got[w][x] != f {
						errs <- fmt.Errorf("worker %d: kernel %d changed function", w, x)
						return
					}
					got[w][x] = f
				}
				if _, err := c.Function(ps[w%progs], "absent"); err == nil || !strings.Contains(err.Error(), "absent") {
					errs <- fmt.Errorf("missing kernel: %v, want an error naming it", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for w := 1; w < workers; w++ {
		if got[w] != got[0] {
			t.Fatalf("worker %d saw other functions than worker 0", w)
		}
	}
	CompileStats.mu.Lock()
	loads := CompileStats.Loads - loads0
	CompileStats.mu.Unlock()
	if loads != progs {
		t.Errorf("%d module loads for %d programs", loads, progs)
	}
	s, _ := c.NewStream()
	defer s.Close()
	buf, err := c.Memory().Alloc(64 * 4)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Memory().Free(buf)
	x := progs*kernels - 3
	var args Args
	args.Ptr(buf)
	if err := s.Launch(got[0][x], D1(1), D1(64), 0, &args); err != nil {
		t.Fatal(err)
	}
	host := make([]byte, 64*4)
	if err := s.D2H(host, buf); err != nil {
		t.Fatal(err)
	}
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	for i, v := range u32s(host) {
		if want := uint32(1000*(x/kernels) + x%kernels + i); v != want {
			t.Fatalf("element %d: %d, want %d", i, v, want)
		}
	}
}

func TestInvalidLaunch(t *testing.T) {
	_, c := gpu(t)
	s, _ := c.NewStream()
	defer s.Close()
	var args Args
	err := s.Launch(fn(t, c, "ms_empty"), D1(1), D1(4096), 0, &args)
	if err == nil {
		t.Fatal("a 4096-thread block launched")
	}
	if !strings.Contains(err.Error(), "cuLaunchKernel") || !strings.Contains(err.Error(), "ms_empty") {
		t.Errorf("error %q does not name cuLaunchKernel and the kernel", err)
	}
	if status.CodeOf(err) != status.Internal {
		t.Errorf("code %v", status.CodeOf(err))
	}
	var ce *CallError
	if !errors.As(err, &ce) || ce.Sticky || ce.Call != "cuLaunchKernel" {
		t.Errorf("want a non-sticky cuLaunchKernel CallError in %v", err)
	}
	if c.Err() != nil {
		t.Errorf("context marked sticky after a bad launch: %v", c.Err())
	}
	// The stream is still usable.
	if err := s.Launch(fn(t, c, "ms_empty"), D1(1), D1(32), 0, &Args{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
}

func TestCompileError(t *testing.T) {
	d, _ := gpu(t)
	p := &Program{Name: "broken.cu", Source: "extern \"C\" __global__ void k(float *p) { p[0] = undefined_name; }\n"}
	_, err := d.lib.Compile(p, d.Arch())
	if err == nil {
		t.Fatal("broken source compiled")
	}
	if status.CodeOf(err) != status.InvalidArgument {
		t.Errorf("code %v, want INVALID_ARGUMENT", status.CodeOf(err))
	}
	for _, w := range []string{"nvrtcCompileProgram", "broken.cu", "undefined_name"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error does not mention %q:\n%v", w, err)
		}
	}
}

func TestDiskCache(t *testing.T) {
	d, c := gpu(t)
	dir := t.TempDir()
	old := CacheDir()
	SetCacheDir(dir)
	defer SetCacheDir(old)
	src := fmt.Sprintf("extern \"C\" __global__ void k%d(int *p) { p[0] = 42; }\n", time.Now().UnixNano())
	p1 := &Program{Name: "cache1.cu", Source: src}
	p2 := &Program{Name: "cache1.cu", Source: src} // same key, new program: memory cache misses
	CompileStats.mu.Lock()
	c0, h0 := CompileStats.Compiles, CompileStats.DiskHits
	CompileStats.mu.Unlock()
	if _, err := c.Module(p1); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Module(p2); err != nil {
		t.Fatal(err)
	}
	CompileStats.mu.Lock()
	c1, h1 := CompileStats.Compiles, CompileStats.DiskHits
	CompileStats.mu.Unlock()
	if c1-c0 != 1 || h1-h0 != 1 {
		t.Errorf("compiles +%d, disk hits +%d; want +1 each", c1-c0, h1-h0)
	}
	key := d.lib.CacheKey(p1, d.Arch())
	if _, err := os.Stat(dir + "/" + key + ".bin"); err != nil {
		t.Errorf("cache file missing: %v", err)
	}
	if !strings.Contains(key, fmt.Sprintf("sm%d", d.Arch())) {
		t.Errorf("key %q does not name the arch", key)
	}
}

func TestGemm(t *testing.T) {
	_, c := gpu(t)
	s, _ := c.NewStream()
	defer s.Close()
	r := rand.New(rand.NewSource(time.Now().UnixNano()))
	for _, tc := range []struct {
		m, n, k, batch int
		ta, tb, dbl    bool
		tf32           bool
		bcastB         bool
	}{
		{1, 1, 1, 1, false, false, false, false, false},
		{17, 33, 65, 1, false, false, false, false, false},
		{64, 128, 256, 1, true, false, false, true, false},
		{31, 7, 129, 1, false, true, true, false, false},
		{30, 40, 50, 1, true, true, false, false, false},
		{8, 16, 32, 5, false, false, false, false, false},
		{8, 16, 32, 4, true, true, true, false, true},
		{256, 512, 1024, 1, false, false, false, true, false},
	} {
		es := 4
		if tc.dbl {
			es = 8
		}
		ar, ac := tc.m, tc.k
		if tc.ta {
			ar, ac = ac, ar
		}
		br, bc := tc.k, tc.n
		if tc.tb {
			br, bc = bc, br
		}
		nb := tc.batch
		if tc.bcastB {
			nb = 1
		}
		A := randF(r, tc.batch*ar*ac)
		B := randF(r, nb*br*bc)
		dA := upload(t, c, s, A, tc.dbl)
		dB := upload(t, c, s, B, tc.dbl)
		dC, _ := c.Memory().Alloc(uint64(tc.batch * tc.m * tc.n * es))
		sb := int64(br * bc)
		if tc.bcastB {
			sb = 0
		}
		g := GemmArgs{Double: tc.dbl, TF32: tc.tf32, TransA: tc.ta, TransB: tc.tb, M: tc.m, N: tc.n, K: tc.k,
			A: dA, B: dB, C: dC, Batch: tc.batch, StrideA: int64(ar * ac), StrideB: sb, StrideC: int64(tc.m * tc.n)}
		if err := s.Gemm(g); err != nil {
			t.Fatal(err)
		}
		got := download(t, s, dC, tc.batch*tc.m*tc.n, tc.dbl)
		want := make([]float64, tc.batch*tc.m*tc.n)
		for bi := 0; bi < tc.batch; bi++ {
			bo := bi * br * bc
			if tc.bcastB {
				bo = 0
			}
			for i := 0; i < tc.m; i++ {
				for j := 0; j < tc.n; j++ {
					var acc float64
					for p := 0; p < tc.k; p++ {
						var a, b float64
						if tc.ta {
							a = A[bi*ar*ac+p*ac+i]
						} else {
							a = A[bi*ar*ac+i*ac+p]
						}
						if tc.tb {
							b = B[bo+j*bc+p]
						} else {
							b = B[bo+p*bc+j]
						}
						acc += a * b
					}
					want[bi*tc.m*tc.n+i*tc.n+j] = acc
				}
			}
		}
		tol := 1e-5
		if tc.dbl {
			tol = 1e-12
		} else if tc.tf32 {
			tol = 5e-3
		}
		if e := relErr(got, want); e > tol || math.IsNaN(e) {
			t.Errorf("%+v: relative error %g > %g", tc, e, tol)
		}
		for _, p := range []uint64{dA, dB, dC} {
			c.Memory().Free(p)
		}
	}
}

func TestGemmBias(t *testing.T) {
	_, c := gpu(t)
	s, _ := c.NewStream()
	defer s.Close()
	r := rand.New(rand.NewSource(time.Now().UnixNano()))
	for _, tc := range []struct {
		m, n, k    int
		ta, tb     bool
		relu, tf32 bool
	}{
		{16, 512, 13, false, false, true, false},
		{64, 256, 512, false, true, false, true},
		{1, 1, 1, false, false, true, false},
		{33, 70, 100, true, false, true, true},
	} {
		ar, ac := tc.m, tc.k
		if tc.ta {
			ar, ac = ac, ar
		}
		br, bc := tc.k, tc.n
		if tc.tb {
			br, bc = bc, br
		}
		A, B, bias := randF(r, ar*ac), randF(r, br*bc), randF(r, tc.n)
		dA, dB, dBias := upload(t, c, s, A, false), upload(t, c, s, B, false), upload(t, c, s, bias, false)
		dC, _ := c.Memory().Alloc(uint64(4 * tc.m * tc.n))
		g := GemmArgs{TF32: tc.tf32, TransA: tc.ta, TransB: tc.tb, M: tc.m, N: tc.n, K: tc.k, A: dA, B: dB, C: dC}
		if err := s.GemmBias(g, dBias, tc.relu); err != nil {
			t.Fatalf("%+v: %v", tc, err)
		}
		got := download(t, s, dC, tc.m*tc.n, false)
		want := make([]float64, tc.m*tc.n)
		for i := 0; i < tc.m; i++ {
			for j := 0; j < tc.n; j++ {
				acc := bias[j]
				for p := 0; p < tc.k; p++ {
					ai, bi := i*ac+p, p*bc+j
					if tc.ta {
						ai = p*ac + i
					}
					if tc.tb {
						bi = j*bc + p
					}
					acc += A[ai] * B[bi]
				}
				if tc.relu && acc < 0 {
					acc = 0
				}
				want[i*tc.n+j] = acc
			}
		}
		tol := 1e-5
		if tc.tf32 {
			tol = 5e-3
		}
		if e := relErr(got, want); e > tol || math.IsNaN(e) {
			t.Errorf("%+v: relative error %g > %g", tc, e, tol)
		}
	}
}

// TestGemmPlanEviction runs GEMMs of five shapes, with and without a
// bias, twice round on a stream whose cuBLASLt plan cache holds two: every
// run after the first round re-plans an evicted shape, and every result
// must still match float64 math (so an evicted plan's freed descriptors
// are never used, and a re-made plan takes the new bias pointer).
func TestGemmPlanEviction(t *testing.T) {
	_, c := gpu(t)
	s, _ := c.NewStream()
	defer s.Close()
	s.mu.Lock()
	b, err := s.blasLocked()
	if err == nil {
		b.plans.max = 2
	}
	s.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewSource(time.Now().UnixNano()))
	shapes := [][3]int{{3, 5, 7}, {16, 8, 4}, {9, 33, 17}, {64, 32, 16}, {1, 70, 3}}
	for round := 0; round < 2; round++ {
		for i, sh := range shapes {
			m, n, k := sh[0], sh[1], sh[2]
			A, B, bias := randF(r, m*k), randF(r, k*n), randF(r, n)
			dA, dB, dBias := upload(t, c, s, A, false), upload(t, c, s, B, false), upload(t, c, s, bias, false)
			dC, _ := c.Memory().Alloc(uint64(4 * m * n))
			g := GemmArgs{M: m, N: n, K: k, A: dA, B: dB, C: dC}
			withBias := (i+round)%2 == 0
			if withBias {
				err = s.GemmBias(g, dBias, false)
			} else {
				err = s.Gemm(g)
			}
			if err != nil {
				t.Fatalf("round %d shape %v: %v", round, sh, err)
			}
			got := download(t, s, dC, m*n, false)
			want := make([]float64, m*n)
			for i := 0; i < m; i++ {
				for j := 0; j < n; j++ {
					var acc float64
					if withBias {
						acc = bias[j]
					}
					for p := 0; p < k; p++ {
						acc += A[i*k+p] * B[p*n+j]
					}
					want[i*n+j] = acc
				}
			}
			if e := relErr(got, want); e > 1e-5 || math.IsNaN(e) {
				t.Errorf("round %d shape %v bias %v: relative error %g", round, sh, withBias, e)
			}
			for _, p := range []uint64{dA, dB, dBias, dC} {
				c.Memory().Free(p)
			}
		}
	}
	s.mu.Lock()
	n := s.blas.plans.len()
	s.mu.Unlock()
	if n > 2 {
		t.Errorf("%d cuBLASLt plans held, bound 2", n)
	}
}

// TestGemmUnaligned: operands off cuBLASLt's 256-byte alignment (a view
// 4 bytes into a buffer) run through cuBLAS and are right; GemmBias says
// UNIMPLEMENTED for them (its caller then runs Gemm and a bias kernel).
func TestGemmUnaligned(t *testing.T) {
	_, c := gpu(t)
	s, _ := c.NewStream()
	defer s.Close()
	r := rand.New(rand.NewSource(time.Now().UnixNano()))
	m, n, k := 7, 9, 5
	A, B := randF(r, m*k), randF(r, k*n)
	dA := upload(t, c, s, append([]float64{0}, A...), false) // A starts 4 bytes in
	dB := upload(t, c, s, B, false)
	dC, _ := c.Memory().Alloc(uint64(4 * m * n))
	g := GemmArgs{M: m, N: n, K: k, A: dA + 4, B: dB, C: dC}
	if err := s.Gemm(g); err != nil {
		t.Fatal(err)
	}
	got := download(t, s, dC, m*n, false)
	want := make([]float64, m*n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			for p := 0; p < k; p++ {
				want[i*n+j] += A[i*k+p] * B[p*n+j]
			}
		}
	}
	if e := relErr(got, want); e > 1e-5 || math.IsNaN(e) {
		t.Errorf("unaligned A: relative error %g", e)
	}
	if err := s.GemmBias(g, dB, false); status.CodeOf(err) != status.Unimplemented {
		t.Errorf("GemmBias with unaligned A: %v; want UNIMPLEMENTED", err)
	}
	for _, p := range []uint64{dA, dB, dC} {
		c.Memory().Free(p)
	}
}

func randF(r *rand.Rand, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = float64(float32(r.Float64()*2 - 1))
	}
	return v
}

func upload(t testing.TB, c *Context, s *Stream, v []float64, dbl bool) uint64 {
	t.Helper()
	es := 4
	if dbl {
		es = 8
	}
	b := make([]byte, es*len(v))
	for i, x := range v {
		if dbl {
			binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(x))
		} else {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(x)))
		}
	}
	p, err := c.Memory().Alloc(uint64(max(len(b), 1)))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.H2D(p, b); err != nil {
		t.Fatal(err)
	}
	return p
}

func download(t testing.TB, s *Stream, p uint64, n int, dbl bool) []float64 {
	t.Helper()
	es := 4
	if dbl {
		es = 8
	}
	b := make([]byte, es*n)
	if err := s.D2H(b, p); err != nil {
		t.Fatal(err)
	}
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	v := make([]float64, n)
	for i := range v {
		if dbl {
			v[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
		} else {
			v[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])))
		}
	}
	return v
}

func relErr(got, want []float64) float64 {
	var num, den float64
	for i := range want {
		d := got[i] - want[i]
		num += d * d
		den += want[i] * want[i]
	}
	if den == 0 {
		return math.Sqrt(num)
	}
	return math.Sqrt(num / den)
}

// TestLaunchOverhead measures the CPU time of one launch through Launch
// against the driver's own (a C loop calling cuLaunchKernel), in batches
// of 256 launches (well inside the driver's queue, so no launch blocks),
// and logs the medians. It asserts nothing about time.
func TestLaunchOverhead(t *testing.T) {
	_, c := gpu(t)
	s, _ := c.NewStream()
	defer s.Close()
	empty := fn(t, c, "ms_empty")
	six := fn(t, c, "six_args")
	buf, _ := c.Memory().Alloc(4)
	const batch, reps = 256, 60
	// The three ways are interleaved batch by batch, so drift in the
	// machine's speed affects them alike.
	var raw, ours, oursSix []float64
	timeBatch := func(run func() error) float64 {
		if err := s.Sync(); err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		if err := run(); err != nil {
			t.Fatal(err)
		}
		return float64(time.Since(t0).Nanoseconds()) / batch
	}
	for r := 0; r < reps; r++ {
		if err := s.Sync(); err != nil {
			t.Fatal(err)
		}
		// The C loop's own clock: only the cuLaunchKernel calls.
		d, err := s.RawLaunchLoop(empty, batch)
		if err != nil {
			t.Fatal(err)
		}
		raw = append(raw, float64(d.Nanoseconds())/batch)
		ours = append(ours, timeBatch(func() error {
			for i := 0; i < batch; i++ {
				var a Args
				if err := s.Launch(empty, D1(1), D1(32), 0, &a); err != nil {
					return err
				}
			}
			return nil
		}))
		oursSix = append(oursSix, timeBatch(func() error {
			for i := 0; i < batch; i++ {
				var a Args
				a.Ptr(buf).I64(1).I64(2).F32(3).I32(4).F64(5)
				if err := s.Launch(six, D1(1), D1(32), 0, &a); err != nil {
					return err
				}
			}
			return nil
		}))
	}
	med := func(v []float64) float64 { sort.Float64s(v); return v[len(v)/2] }
	rawM, oursM, sixM := med(raw), med(ours), med(oursSix)
	line := fmt.Sprintf("launch CPU time per kernel (median of %d batches of %d): driver C loop %.0f ns, "+
		"Stream.Launch (no args) %.0f ns (+%.0f ns), Stream.Launch (6 args) %.0f ns (+%.0f ns)",
		reps, batch, rawM, oursM, oursM-rawM, sixM, sixM-rawM)
	t.Log(line)
	if out := os.Getenv("MSTREAM_BENCH_OUT"); out != "" {
		f, err := os.OpenFile(out, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			fmt.Fprintln(f, line)
			f.Close()
		}
	}
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
}

// TestFetchCopyCost reports (it asserts nothing about time) what copying
// n small fetches (1, 4, 16 device blocks of 64 bytes or 16 KiB) out to
// pinned memory costs, three ways: a copy per block (what a step does
// now), a pack kernel gathering them into one block and one copy (what
// packing the fetches on the device would do), and one copy of blocks
// already contiguous (what placing the fetched outputs side by side would
// do). Per way the host's time to enqueue (median of 200, interleaved)
// and to enqueue and synchronise; the packed bytes (Stream.Pack, what
// exec's packFetches launches) are checked.
func TestFetchCopyCost(t *testing.T) {
	_, c := gpu(t)
	s, err := c.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	mem := c.Memory()
	const most, reps = 16, 200
	for _, size := range []int{64, 16 << 10} {
		srcs := make([]uint64, most)
		for i := range srcs {
			a, err := mem.Alloc(uint64(size))
			if err != nil {
				t.Fatal(err)
			}
			defer mem.Free(a)
			if err := s.Memset(a, byte(i+1), size); err != nil {
				t.Fatal(err)
			}
			srcs[i] = a
		}
		dst, err := mem.Alloc(uint64(most * size))
		if err != nil {
			t.Fatal(err)
		}
		defer mem.Free(dst)
		host, err := c.HostAlloc(most * size)
		if err != nil {
			t.Fatal(err)
		}
		defer c.HostFree(host)
		for _, n := range []int{1, 4, most} {
			ways := []struct {
				name string
				do   func() error
			}{
				{"a copy each", func() error {
					for i := 0; i < n; i++ {
						if err := s.D2H(host[i*size:(i+1)*size], srcs[i]); err != nil {
							return err
						}
					}
					return nil
				}},
				{"pack kernel + one copy", func() error {
					var bb [device.MaxPack]device.PackBlock
					for i := 0; i < n; i++ {
						bb[i] = device.PackBlock{Dst: dst + uint64(i*size), Src: srcs[i], Size: uint64(size)}
					}
					if err := s.Pack(bb[:n]); err != nil {
						return err
					}
					return s.D2H(host[:n*size], dst)
				}},
				{"one copy (contiguous)", func() error { return s.D2H(host[:n*size], dst) }},
			}
			enq := make([][]float64, len(ways))
			all := make([][]float64, len(ways))
			for r := 0; r < reps; r++ {
				for w, way := range ways {
					if err := s.Sync(); err != nil {
						t.Fatal(err)
					}
					t0 := time.Now()
					if err := way.do(); err != nil {
						t.Fatalf("%s: %v", way.name, err)
					}
					t1 := time.Now()
					if err := s.Sync(); err != nil {
						t.Fatal(err)
					}
					enq[w] = append(enq[w], float64(t1.Sub(t0).Nanoseconds()))
					all[w] = append(all[w], float64(time.Since(t0).Nanoseconds()))
					if w == 1 {
						for i := 0; i < n; i++ {
							if b := host[i*size+size-1]; b != byte(i+1) {
								t.Fatalf("%d blocks of %d bytes packed: block %d ends in %d, want %d", n, size, i, b, i+1)
							}
						}
					}
				}
			}
			med := func(v []float64) float64 { sort.Float64s(v); return v[len(v)/2] }
			line := fmt.Sprintf("fetch copies, %d blocks of %d bytes (median of %d):", n, size, reps)
			for w, way := range ways {
				line += fmt.Sprintf(" %s: enqueue %.0f ns, with sync %.0f ns;", way.name, med(enq[w]), med(all[w]))
			}
			t.Log(line)
			if out := os.Getenv("MSTREAM_BENCH_OUT"); out != "" {
				if f, err := os.OpenFile(out, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
					fmt.Fprintln(f, line)
					f.Close()
				}
			}
		}
	}
}

// TestStickyError makes a kernel write to an unmapped address. It poisons
// its context for the rest of the process, so it runs only when asked
// (MSTREAM_TEST_STICKY=1, in a process of its own).
func TestStickyError(t *testing.T) {
	if os.Getenv("MSTREAM_TEST_STICKY") != "1" {
		t.Skip("set MSTREAM_TEST_STICKY=1 to run (it breaks the CUDA context of the process)")
	}
	_, c := gpu(t)
	s, _ := c.NewStream()
	var a Args
	a.Ptr(8)
	if err := s.Launch(fn(t, c, "write_bad"), D1(1), D1(32), 0, &a); err != nil {
		t.Fatal(err)
	}
	err := s.Sync()
	if err == nil {
		t.Fatal("a write to address 8 synchronised without error")
	}
	var ce *CallError
	if !errors.As(err, &ce) || !ce.Sticky || ce.Call != "cuStreamSynchronize" {
		t.Errorf("want a sticky cuStreamSynchronize CallError, got %v", err)
	}
	if !strings.Contains(err.Error(), "sticky") {
		t.Errorf("message does not say sticky: %v", err)
	}
	if c.Err() == nil || s.Err() == nil {
		t.Errorf("context/stream Err not set: %v / %v", c.Err(), s.Err())
	}
	t.Logf("sticky error as reported: %v", err)
}

// TestCrossContextAccess is a probe, not a check: can a kernel in context 1
// read memory allocated in context 0 of the same device? The answer
// decides whether TF_GPU_CONTEXT_COUNT > 1 needs an allocator per context.
// It may poison context 1, so it runs only when asked.
func TestCrossContextAccess(t *testing.T) {
	if os.Getenv("MSTREAM_PROBE_CROSS_CONTEXT") != "1" {
		t.Skip("set MSTREAM_PROBE_CROSS_CONTEXT=1 to run the probe")
	}
	d, c0 := gpu(t)
	c1, err := d.Context(1)
	if err != nil {
		t.Fatal(err)
	}
	s0, _ := c0.NewStream()
	s1, _ := c1.NewStream()
	const n = 1024
	src, _ := c0.Memory().Alloc(4 * n)
	dst, _ := c1.Memory().Alloc(4 * n)
	var a Args
	a.Ptr(src).I32(7).I64(n)
	if err := s0.Launch(fn(t, c0, "fill_u32"), D1(4), D1(256), 0, &a); err != nil {
		t.Fatal(err)
	}
	if err := s0.Sync(); err != nil {
		t.Fatal(err)
	}
	var a2 Args
	a2.Ptr(dst).Ptr(src).I64(n)
	if err := s1.Launch(fn(t, c1, "add_one"), D1(4), D1(256), 0, &a2); err != nil {
		t.Logf("PROBE cross-context access: launch failed: %v", err)
		return
	}
	host := make([]byte, 4*n)
	if err := s1.D2H(host, dst); err != nil {
		t.Logf("PROBE cross-context access: copy failed: %v", err)
		return
	}
	if err := s1.Sync(); err != nil {
		t.Logf("PROBE cross-context access: FAILS (%v)", err)
		return
	}
	ok := true
	for i, x := range u32s(host) {
		if x != 7+uint32(i)+1 {
			ok = false
			break
		}
	}
	t.Logf("PROBE cross-context access: kernel in context 1 read context 0's memory, values correct: %v", ok)
}
