package cuda

import (
	cu "mstream/device/cuda"
	"mstream/graph"
	"mstream/kernels"
	"mstream/kernels/cpu"
	"mstream/tensor"
)

// _MstreamGatherN, package optimize's merge of sibling GatherV2s along
// axis 0 (DLRM's embedding lookups): array.cu's gathern_ gathers up to
// gathersPerLaunch pairs a launch, a grid row each, where GatherV2 is a
// launch per pair. Each pair is checked by cpu.GatherArgs under the
// GatherV2 it replaced (cpu.GatherNMembers), so a bad shape names that
// node; an index out of range gives zeros, as gather_ and TF's GPU kernel.
func init() {
	reg("_MstreamGatherN", "Tparams", fixedTypes, nil, func(n *graph.Node) (kernels.Kernel, error) {
		g, err := cpu.NewGatherN(n)
		if err != nil {
			return nil, err
		}
		return fn(func(k kctx) error { return gatherN(k, g) })(n)
	})
}

// gathersPerLaunch is how many pairs array.cu's GatherN32 carries.
const gathersPerLaunch = 32

func gatherN(k kctx, gn *cpu.GatherN) error {
	// Shapes, checked and allocated per pair under its member's name.
	err := gn.Each(k.Context, func(sub *kernels.Context) error {
		_, _, out, err := cpu.GatherArgs(sub, 0, nil)
		if err != nil {
			return err
		}
		_, err = sub.Allocate(0, out)
		return err
	})
	if err != nil {
		return err
	}
	np := gn.Len()
	dt := k.Node.OutTypes[0]
	is := "i32"
	if k.Input(np).DType == tensor.Int64 {
		is = "i64"
	}
	name := "gathern_" + sizeName(dt) + "_" + is
	// GatherN32: o[32], p[32], idx[32], then limit[32], inner[32], n[32].
	var g [6 * gathersPerLaunch]int64
	q, most := 0, int64(0)
	flush := func() error {
		if q == 0 {
			return nil
		}
		var args cu.Args
		args.I64s(g[:]...)
		err := k.launchRows(arrays, name, q, most, &args)
		g, q, most = [6 * gathersPerLaunch]int64{}, 0, 0
		return err
	}
	for i := 0; i < np; i++ {
		p, o := k.Input(i), k.Outputs[i]
		total := o.NumElements()
		if total == 0 {
			continue
		}
		inner := int64(1)
		for _, d := range p.Shape[1:] {
			inner *= d
		}
		if q == gathersPerLaunch {
			if err := flush(); err != nil {
				return err
			}
		}
		g[q], g[gathersPerLaunch+q], g[2*gathersPerLaunch+q] = int64(ptr(o)), int64(ptr(p)), int64(ptr(k.Input(np+i)))
		g[3*gathersPerLaunch+q], g[4*gathersPerLaunch+q], g[5*gathersPerLaunch+q] = p.Shape[0], inner, total
		q++
		most = max(most, total)
	}
	return flush()
}
