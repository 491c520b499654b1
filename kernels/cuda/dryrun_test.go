package cuda

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime/debug"
	"strings"
	"sync"
	"testing"

	cu "mstream/device/cuda"
	"mstream/graph"
	"mstream/kernels"
	"mstream/kernels/kerneltest"
	"mstream/status"
	"mstream/tensor"
)

// The dry run drives the Go side of every GPU kernel through the shared
// conformance suite's cases without a GPU: launches go to a hook that
// checks the kernel exists in its program (as clang preprocesses it) and
// that the packed arguments match the kernel's parameter list (count and
// byte layout), and launch dimensions are valid. Error cases must fail
// with the suite's code; successful calls must allocate outputs of the
// CPU kernel's dtypes and shapes. Values are not computed (no device),
// so the runner hands the suite the CPU's outputs: TestConformance
// compares values on a GPU. It needs clang to preprocess the sources.

// kparam is one kernel parameter: its size and alignment, its C type
// (for the emulator's wrappers) and how many device pointers it holds.
type kparam struct {
	size, align int
	ty          string
	ptrs        int
}

var paramSizes = map[string]kparam{
	"i64": {8, 8, "", 0}, "u64": {8, 8, "", 0}, "long long": {8, 8, "", 0}, "unsigned long long": {8, 8, "", 0},
	"double": {8, 8, "", 0}, "int": {4, 4, "", 0}, "u32": {4, 4, "", 0}, "unsigned": {4, 4, "", 0},
	"unsigned int": {4, 4, "", 0}, "float": {4, 4, "", 0},
	// Structs passed by value (their i64 arrays are MAXR = 8 long).
	"Bcast": {8 * (1 + 3*8), 8, "", 0}, "Bc": {8 * (1 + 3*8), 8, "", 0}, "Bc3": {8 * (1 + 4*8), 8, "", 0},
	"RedMeta": {8 * (2 + 4*8), 8, "", 0}, "Perm": {8 * (1 + 2*8), 8, "", 0}, "Ptrs8": {64, 8, "", 8},
	"Cols28": {8 * (28 + 29), 8, "", 28}, "GatherN32": {8 * (3*32 + 3*32), 8, "", 3 * 32}, // array.cu's
	"Strided": {8 * (2 + 6*8), 8, "", 0}, "NdMeta": {8 * (1 + 2*8), 8, "", 0}, "Conv": {8 * 20, 8, "", 0}, "Chain": {8 * 17, 8, "", 0},
	"WhereDims": {8 * (2 + 2*8), 8, "", 0}, "SB": {8 * (4 + 4*4), 8, "", 0},
	"PoolG": {8 * 12, 8, "", 0}, "ConvF": {8 * 15, 8, "", 0}, "SliceG": {8 * 33, 8, "", 0}, // gradnn.cu
}

var kernelRe = regexp.MustCompile(`extern\s+"C"\s+__attribute__\(\(global\)\)\s+void\s+(\w+)\s*\(([^)]*)\)`)

// programKernels preprocesses p with clang and returns each kernel's
// parameter layout.
func programKernels(clang, dir string, p *cu.Program) (map[string][]kparam, error) {
	src := filepath.Join(dir, "pp_"+p.Name)
	if err := os.WriteFile(src, []byte(p.Source), 0o644); err != nil {
		return nil, err
	}
	var out []byte
	var err error
	for _, arch := range []string{"sm_90", "sm_80", "sm_70"} {
		out, err = exec.Command(clang, "-x", "cuda", "--cuda-device-only", "-nocudainc", "-nocudalib",
			"--cuda-gpu-arch="+arch, "-E", "-P", "-std=c++17", "-I", filepath.Join(dir, "inc"),
			"-include", filepath.Join(dir, "shim.h"), src).Output()
		if err == nil {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%s: clang -E: %v", p.Name, err)
	}
	ks := map[string][]kparam{}
	for _, m := range kernelRe.FindAllStringSubmatch(string(out), -1) {
		var ps []kparam
		for _, a := range strings.Split(m[2], ",") {
			a = strings.TrimSpace(a)
			name := regexp.MustCompile(`\w+$`).FindString(a)
			full := strings.TrimSpace(strings.TrimSuffix(a, name))
			if strings.Contains(a, "*") {
				ps = append(ps, kparam{8, 8, full, 1})
				continue
			}
			f := strings.Fields(strings.ReplaceAll(a, "const ", ""))
			if len(f) < 2 {
				return nil, fmt.Errorf("%s: kernel %s: cannot read parameter %q", p.Name, m[1], a)
			}
			ty := strings.Join(f[:len(f)-1], " ")
			k, ok := paramSizes[ty]
			if !ok {
				return nil, fmt.Errorf("%s: kernel %s: parameter type %q unknown to the dry run (add it to paramSizes)", p.Name, m[1], ty)
			}
			k.ty = full
			if ty == "Ptrs8" {
				k.ptrs = 8
			}
			ps = append(ps, k)
		}
		ks[m[1]] = ps
	}
	if len(ks) == 0 {
		return nil, fmt.Errorf("%s: no kernels found", p.Name)
	}
	return ks, nil
}

// argsLayout reads how many parameters an Args holds and how many bytes
// they span (unexported fields, read through reflection).
func argsLayout(a *cu.Args) (n, used int) {
	v := reflect.ValueOf(a).Elem()
	return int(v.FieldByName("n").Int()), int(v.FieldByName("used").Int())
}

func layoutSize(ps []kparam) int {
	off := 0
	for _, p := range ps {
		off = (off+p.align-1)&^(p.align-1) + p.size
	}
	return off
}

type dryRunner struct {
	t        *testing.T
	mu       sync.Mutex
	kernels  map[*cu.Program]map[string][]kparam
	launched map[string]int // op -> launches
	direct   map[string]bool
	op       string
}

func (d *dryRunner) Device() string { return kernels.GPU }

func (d *dryRunner) hook(p *cu.Program, name string, grid, block cu.Dim3, shmem int, a *cu.Args) error {
	d.launched[d.op]++
	ks, ok := d.kernels[p]
	if !ok {
		d.t.Errorf("%s: launch of %s in unknown program %s", d.op, name, p.Name)
		return nil
	}
	ps, ok := ks[name]
	if !ok {
		d.t.Errorf("%s: kernel %s is not in %s", d.op, name, p.Name)
		return nil
	}
	n, used := argsLayout(a)
	if n != len(ps) || used != layoutSize(ps) {
		d.t.Errorf("%s: kernel %s takes %d parameters (%d bytes), launched with %d (%d bytes)", d.op, name, len(ps), layoutSize(ps), n, used)
	}
	if grid.X < 1 || grid.Y < 1 || grid.Z < 1 || grid.X > 1<<31-1 || grid.Y > 65535 || grid.Z > 65535 ||
		block.X*block.Y*block.Z > 1024 || block.X*block.Y*block.Z < 1 || shmem > 48<<10 {
		d.t.Errorf("%s: kernel %s launched with grid %v block %v shmem %d", d.op, name, grid, block, shmem)
	}
	return nil
}

func (d *dryRunner) Run(n *graph.Node, in []*tensor.Tensor) (outs []*tensor.Tensor, err error) {
	def, lerr := kernels.Lookup(n, kernels.GPU)
	if lerr != nil || needsDevice[n.Op] {
		return cpuRun(n, in, nil)
	}
	d.op = n.Op
	k, err := def.Factory(n)
	if status.CodeOf(err) == status.Unimplemented {
		return cpuRun(n, in, nil) // placement's fallback (conformance_test.go)
	}
	if err != nil {
		return nil, err
	}
	var stream *cu.Stream // typed nil: the dry run never touches it
	ctx := &kernels.Context{Node: n, Inputs: in, Outputs: make([]*tensor.Tensor, len(n.OutTypes)), Stream: stream,
		Alloc: func(dt tensor.DType, s tensor.Shape) (*tensor.Tensor, error) { return tensor.New(dt, s), nil }}
	direct := false
	gerr := func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				st := debug.Stack()
				if streamCall(st) {
					direct = true // it calls the device itself (cuBLAS, ...)
					return
				}
				err = fmt.Errorf("panic: %v\n%s", r, st)
				d.t.Errorf("%s: %v", n.Op, err)
			}
		}()
		return k.Compute(ctx)
	}()
	if direct {
		d.direct[n.Op] = true
		return cpuRun(n, in, nil)
	}
	if gerr != nil {
		return nil, gerr
	}
	want, werr := cpuRun(n, in, nil)
	if werr != nil {
		return ctx.Outputs, nil // the suite flags a case that wanted the error
	}
	for i, w := range want {
		g := ctx.Outputs[i]
		if g == nil {
			d.t.Errorf("%s: output %d not set", n.Op, i)
			continue
		}
		if g.DType != w.DType || !g.Shape.Equal(w.Shape) {
			d.t.Errorf("%s: output %d is %v%v, the CPU's %v%v", n.Op, i, g.DType, g.Shape, w.DType, w.Shape)
		}
	}
	return want, nil
}

// streamCall reports whether a panic's stack went through the CUDA
// stream's own methods: a kernel that calls the device itself (cuBLAS)
// instead of launch, d2d, memset or gemm, which the dry run and the
// emulator stand in for. Such ops are listed and run on the CPU.
func streamCall(stack []byte) bool {
	return strings.Contains(string(stack), "mstream/device/cuda.(*Stream)")
}

// needsDevice lists GPU ops whose kernels call the device in ways the dry
// run cannot stand in for. None now: GEMMs go through kctx.gemm and
// gemmEx (the emulator computes them), and cuBLASLt's epilogues are
// UNIMPLEMENTED there, so the GEMM+bias_act fallback runs.
var needsDevice = map[string]bool{}

// The dry run's GEMMs (Conv2D's) are skipped by kctx.gemm, so Conv2D runs.

func TestDryRun(t *testing.T) {
	clang, err := exec.LookPath("clang")
	if err != nil {
		t.Skip("clang not installed")
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "inc", "crt"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "inc", "crt", "sm_70_rt.hpp"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "shim.h"), []byte(clangShim), 0o644); err != nil {
		t.Fatal(err)
	}
	d := &dryRunner{t: t, kernels: map[*cu.Program]map[string][]kparam{}, launched: map[string]int{}, direct: map[string]bool{}}
	for _, p := range Programs() {
		ks, err := programKernels(clang, dir, p)
		if err != nil {
			t.Fatal(err)
		}
		d.kernels[p] = ks
	}
	dryRun = &dryDevice{launch: d.hook}
	defer func() { dryRun = nil }()
	seen := map[string]bool{}
	var only []string
	for _, key := range kernels.Registered() {
		op, dev, _ := strings.Cut(key, "/")
		if dev != kernels.GPU || op == "GatherV2" || op == "GatherNd" || seen[op] || needsDevice[op] {
			continue
		}
		seen[op] = true
		for _, o := range kerneltest.Ops() {
			if o == op {
				only = append(only, op)
			}
		}
	}
	kerneltest.Run(t, d, kerneltest.Options{Only: only})
	var none []string
	for _, op := range only {
		if d.launched[op] == 0 {
			none = append(none, op)
		}
	}
	t.Logf("dry run of %d ops; no kernel launched (metadata, forwarding or host dtypes only): %v; calling the device directly: %v", len(only), none, d.direct)
}

var (
	dryOnce sync.Once
	dryR    *dryRunner
	dryErr  error
)

// dryCheck is check without a GPU (MSTREAM_GPU_DRYRUN=1): the GPU
// kernel's Go side runs through the dry run, its error must match the
// CPU kernel's, and its outputs' dtypes and shapes the CPU's. It lets the
// GPU tests' own cases be exercised on a machine with clang and no GPU.
func dryCheck(t *testing.T, n *graph.Node, in []*tensor.Tensor) {
	t.Helper()
	dryOnce.Do(func() {
		clang, err := exec.LookPath("clang")
		if err != nil {
			dryErr = err
			return
		}
		dir, err := os.MkdirTemp("", "mstream-dryrun")
		if err != nil {
			dryErr = err
			return
		}
		defer os.RemoveAll(dir)
		if err := os.MkdirAll(filepath.Join(dir, "inc", "crt"), 0o755); err != nil {
			dryErr = err
			return
		}
		os.WriteFile(filepath.Join(dir, "inc", "crt", "sm_70_rt.hpp"), nil, 0o644)
		os.WriteFile(filepath.Join(dir, "shim.h"), []byte(clangShim), 0o644)
		dryR = &dryRunner{t: t, kernels: map[*cu.Program]map[string][]kparam{}, launched: map[string]int{}, direct: map[string]bool{}}
		for _, p := range Programs() {
			ks, err := programKernels(clang, dir, p)
			if err != nil {
				dryErr = err
				return
			}
			dryR.kernels[p] = ks
		}
	})
	if dryErr != nil {
		t.Skipf("dry run: %v", dryErr)
	}
	dryR.mu.Lock()
	defer dryR.mu.Unlock()
	dryR.t = t
	dryRun = &dryDevice{launch: dryR.hook}
	defer func() { dryRun = nil }()
	if _, err := kernels.Lookup(n, kernels.GPU); err != nil {
		t.Errorf("%s: %v", n.Op, err)
		return
	}
	_, gerr := dryR.Run(n, in)
	_, werr := cpuRun(n, in, nil)
	if (gerr == nil) != (werr == nil) || gerr != nil && status.CodeOf(gerr) != status.CodeOf(werr) {
		t.Errorf("%s(%s): CPU error %v, GPU error %v", n.Op, shapes(in), werr, gerr)
		return
	}
	opsMu.Lock()
	opsRun[n.Op]++
	opsMu.Unlock()
}
