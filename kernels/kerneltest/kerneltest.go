package kerneltest

import (
	"fmt"
	"math"
	"math/rand"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"mstream/graph"
	"mstream/kernels"
	"mstream/proto/tfpb"
	"mstream/status"
	"mstream/tensor"
)

// Runner runs one node on a device: host tensors in, host tensors out.
// Each call builds the node's kernel afresh, so a stateful kernel (a random
// op with fixed seeds) starts from its initial state on every call.
type Runner interface {
	// Device is the kernels registry device name ("CPU", "GPU").
	Device() string
	Run(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error)
}

// Case is one kernel call and what it must give.
type Case struct {
	Name   string
	Node   *graph.Node
	Inputs []*tensor.Tensor
	// Want are the expected outputs; nil entries are not compared (an
	// output whose value is unspecified, e.g. Unique's order-free index).
	Want []*tensor.Tensor
	// NumPy, when set, computes Want instead: a Python expression over
	// np and the inputs a0, a1, ...; a tuple gives several outputs. Each
	// result is cast to the node's output dtype.
	NumPy string
	// Err, when not OK, is the code the call must fail with; the message
	// must name the node.
	Err status.Code
	// ErrMsg, when set with Err, is a substring the error message must
	// contain (the offending index or value, as TF's message names it).
	ErrMsg string
	// HostErr marks an Err that only host kernels report: where TF's
	// kernel for another device computes a value instead (an integer
	// division by zero on the GPU), a runner of that device that has a
	// kernel for the node skips the case, and the device's own tests check
	// the value.
	HostErr bool
	// Tol overrides the dtype tolerance (relative and absolute) when > 0.
	Tol float64
	// Scale, when set, holds per element of output 0 the magnitude its
	// rounding error scales with, where that exceeds the result's: the
	// operands of a subtraction that cancels (TanhGrad's dy*(1-y*y) with
	// |y| near 1 is |dy|*(1+y*y)), so that a device fusing the steps
	// differently (an FMA) is judged against what its arithmetic can
	// meet. Element i passes within Tol*max(1, |want|, Scale[i]).
	Scale []float64
	// Check, when set, replaces the element comparison (for outputs with
	// freedom, e.g. random ops): it returns an error describing a mismatch.
	Check func(out []*tensor.Tensor) error
	// Dead lists the outputs the kernel must leave unset: dead tensors,
	// as Switch's untaken branch (their Want entries are nil).
	Dead []int

	// State marks a case of a stateful op (variables): it runs on a
	// fresh set of resources from the runner (StateRunner), after the
	// calls in Before, each of which must succeed. TF's oracle runs one
	// node per case, so these keep their own reference; session's
	// TestVariablesAgainstTF compares whole sequences with TF.
	State  bool
	Before []Call

	tf *tfResult // TF's answer, in the oracle mode (tforacle.go)
}

// Call is one kernel call of a stateful case's set-up.
type Call struct {
	Node   *graph.Node
	Inputs []*tensor.Tensor
}

// StateRunner is a Runner whose kernels can keep state (variables):
// Fresh returns a runner whose calls share one new set of resources.
type StateRunner interface {
	Runner
	Fresh() Runner
}

// Gen draws the cases of one op family.
type Gen func(r *rand.Rand) []Case

var (
	famMu    sync.Mutex
	families = map[string][]Gen{}
)

// Add registers generators for op; several files may add to one op.
func Add(op string, g ...Gen) {
	famMu.Lock()
	defer famMu.Unlock()
	families[op] = append(families[op], g...)
}

// Ops lists the ops with cases, sorted.
func Ops() []string {
	famMu.Lock()
	defer famMu.Unlock()
	var ops []string
	for op := range families {
		ops = append(ops, op)
	}
	sort.Strings(ops)
	return ops
}

// Options narrows a suite run.
type Options struct {
	// Only runs these ops when non-empty.
	Only []string
	// Seed fixes the random source; 0 takes the clock (logged on failure).
	Seed int64
	// NoCoverage skips the check that every kernel of the device has cases.
	NoCoverage bool
	// NoDTypeCoverage skips the check that every dtype a kernel is
	// registered for (and its OpDef allows) is drawn by a passing case.
	NoDTypeCoverage bool
}

// Run runs every family against r, one subtest per op.
func Run(t *testing.T, r Runner, opt Options) {
	seed := opt.Seed
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	if s := os.Getenv("KERNELTEST_SEED"); s != "" {
		seed, _ = strconv.ParseInt(s, 10, 64)
	}
	t.Logf("kerneltest seed %d (KERNELTEST_SEED=%d reproduces)", seed, seed)
	ops := Ops()
	if s := os.Getenv("KERNELTEST_ONLY"); s != "" && len(opt.Only) == 0 {
		// A comma list narrows a run while working on some ops.
		opt.Only = strings.Split(s, ",")
	}
	if len(opt.Only) > 0 {
		ops = opt.Only
	}
	if !opt.NoCoverage && len(opt.Only) == 0 {
		checkCoverage(t, r.Device())
	}
	// Draw every case first so that NumPy references are computed in one
	// Python process.
	type opCases struct {
		op    string
		cases []Case
	}
	var all []opCases
	var np []*Case
	for i, op := range ops {
		famMu.Lock()
		gens := families[op]
		famMu.Unlock()
		if len(gens) == 0 {
			t.Errorf("no cases for op %s", op)
			continue
		}
		rng := rand.New(rand.NewSource(seed + int64(i)*7919))
		var cs []Case
		for _, g := range gens {
			cs = append(cs, g(rng)...)
		}
		all = append(all, opCases{op, cs})
	}
	if !opt.NoCoverage && !opt.NoDTypeCoverage && len(opt.Only) == 0 {
		byOp := map[string][]Case{}
		for _, oc := range all {
			byOp[oc.op] = oc.cases
		}
		checkDTypes(t, r.Device(), byOp)
	}
	for i := range all {
		for j := range all[i].cases {
			if c := &all[i].cases[j]; c.NumPy != "" && c.Err == status.OK {
				np = append(np, c)
			}
		}
	}
	if tfPython != "" {
		// TF is the reference: the cases' own expressions are not needed.
		var cs []*Case
		for i := range all {
			for j := range all[i].cases {
				cs = append(cs, &all[i].cases[j])
			}
		}
		if err := evalTF(cs, t.Logf); err != nil {
			t.Fatalf("TF reference: %v", err)
		}
		t.Logf("TF oracle (%s): %d cases of %d ops", tfPython, len(cs), len(all))
		// Only cases TF gave no answer for need their own reference.
		var rest []*Case
		for _, c := range np {
			if c.tf == nil {
				rest = append(rest, c)
			}
		}
		np = rest
	}
	if len(np) > 0 {
		if err := evalNumPy(np); err != nil {
			t.Fatalf("NumPy reference: %v", err)
		}
	}
	for _, oc := range all {
		t.Run(oc.op, func(t *testing.T) {
			for _, c := range oc.cases {
				runCase(t, r, c)
			}
			if tfPython != "" {
				against, errs := 0, 0
				for _, c := range oc.cases {
					if c.tf != nil {
						against++
						if c.tf.Code != status.OK {
							errs++
						}
					}
				}
				t.Logf("tforacle %s: %d cases, %d against TF (%d of them TF errors), %d on their own reference", oc.op, len(oc.cases), against, errs, len(oc.cases)-against)
			}
		})
	}
}

func checkCoverage(t *testing.T, device string) {
	famMu.Lock()
	defer famMu.Unlock()
	var missing []string
	for _, key := range kernels.Registered() {
		op, dev, _ := strings.Cut(key, "/")
		if dev == device && len(families[op]) == 0 {
			missing = append(missing, op)
		}
	}
	if len(missing) > 0 {
		t.Errorf("%d %s kernels have no conformance cases: %s", len(missing), device, strings.Join(missing, ", "))
	}
}

// checkDTypes checks that every dtype a kernel is registered for is drawn
// by some passing case of its family: for each type attr the family's
// nodes set (T, Ta, dtype, SrcT, ...), every dtype the registry resolves
// for that attr alone, and the OpDef allows, must appear among the cases.
func checkDTypes(t *testing.T, device string, byOp map[string][]Case) {
	var missing []string
	for op, cases := range byOp {
		used := map[string]map[tensor.DType]bool{}
		for _, c := range cases {
			if c.Err != status.OK {
				continue
			}
			for name, a := range c.Node.Attrs {
				if _, ok := a.GetValue().(*tfpb.AttrValue_Type); !ok {
					continue
				}
				if used[name] == nil {
					used[name] = map[tensor.DType]bool{}
				}
				used[name][tensor.DType(a.GetType())] = true
			}
		}
		for name, seen := range used {
			for dt := tensor.DType(1); dt < 32; dt++ {
				if !dt.Valid() || seen[dt] {
					continue
				}
				probe := &graph.Node{Name: "probe", Op: op, Attrs: map[string]*tfpb.AttrValue{name: {Value: &tfpb.AttrValue_Type{Type: tfpb.DataType(dt)}}}}
				if len(Allowed(op, []tensor.DType{dt}, name)) == 0 {
					continue // the OpDef forbids it, so no node can reach the kernel
				}
				if def, err := kernels.Lookup(probe, device); err == nil && def.TypeAttr == name {
					missing = append(missing, fmt.Sprintf("%s %s=%v", op, name, dt))
				}
			}
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		t.Errorf("%d registered %s dtypes are not drawn by any passing case: %s", len(missing), device, strings.Join(missing, ", "))
	}
}

func runCase(t *testing.T, r Runner, c Case) {
	t.Helper()
	name := c.Name
	if name == "" {
		name = describe(c)
	}
	if c.HostErr && r.Device() != kernels.CPU {
		if _, err := kernels.Lookup(c.Node, r.Device()); err == nil {
			return
		}
	}
	if c.State {
		sr, ok := r.(StateRunner)
		if !ok {
			return // the device keeps no state: its kernels are host-only
		}
		r = sr.Fresh()
		for i, b := range c.Before {
			if _, err := r.Run(b.Node, b.Inputs); err != nil {
				t.Errorf("%s: set-up call %d (%s): %v", name, i, b.Node.Op, err)
				return
			}
		}
	}
	if c.tf != nil {
		for _, m := range disagreesTF(c) {
			t.Errorf("%s: %s", name, m)
		}
		c = withTF(c, t.Logf)
	}
	out, err := r.Run(c.Node, c.Inputs)
	if c.Err != status.OK {
		if err == nil {
			t.Errorf("%s: want %v error, got outputs", name, c.Err)
			return
		}
		if got := status.CodeOf(err); got != c.Err {
			t.Errorf("%s: code %v, want %v: %v", name, got, c.Err, err)
		}
		if !strings.Contains(err.Error(), c.Node.Name) {
			t.Errorf("%s: error %q does not name node %q", name, err, c.Node.Name)
		}
		if c.ErrMsg != "" && !strings.Contains(err.Error(), c.ErrMsg) {
			t.Errorf("%s: error %q does not contain %q", name, err, c.ErrMsg)
		}
		return
	}
	if err != nil {
		t.Errorf("%s: %v", name, err)
		return
	}
	if len(out) != len(c.Node.OutTypes) {
		t.Errorf("%s: %d outputs, want %d", name, len(out), len(c.Node.OutTypes))
		return
	}
	for i, o := range out {
		dead := slices.Contains(c.Dead, i)
		if o == nil && dead {
			continue
		}
		if dead {
			t.Errorf("%s: output %d set, want it dead (unset)", name, i)
			return
		}
		if o == nil {
			t.Errorf("%s: output %d not set", name, i)
			return
		}
		if err := o.Check(); err != nil {
			t.Errorf("%s: output %d: %v", name, i, err)
			return
		}
		if o.DType != c.Node.OutTypes[i] {
			t.Errorf("%s: output %d dtype %v, want %v", name, i, o.DType, c.Node.OutTypes[i])
		}
		// The graph's shape function must admit what the kernel produced.
		if i < len(c.Node.OutShapes) && !c.Node.OutShapes[i].Compatible(o.Shape) {
			t.Errorf("%s: output %d has shape %v, but shape inference said %v", name, i, o.Shape, c.Node.OutShapes[i])
		}
	}
	if c.Check != nil {
		if err := c.Check(out); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		return
	}
	if len(c.Want) != len(out) {
		t.Errorf("%s: case has %d expected outputs for %d outputs", name, len(c.Want), len(out))
		return
	}
	for i := range out {
		if c.Want[i] == nil {
			continue
		}
		var scale []float64
		if i == 0 {
			scale = c.Scale
		}
		if err := CompareScaled(out[i], c.Want[i], c.Tol, scale); err != nil {
			t.Errorf("%s: output %d: %v", name, i, err)
		}
	}
}

func describe(c Case) string {
	var b strings.Builder
	b.WriteString(c.Node.Op)
	b.WriteString("(")
	for i, in := range c.Inputs {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(in.String())
	}
	b.WriteString(")")
	return b.String()
}

// Tol is the default relative-and-absolute tolerance for a dtype.
func Tol(dt tensor.DType) float64 {
	switch dt {
	case tensor.Float:
		return 1e-5
	case tensor.Double:
		return 1e-12
	case tensor.Half:
		return 2e-3
	case tensor.Bfloat16:
		return 1.6e-2
	}
	return 0
}

// Compare checks got against want: same dtype and shape, elements within
// tol (Tol(dtype) when tol is 0) relative to max(1, |want|); NaN matches NaN
// and infinities must match exactly.
func Compare(got, want *tensor.Tensor, tol float64) error { return CompareScaled(got, want, tol, nil) }

// CompareScaled is Compare with element i's tolerance relative to
// max(1, |want|, scale[i]) (Case.Scale); a non-finite scale counts as 0.
func CompareScaled(got, want *tensor.Tensor, tol float64, scale []float64) error {
	if got.DType != want.DType {
		return fmt.Errorf("dtype %v, want %v", got.DType, want.DType)
	}
	if !got.Shape.Equal(want.Shape) {
		return fmt.Errorf("shape %v, want %v", got.Shape, want.Shape)
	}
	if got.DType == tensor.String {
		for i := range want.Strs {
			if string(got.Strs[i]) != string(want.Strs[i]) {
				return fmt.Errorf("element %d: %q, want %q", i, got.Strs[i], want.Strs[i])
			}
		}
		return nil
	}
	if tol == 0 {
		tol = Tol(got.DType)
	}
	n := int(want.NumElements())
	bad := 0
	var first string
	for i := 0; i < n; i++ {
		g, w := got.ElementF64(i), want.ElementF64(i)
		etol := tol
		if i < len(scale) && !math.IsNaN(scale[i]) && !math.IsInf(scale[i], 0) && scale[i] > math.Max(1, math.Abs(w)) {
			etol = tol * scale[i] / math.Max(1, math.Abs(w))
		}
		if !close(g, w, etol) {
			if bad == 0 {
				first = fmt.Sprintf("element %d (index %v): got %v, want %v", i, unravel(i, want.Shape), g, w)
			}
			bad++
		}
	}
	if bad > 0 {
		return fmt.Errorf("%d of %d elements differ (tol %g); first: %s", bad, n, tol, first)
	}
	return nil
}

func close(g, w, tol float64) bool {
	if math.IsNaN(w) {
		return math.IsNaN(g)
	}
	if math.IsInf(w, 0) || math.IsInf(g, 0) {
		return g == w
	}
	return math.Abs(g-w) <= tol*math.Max(1, math.Abs(w))
}

func unravel(i int, s tensor.Shape) []int64 {
	idx := make([]int64, len(s))
	for d := len(s) - 1; d >= 0; d-- {
		if s[d] > 0 {
			idx[d] = int64(i) % s[d]
			i /= int(s[d])
		}
	}
	return idx
}

// NodeFor builds a node of op with the given attrs whose inputs are
// placeholders of the inputs' dtypes and shapes, validated against TF's
// OpDef with defaults filled. A list input is given as several tensors;
// lists maps an input arg index to its length (args not in lists take one
// tensor). It panics on an invalid node: a generator bug.
func NodeFor(op string, attrs map[string]*tfpb.AttrValue, inputs []*tensor.Tensor, lists map[int]int) *graph.Node {
	n, err := TryNodeFor(op, attrs, inputs, lists)
	if err != nil {
		panic(fmt.Sprintf("kerneltest: building %s: %v", op, err))
	}
	return n
}

// TryNodeFor is NodeFor returning the build error (for attr fuzzing).
func TryNodeFor(op string, attrs map[string]*tfpb.AttrValue, inputs []*tensor.Tensor, lists map[int]int) (*graph.Node, error) {
	return buildNode(op, attrs, inputs, lists, true)
}

// NodeForUnknown is NodeFor with placeholders of unknown shape, so that
// shape errors reach the kernel instead of graph construction (as they do
// when a feed's shape is only known at run time).
func NodeForUnknown(op string, attrs map[string]*tfpb.AttrValue, inputs []*tensor.Tensor, lists map[int]int) *graph.Node {
	n, err := buildNode(op, attrs, inputs, lists, false)
	if err != nil {
		panic(fmt.Sprintf("kerneltest: building %s: %v", op, err))
	}
	return n
}

// smallInts reports whether t looks like a shape-like input: an int32 or
// int64 scalar or vector of at most 16 elements.
func smallInts(t *tensor.Tensor) bool {
	return (t.DType == tensor.Int32 || t.DType == tensor.Int64) && len(t.Shape) <= 1 && t.NumElements() <= 16
}

func buildNode(op string, attrs map[string]*tfpb.AttrValue, inputs []*tensor.Tensor, lists map[int]int, known bool) (*graph.Node, error) {
	g := graph.New()
	var outs []graph.Output
	for i, in := range inputs {
		b := g.NewBuilder("Placeholder", fmt.Sprintf("in%d", i))
		b.SetAttr("dtype", &tfpb.AttrValue{Value: &tfpb.AttrValue_Type{Type: tfpb.DataType(in.DType)}})
		if known && smallInts(in) {
			// Shape-like inputs (shapes, axes, sizes) are Consts, as in
			// frozen graphs, so value-dependent shape functions run and Run
			// checks their result against the kernel's output.
			b = g.NewBuilder("Const", fmt.Sprintf("in%d", i))
			b.SetAttr("dtype", &tfpb.AttrValue{Value: &tfpb.AttrValue_Type{Type: tfpb.DataType(in.DType)}})
			b.SetAttr("value", &tfpb.AttrValue{Value: &tfpb.AttrValue_Tensor{Tensor: tensor.ToProto(in)}})
		} else if known {
			b.SetAttr("shape", &tfpb.AttrValue{Value: &tfpb.AttrValue_Shape{Shape: tensor.ShapeToProto(tensor.KnownShape(in.Shape))}})
		}
		p, err := b.Finish()
		if err != nil {
			return nil, err
		}
		outs = append(outs, graph.Output{Node: p, Index: 0})
	}
	def := graph.LookupOpDef(op)
	if def == nil {
		return nil, status.Errorf(status.NotFound, "unknown op %s", op)
	}
	b := g.NewBuilder(op, "k_"+strings.ToLower(op))
	k := 0
	for i := range def.InputArg {
		if l, ok := lists[i]; ok {
			if k+l > len(outs) {
				return nil, fmt.Errorf("list input %d wants %d tensors, %d left", i, l, len(outs)-k)
			}
			b.AddInputList(outs[k : k+l])
			k += l
			continue
		}
		if k >= len(outs) {
			return nil, fmt.Errorf("op %s has %d input args, %d tensors given", op, len(def.InputArg), len(inputs))
		}
		b.AddInput(outs[k])
		k++
	}
	if k != len(outs) {
		return nil, fmt.Errorf("op %s: %d tensors given, %d used", op, len(outs), k)
	}
	for name, v := range attrs {
		b.SetAttr(name, v)
	}
	return b.Finish()
}
