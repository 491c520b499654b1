package exec

import (
	"fmt"

	"mstream/kernels"
)

// HostSyncs lists the points where a device step of the placed plan
// blocks its launching goroutine until a stream has caught up: each
// device value that a host kernel or a GPU kernel's HostMemory input
// reads (gstep.hostOf copies it back once per step and waits for the
// copy), and each GPU kernel that reads its device values back while it
// runs (kernels.Def.SyncsHost: Where, Unique). A step with none launches
// everything and waits once, at its end. Values the host holds (hostHeld:
// feeds, constants, host outputs, their forwards on the GPU) and values
// only a shape is read from (metaOnly) are not listed: they never wait.
func (p *Plan) HostSyncs() []string {
	var out []string
	read := map[ref]bool{}
	for _, i := range p.topo {
		pn := &p.nodes[i]
		n := pn.node
		if pn.where == onConst {
			continue
		}
		for j, r := range pn.inputs {
			if p.hostHeld(r) || read[r] {
				continue
			}
			if wants, may := pn.wantsDevice(j); !wants && !may {
				read[r] = true
				out = append(out, fmt.Sprintf("%s:%d read on the host by '%s' (op %s) input %d", p.nodes[r.Node].node.Name, r.Index, n.Name, n.Op, j))
			}
		}
		if pn.where == onGPU {
			if def, err := kernels.Lookup(n, kernels.GPU); err == nil && def.SyncsHost {
				out = append(out, fmt.Sprintf("'%s' (op %s) reads its device values back as it runs", n.Name, n.Op))
			}
		}
	}
	return out
}
