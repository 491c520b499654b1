package exec

import (
	"fmt"
	"strconv"
	"strings"
	"sync"

	"mstream/graph"
	"mstream/kernels"
	"mstream/resource"
	"mstream/status"
)

// Placement says which devices a plan may use besides the host. The zero
// value places everything on the host, as Build does.
type Placement struct {
	// GPUs is the number of GPUs the session runs on (0: host only).
	GPUs int
	// AllowSoft is ConfigProto allow_soft_placement: a node asking for a
	// GPU that has no GPU kernel (or a GPU that does not exist) runs on
	// the host instead of failing the plan.
	AllowSoft bool
	// Strict checks, without AllowSoft, that every device a node names
	// exists (TF's placer: "Could not satisfy explicit device
	// specification"), also in a host-only session; the zero value (Build,
	// tests) places everything on the host whatever it names.
	Strict bool
	// Resources is the session's resource manager, handed to every
	// kernels.Stateful kernel of the plan (nil: a fresh one per plan).
	Resources *resource.Manager
	// HostState keeps variables in host memory: kernels that would keep
	// a variable's value in a GPU's memory (kernels.Def.DeviceState) run
	// on the host, as the GPU pool does, whose Runs move between GPUs.
	HostState bool
	// Log, when set, is told once per op type that a node fell back to
	// the host, and why.
	Log func(format string, args ...any)
}

// Where a plan node runs.
const (
	onHost  = 0
	onGPU   = 1
	onConst = 2 // a Const: host value, device copy made on first GPU use
)

// metaOnly ops read only their input's shape, so a host kernel serves a
// device input without copying it back (TF registers them on the GPU with
// the output in host memory).
var metaOnly = map[string]bool{"Shape": true, "ShapeN": true, "Size": true, "Rank": true}

// fallbackLogged remembers the op types whose fallback was logged.
var fallbackLogged sync.Map

// BuildPlaced makes a plan whose nodes are placed on the GPU or the host by
// pl; with pl.GPUs == 0 it is Build. A node runs on the GPU when a GPU
// kernel is registered for its op and dtypes, on the host otherwise, and
// its device annotation is honoured: a CPU device forces the host; a GPU
// device with no GPU kernel, or a GPU that does not exist, is an
// INVALID_ARGUMENT error naming the node unless pl.AllowSoft, as in TF.
// Inputs that a GPU kernel lists in HostMemory stay on the host. A GPU node
// runs on the GPU it names, else GPU:0 (placeGPUs).
func BuildPlaced(g *graph.Graph, feeds, fetches []graph.Output, targets []*graph.Node, pl Placement) (*Plan, error) {
	return build(g, feeds, fetches, targets, pl)
}

// requested parses a NodeDef device string ("/device:GPU:0", "/gpu:1",
// "/job:localhost/replica:0/task:0/device:CPU:0") into its type ("CPU",
// "GPU", another type, or "" when none is named) and index (-1 when none).
func requested(dev string) (string, int) {
	typ, idx := "", -1
	for _, part := range strings.Split(dev, "/") {
		f := strings.Split(part, ":")
		switch strings.ToLower(f[0]) {
		case "device":
			if len(f) >= 2 {
				typ = strings.ToUpper(f[1])
				if len(f) >= 3 {
					if n, err := strconv.Atoi(f[2]); err == nil {
						idx = n
					}
				}
			}
		case "cpu", "gpu":
			typ = strings.ToUpper(f[0])
			if len(f) >= 2 {
				if n, err := strconv.Atoi(f[1]); err == nil {
					idx = n
				}
			}
		}
	}
	if typ == "*" {
		typ = ""
	}
	return typ, idx
}

// placeGPUs gives every GPU node its GPU: the one its annotation names
// when that GPU exists (the node is pinned there), else GPU 0, where TF's
// default placer puts unannotated nodes (and soft placement those asking
// for a missing GPU); and lists the GPUs the plan uses, in plan order of
// their first node.
func (p *Plan) placeGPUs(pl Placement) {
	p.floating, p.pinned = false, false
	for i := range p.nodes {
		pn := &p.nodes[i]
		if pn.where != onGPU {
			continue
		}
		pn.gpu, pn.pinned = 0, false
		if typ, idx := requested(pn.node.Device); typ == "GPU" && idx >= 0 && idx < pl.GPUs {
			pn.gpu, pn.pinned = idx, true
		}
		p.floating = p.floating || !pn.pinned
		p.pinned = p.pinned || pn.pinned
	}
	// Every choice of GPU for the unpinned nodes, made once: the GPU pool
	// asks on every Run.
	p.placed = make([]placedOn, max(pl.GPUs, 1))
	for k := range p.placed {
		p.placed[k].gpus, p.placed[k].nodeGPU = p.placeOn(k)
	}
	p.gpus = p.placed[0].gpus
}

// placedOn is PlaceOn's answer for one GPU.
type placedOn struct{ gpus, nodeGPU []int }

// PlaceOn is where a step of the plan runs when its unpinned GPU nodes
// run on GPU float (0 as placed; the session's GPU pool picks another per
// Run), one of the session's GPUs: the GPUs the step uses, in plan order
// of their first GPU node, the home GPU first; and, per plan index, the
// GPU of each node: a pinned GPU node's own, float for the other GPU
// nodes, home for host nodes and constants. The slices are the plan's:
// callers must not change them.
func (p *Plan) PlaceOn(float int) (gpus []int, nodeGPU []int) {
	if float >= 0 && float < len(p.placed) {
		return p.placed[float].gpus, p.placed[float].nodeGPU
	}
	return p.placeOn(float)
}

func (p *Plan) placeOn(float int) (gpus []int, nodeGPU []int) {
	seen := map[int]bool{}
	nodeGPU = make([]int, len(p.nodes))
	for i := range p.nodes {
		pn := &p.nodes[i]
		if pn.where != onGPU {
			nodeGPU[i] = -1
			continue
		}
		nodeGPU[i] = float
		if pn.pinned {
			nodeGPU[i] = pn.gpu
		}
		if !seen[nodeGPU[i]] {
			seen[nodeGPU[i]] = true
			gpus = append(gpus, nodeGPU[i])
		}
	}
	home := 0
	if len(gpus) > 0 {
		home = gpus[0]
	}
	for i, g := range nodeGPU {
		if g < 0 {
			nodeGPU[i] = home
		}
	}
	return gpus, nodeGPU
}

// Floating reports whether some GPU node of the plan is pinned to no GPU
// by its device annotation: where such nodes run is the session's choice
// (GPU 0 as in TF, or any GPU of its pool).
func (p *Plan) Floating() bool { return p.floating }

// Pinned reports whether some GPU node of the plan is pinned to a GPU by
// its device annotation.
func (p *Plan) Pinned() bool { return p.pinned }

// GPU is the plan's home GPU, among the session's GPUs (0 for the first):
// that of its first GPU node, which takes the feeds in and the fetches
// out when the plan spans several GPUs.
func (p *Plan) GPU() int {
	if len(p.gpus) == 0 {
		return 0
	}
	return p.gpus[0]
}

// GPUs lists the GPUs the plan's GPU nodes run on as placed (PlaceOn(0)),
// the home GPU first.
func (p *Plan) GPUs() []int { return p.gpus }

// NodeGPUs gives, per plan index, the GPU a GPU node runs on as placed,
// and the home GPU for the others (host nodes and constants). The slice
// is the plan's: callers must not change it.
func (p *Plan) NodeGPUs() []int {
	_, out := p.PlaceOn(0)
	return out
}

// bind places plan node i and binds its kernel.
func (p *Plan) bind(i int, pl Placement) error {
	pn := &p.nodes[i]
	n := pn.node
	typ, idx := requested(n.Device)
	if pl.Strict && !pl.AllowSoft {
		if missing := typ == "CPU" && idx > 0 || typ == "GPU" && idx >= pl.GPUs ||
			typ != "" && typ != "CPU" && typ != "GPU"; missing {
			return status.InvalidArg("Cannot assign a device for operation '%s': Could not satisfy explicit device specification '%s' because no devices matching that specification are registered in this process; available devices: the CPU and %d GPU(s)", n.Name, n.Device, pl.GPUs)
		}
	}
	if pl.GPUs == 0 {
		return p.bindOn(i, Device)
	}
	if pn.isConst && typ != "CPU" {
		pn.where, pn.cval = onConst, &constCache{}
		return p.bindOn(i, kernels.CPU)
	}
	if typ == "CPU" || metaOnly[n.Op] && typ == "" {
		return p.bindOn(i, kernels.CPU)
	}
	why := ""
	if typ == "GPU" && idx >= pl.GPUs {
		if !pl.AllowSoft {
			return status.InvalidArg("Cannot assign a device for operation '%s': Could not satisfy explicit device specification '%s' because no devices matching that specification are registered in this process; available devices: %d GPU(s) and the CPU", n.Name, n.Device, pl.GPUs)
		}
	}
	def, err := kernels.Lookup(n, kernels.GPU) // def is nil on an error
	// Host shape arithmetic and host-synchronising kernels over host values
	// move to the host as TF's HostMemory kernels do, but only where the
	// node could have run on the GPU: one pinned there without a GPU
	// kernel, and without soft placement, fails below as in TF.
	if (p.hostShape(i) || p.hostSync(i, def)) && (err == nil || typ != "GPU" || pl.AllowSoft) {
		return p.bindOn(i, kernels.CPU)
	}
	if err == nil && def.DeviceState && pl.HostState {
		return p.bindOn(i, kernels.CPU)
	}
	if err == nil {
		k, ferr := def.Factory(n)
		if ferr == nil {
			pn.kernel, pn.where, pn.fwd = k, onGPU, def.Forwards && len(n.Inputs) > 0 && len(n.OutTypes) == 1
			pn.hostIn = make([]bool, len(n.Inputs))
			for _, name := range def.HostMemory {
				if r, ok := n.InArgs[name]; ok {
					for j := r[0]; j < r[1] && j < len(pn.hostIn); j++ {
						pn.hostIn[j] = true
					}
				}
			}
			return nil
		}
		why = ferr.Error()
	} else {
		why = err.Error()
	}
	if typ == "GPU" && !pl.AllowSoft {
		return status.InvalidArg("Cannot assign a device for operation '%s': Could not satisfy explicit device specification '%s' because no supported kernel for GPU devices is available (%s). Set allow_soft_placement to run it on the CPU", n.Name, n.Device, why)
	}
	if err := p.bindOn(i, kernels.CPU); err != nil {
		return err
	}
	if pl.Log != nil {
		if _, seen := fallbackLogged.LoadOrStore(n.Op, true); !seen {
			pl.Log("op %s runs on the CPU, with copies to and from the GPU (first seen at node '%s': %s)", n.Op, n.Name, why)
		}
	}
	return nil
}

// bindOn binds plan node i to its kernel on device dev (the host device's
// error message when there is none).
func (p *Plan) bindOn(i int, dev string) error {
	pn := &p.nodes[i]
	n := pn.node
	def, err := kernels.Lookup(n, dev)
	if err != nil {
		return status.Errorf(status.InvalidArgument,
			"No OpKernel was registered to support Op '%s' used by node '%s' on %s: %v", n.Op, n.Name, dev, err)
	}
	k, err := def.Factory(n)
	if err != nil {
		code := status.CodeOf(err)
		if code == status.Unknown {
			code = status.InvalidArgument
		}
		return status.Errorf(code, "node '%s' (op %s): %v", n.Name, n.Op, err)
	}
	pn.kernel = k
	return nil
}

// PlacedOn reports, per plan index, "GPU", "CPU" or "Const" (a constant,
// copied to the GPU on first GPU use): for tests and traces.
func (p *Plan) PlacedOn() []string {
	out := make([]string, len(p.nodes))
	for i := range p.nodes {
		switch p.nodes[i].where {
		case onGPU:
			out[i] = "GPU"
		case onConst:
			out[i] = "Const"
		default:
			out[i] = "CPU"
		}
	}
	return out
}

// HostInputs reports which inputs of plan node i stay in host memory on
// its device (all of them for a host node).
func (p *Plan) HostInputs(i int) []bool {
	pn := &p.nodes[i]
	if pn.where != onGPU {
		out := make([]bool, len(pn.inputs))
		for j := range out {
			out[j] = true
		}
		return out
	}
	return append([]bool(nil), pn.hostIn...)
}

// OnGPU reports whether any node of the plan runs on the GPU.
func (p *Plan) OnGPU() bool { return p.gpu }

// Transfer is a copy a placed plan makes between host and GPU memory.
type Transfer struct {
	// From names the value ("node:idx", or the feed's name), To the
	// consuming node and its input.
	From, To string
	Input    int
	// H2D is true for a copy to the GPU, false for one back to the host.
	H2D bool
}

// wantsDevice says whether input j of pn reads device memory: a GPU
// kernel's input that is not HostMemory. mayDevice says a device value is
// taken as it is (a host kernel that reads only the shape).
func (pn *planNode) wantsDevice(j int) (wants, mayDevice bool) {
	if pn.where == onGPU {
		return !pn.hostIn[j], !pn.hostIn[j]
	}
	return false, metaOnly[pn.node.Op]
}

// Transfers lists the copies a GPU step of the plan makes at host<->GPU
// edges, as placed (a constant's first device use comes from the group's
// constant store and is not listed; feeds that GPU kernels read are copied
// in, which is listed with From the feed's name).
func (p *Plan) Transfers() []Transfer {
	var out []Transfer
	for _, i := range p.topo {
		pn := &p.nodes[i]
		if pn.where == onConst {
			continue
		}
		for j, r := range pn.inputs {
			wants, may := pn.wantsDevice(j)
			var from string
			onDev := false
			if r.Node < 0 {
				from = p.feeds[r.Index].String()
			} else {
				src := &p.nodes[r.Node]
				from = fmt.Sprintf("%s:%d", src.node.Name, r.Index)
				if src.where == onConst {
					continue
				}
				onDev = src.where == onGPU
			}
			switch {
			case wants && !onDev:
				out = append(out, Transfer{From: from, To: pn.node.Name, Input: j, H2D: true})
			case !wants && onDev && !may:
				out = append(out, Transfer{From: from, To: pn.node.Name, Input: j})
			}
		}
	}
	return out
}
