package bfc

import (
	"fmt"
	"math/rand"
	"sort"
	"testing"
)

// traceOp is one step of an allocation trace: allocate size bytes as id,
// or (size 0) free id.
type traceOp struct {
	id   int
	size uint64
}

// inferenceTrace is a synthetic trace of inference steps: persistent
// weights first, then steps of a chain of layers, each allocating an
// activation and a few scratch and shape tensors, with inputs freed a layer
// or two later and a few outputs kept to the end of the step. concurrent
// steps run at once, their operations interleaved at random, as runs on
// several stream groups sharing one allocator are. The trace frees
// everything it allocates, so it can be replayed in a loop.
func inferenceTrace(seed int64, steps, concurrent int) []traceOp {
	rng := rand.New(rand.NewSource(seed))
	var ops []traceOp
	id := 0
	var weights []int
	for i := 0; i < 10; i++ {
		id++
		weights = append(weights, id)
		ops = append(ops, traceOp{id, uint64(64<<10 + rng.Intn(2<<20))})
	}
	step := func() []traceOp {
		var ops []traceOp
		alloc := func(size uint64) int {
			id++
			ops = append(ops, traceOp{id, size})
			return id
		}
		free := func(i int) { ops = append(ops, traceOp{id: i}) }
		batch := uint64(1 + rng.Intn(64))
		var pending []int // freed two layers later
		var outputs []int
		for layer := 0; layer < 30; layer++ {
			act := alloc(batch * uint64(256+rng.Intn(16<<10)))
			var scratch []int
			for k := rng.Intn(4); k > 0; k-- {
				scratch = append(scratch, alloc(uint64(4+rng.Intn(64))))
			}
			if rng.Intn(5) == 0 {
				scratch = append(scratch, alloc(batch*uint64(32<<10+rng.Intn(256<<10))))
			}
			for _, x := range scratch {
				free(x)
			}
			pending = append(pending, act)
			if len(pending) > 2 {
				if rng.Intn(8) == 0 {
					outputs = append(outputs, pending[0])
				} else {
					free(pending[0])
				}
				pending = pending[1:]
			}
		}
		for _, x := range append(pending, outputs...) {
			free(x)
		}
		return ops
	}
	running := make([][]traceOp, concurrent)
	for started := 0; ; {
		for i := range running {
			if len(running[i]) == 0 && started < steps {
				running[i] = step()
				started++
			}
		}
		var busy []int
		for i := range running {
			if len(running[i]) > 0 {
				busy = append(busy, i)
			}
		}
		if len(busy) == 0 {
			break
		}
		i := busy[rng.Intn(len(busy))]
		ops = append(ops, running[i][0])
		running[i] = running[i][1:]
	}
	for _, w := range weights {
		ops = append(ops, traceOp{id: w})
	}
	return ops
}

// firstFit is the baseline: one arena, a free list of holes sorted by
// address, the first hole that fits, neighbours merged on free.
type firstFit struct {
	holes []hole
	live  map[uint64]uint64
}

type hole struct{ addr, size uint64 }

func newFirstFit(size uint64) *firstFit {
	return &firstFit{holes: []hole{{0, size}}, live: map[uint64]uint64{}}
}

func (f *firstFit) alloc(size uint64) (uint64, bool) {
	size = roundUp(size)
	for i, h := range f.holes {
		if h.size >= size {
			if h.size == size {
				f.holes = append(f.holes[:i], f.holes[i+1:]...)
			} else {
				f.holes[i] = hole{h.addr + size, h.size - size}
			}
			f.live[h.addr] = size
			return h.addr, true
		}
	}
	return 0, false
}

func (f *firstFit) free(addr uint64) {
	size := f.live[addr]
	delete(f.live, addr)
	i := sort.Search(len(f.holes), func(i int) bool { return f.holes[i].addr > addr })
	h := hole{addr, size}
	if i > 0 && f.holes[i-1].addr+f.holes[i-1].size == addr {
		i--
		h = hole{f.holes[i].addr, f.holes[i].size + size}
		f.holes = append(f.holes[:i], f.holes[i+1:]...)
	}
	if i < len(f.holes) && h.addr+h.size == f.holes[i].addr {
		h.size += f.holes[i].size
		f.holes = append(f.holes[:i], f.holes[i+1:]...)
	}
	f.holes = append(f.holes, hole{})
	copy(f.holes[i+1:], f.holes[i:])
	f.holes[i] = h
}

func (f *firstFit) fragmentation() float64 {
	var total, largest uint64
	for _, h := range f.holes {
		total += h.size
		largest = max(largest, h.size)
	}
	if total == 0 {
		return 0
	}
	return 1 - float64(largest)/float64(total)
}

const benchLimit = 1 << 30

type replayer interface {
	alloc(size uint64) (uint64, bool)
	free(addr uint64)
	fragmentation() float64
}

type bfcReplayer struct{ a *Allocator }

func (r bfcReplayer) alloc(size uint64) (uint64, bool) {
	p, err := r.a.Allocate(size, nil)
	return p, err == nil
}
func (r bfcReplayer) free(addr uint64)       { r.a.Free(addr) }
func (r bfcReplayer) fragmentation() float64 { return r.a.Stats().Fragmentation }

// nullBackend hands out address space only: the benchmark measures the
// allocator, not memory.
type nullBackend struct{ next uint64 }

func (n *nullBackend) Alloc(size uint64) (uint64, error) {
	base := n.next + 1<<20
	n.next = base + size
	return base, nil
}
func (n *nullBackend) Free(uint64) {}

// replayAll runs the whole trace; false on the first failed allocation.
func replayAll(r replayer, trace []traceOp) bool {
	addrs := map[int]uint64{}
	for _, op := range trace {
		if op.size > 0 {
			p, ok := r.alloc(op.size)
			if !ok {
				return false
			}
			addrs[op.id] = p
		} else {
			r.free(addrs[op.id])
		}
	}
	return true
}

// minFit is the smallest arena, to a MiB, in which the whole trace runs:
// the peak in use plus what the allocator loses to fragmentation.
func minFit(trace []traceOp, mk func(limit uint64) replayer) uint64 {
	lo, hi := uint64(1), uint64(benchLimit>>20)
	for lo < hi {
		mid := (lo + hi) / 2
		if replayAll(mk(mid<<20), trace) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// peakInUse is the most bytes (rounded to MinAlloc) live at once.
func peakInUse(trace []traceOp) uint64 {
	sizes := map[int]uint64{}
	var cur, peak uint64
	for _, op := range trace {
		if op.size > 0 {
			sizes[op.id] = roundUp(op.size)
			cur += sizes[op.id]
			peak = max(peak, cur)
		} else {
			cur -= sizes[op.id]
		}
	}
	return peak
}

func benchReplay(b *testing.B, trace []traceOp, mkLimit func(limit uint64) replayer) {
	mk := func() replayer { return mkLimit(benchLimit) }
	fit := minFit(trace, mkLimit)
	addrs := map[int]uint64{}
	// An untimed pass in the smallest arena that fits measures
	// fragmentation at every 16th operation, averaged.
	r := mkLimit(fit << 20)
	var fsum float64
	var fn int
	lo, hi := ^uint64(0), uint64(0)
	for i, op := range trace {
		if op.size > 0 {
			p, ok := r.alloc(op.size)
			if !ok {
				b.Fatalf("trace op %d: out of memory", i)
			}
			addrs[op.id] = p
			lo, hi = min(lo, p), max(hi, p+roundUp(op.size))
		} else {
			r.free(addrs[op.id])
			if i%16 == 0 {
				fsum += r.fragmentation()
				fn++
			}
		}
	}
	frag := fsum / float64(fn)
	span := float64(hi-lo) / (1 << 20)
	r = mk()
	replayAll(r, trace)
	var regions float64
	if br, ok := r.(bfcReplayer); ok {
		regions = float64(br.a.Stats().RegionBytes) / (1 << 20)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		op := trace[i%len(trace)]
		if op.size > 0 {
			p, ok := r.alloc(op.size)
			if !ok {
				b.Fatal("out of memory")
			}
			addrs[op.id] = p
		} else {
			r.free(addrs[op.id])
		}
	}
	b.StopTimer()
	b.ReportMetric(frag, "frag")
	b.ReportMetric(span, "span-MiB")
	b.ReportMetric(float64(fit), "minfit-MiB")
	b.ReportMetric(float64(peakInUse(trace))/(1<<20), "peak-MiB")
	if regions > 0 {
		b.ReportMetric(regions, "regions-MiB")
	}
	// Leave the replayer clean for the next b.N.
	i := b.N % len(trace)
	if i != 0 {
		for _, op := range trace[i:] {
			if op.size > 0 {
				p, _ := r.alloc(op.size)
				addrs[op.id] = p
			} else {
				r.free(addrs[op.id])
			}
		}
	}
}

// BenchmarkReplay replays the trace through bfc (one region of the whole
// limit, as with allow_growth=false; the same splitting every chunk; and
// growing) and through first fit;
// ns/op is per trace operation, frag the mean 1 - largest free / free,
// span-MiB the address range the trace touched (highest end - lowest
// start; across regions for bfc-growth, whose null backend leaves 1 MiB
// gaps), regions-MiB what bfc obtained from its backend with a 1 GiB
// limit, minfit-MiB the smallest limit in which the whole trace runs, and
// peak-MiB the most bytes live at once (the bound no allocator beats).
func BenchmarkReplay(b *testing.B) {
	for _, conc := range []int{1, 4} {
		trace := inferenceTrace(1, 40, conc)
		b.Run(fmt.Sprintf("conc%d", conc), func(b *testing.B) { benchAllocators(b, trace) })
	}
}

func benchAllocators(b *testing.B, trace []traceOp) {
	b.Run("bfc", func(b *testing.B) {
		benchReplay(b, trace, func(limit uint64) replayer {
			a, _ := New(&nullBackend{}, Options{Limit: limit})
			return bfcReplayer{a}
		})
	})
	b.Run("bfc-split", func(b *testing.B) {
		benchReplay(b, trace, func(limit uint64) replayer {
			a, _ := New(&nullBackend{}, Options{Limit: limit, MaxInternalFrag: MinAlloc})
			return bfcReplayer{a}
		})
	})
	b.Run("bfc-growth", func(b *testing.B) {
		benchReplay(b, trace, func(limit uint64) replayer {
			a, _ := New(&nullBackend{}, Options{Limit: limit, AllowGrowth: true})
			return bfcReplayer{a}
		})
	})
	b.Run("firstfit", func(b *testing.B) {
		benchReplay(b, trace, func(limit uint64) replayer { return newFirstFit(limit) })
	})
}

func TestFirstFitBaseline(t *testing.T) {
	f := newFirstFit(4096)
	a, _ := f.alloc(1000)
	b, _ := f.alloc(1000)
	c, _ := f.alloc(1000)
	f.free(b)
	f.free(a)
	f.free(c)
	if len(f.holes) != 1 || f.holes[0].size != 4096 {
		t.Fatalf("holes %v", f.holes)
	}
}
