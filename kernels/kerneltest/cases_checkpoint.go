package kerneltest

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"

	"mstream/checkpoint"
	"mstream/status"
	"mstream/tensor"
)

// The save/restore kernels touch files: each generator call makes its own
// directory under the system's temporary directory and writes or reads
// checkpoints there. The reference for what a checkpoint holds is package
// checkpoint, whose files session's TestSaveRestoreLikeTF and checkpoint's
// own tests compare byte for byte with TF's.

func ckptDir() string {
	d, err := os.MkdirTemp("", "kerneltest-ckpt")
	if err != nil {
		panic(err)
	}
	return d
}

func strs(v ...string) *tensor.Tensor { return tensor.FromStrings(tensor.Shape{int64(len(v))}, v) }

func scalarStr(s string) *tensor.Tensor { return tensor.FromStrings(nil, []string{s}) }

// randCkptTensors draws k named tensors of every dtype a bundle holds.
func randCkptTensors(r *rand.Rand, k int) ([]string, []*tensor.Tensor) {
	types := append(append([]tensor.DType{}, MoveTypes...), tensor.String, tensor.Uint16, tensor.Uint32, tensor.Uint64)
	var names []string
	var ts []*tensor.Tensor
	for i := 0; i < k; i++ {
		dt := types[r.Intn(len(types))]
		s := EdgeShapes[r.Intn(len(EdgeShapes))]
		if dt == tensor.String {
			ts = append(ts, RandStrings(r, s))
		} else {
			ts = append(ts, Rand(r, dt, s))
		}
		names = append(names, fmt.Sprintf("v%d/%s", i, dt))
	}
	return names, ts
}

func sameBits(a, b *tensor.Tensor) error {
	if a.DType != b.DType || !a.Shape.Equal(b.Shape) {
		return fmt.Errorf("%v vs %v", a, b)
	}
	if a.DType == tensor.String {
		for i := range a.Strs {
			if string(a.Strs[i]) != string(b.Strs[i]) {
				return fmt.Errorf("element %d: %q vs %q", i, a.Strs[i], b.Strs[i])
			}
		}
		return nil
	}
	if string(a.Buf) != string(b.Buf) {
		return fmt.Errorf("%v: bytes differ", a)
	}
	return nil
}

func init() {
	Add("SaveV2", func(r *rand.Rand) []Case {
		dir := ckptDir()
		var cs []Case
		for c := 0; c < 4; c++ {
			names, ts := randCkptTensors(r, 1+r.Intn(6))
			prefix := filepath.Join(dir, fmt.Sprintf("save%d", c))
			specs := make([]string, len(names))
			in := append([]*tensor.Tensor{scalarStr(prefix), strs(names...), strs(specs...)}, ts...)
			var dts []tensor.DType
			for _, t := range ts {
				dts = append(dts, t.DType)
			}
			cs = append(cs, Case{
				Node:   NodeFor("SaveV2", Attrs{"dtypes": ATypes(dts...)}, in, map[int]int{3: len(ts)}),
				Inputs: in,
				Check: func([]*tensor.Tensor) error {
					rd, err := checkpoint.Open(prefix)
					if err != nil {
						return err
					}
					defer rd.Close()
					for i, n := range names {
						got, err := rd.Lookup(n)
						if err != nil {
							return err
						}
						if err := sameBits(got, ts[i]); err != nil {
							return fmt.Errorf("%s: %v", n, err)
						}
					}
					return nil
				},
			})
		}
		// Two names for one tensor, and a slice that is not the tensor's.
		x := Rand(r, tensor.Float, tensor.Shape{4, 3})
		bad := []*tensor.Tensor{scalarStr(filepath.Join(dir, "bad")), strs("a", "b"), strs("", ""), x}
		cs = append(cs, Case{Node: NodeForUnknown("SaveV2", Attrs{"dtypes": ATypes(tensor.Float)}, bad, map[int]int{3: 1}), Inputs: bad, Err: status.InvalidArgument})
		bad = []*tensor.Tensor{scalarStr(filepath.Join(dir, "bad")), strs("a"), strs("4 3 0,2:-"), x}
		cs = append(cs, Case{Node: NodeForUnknown("SaveV2", Attrs{"dtypes": ATypes(tensor.Float)}, bad, map[int]int{3: 1}), Inputs: bad, Err: status.InvalidArgument, ErrMsg: "does not match"})
		bad = []*tensor.Tensor{scalarStr(filepath.Join(dir, "no", "such", "x")), strs("a"), strs(""), x}
		cs = append(cs, Case{Node: NodeForUnknown("SaveV2", Attrs{"dtypes": ATypes(tensor.Float)}, bad, map[int]int{3: 1}), Inputs: bad, Err: status.NotFound})
		return cs
	})
	Add("RestoreV2", func(r *rand.Rand) []Case {
		dir := ckptDir()
		prefix := filepath.Join(dir, "ckpt")
		names, ts := randCkptTensors(r, 8)
		full := Rand(r, tensor.Int64, tensor.Shape{5, 3})
		w, err := checkpoint.NewWriter(prefix)
		if err == nil {
			for i, n := range names {
				if err = w.Add(n, ts[i]); err != nil {
					break
				}
			}
			if err == nil {
				err = w.Add("full", full)
			}
		}
		if err == nil {
			err = w.Finish()
		}
		if err != nil {
			panic(err)
		}
		var cs []Case
		for c := 0; c < 4; c++ {
			var pick []string
			var want []*tensor.Tensor
			var dts []tensor.DType
			for i, n := range names {
				if r.Intn(2) == 0 {
					pick, want, dts = append(pick, n), append(want, ts[i]), append(dts, ts[i].DType)
				}
			}
			if len(pick) == 0 {
				pick, want, dts = names[:1], ts[:1], []tensor.DType{ts[0].DType}
			}
			in := []*tensor.Tensor{scalarStr(prefix), strs(pick...), strs(make([]string, len(pick))...)}
			cs = append(cs, Case{Node: NodeFor("RestoreV2", Attrs{"dtypes": ATypes(dts...)}, in, nil), Inputs: in, Want: want})
		}
		// Rows 1..3 and column 2 of a saved 5x3 tensor.
		in := []*tensor.Tensor{scalarStr(prefix), strs("full", "full"), strs("5 3 1,3:-", "5 3 -:2,1")}
		rows := tensor.FromI64(tensor.Shape{3, 3}, full.I64()[3:12])
		col := tensor.New(tensor.Int64, tensor.Shape{5, 1})
		for i := range col.I64() {
			col.I64()[i] = full.I64()[i*3+2]
		}
		cs = append(cs, Case{Node: NodeForUnknown("RestoreV2", Attrs{"dtypes": ATypes(tensor.Int64, tensor.Int64)}, in, nil), Inputs: in, Want: []*tensor.Tensor{rows, col}})
		errCase := func(p string, name, spec string, dt tensor.DType, code status.Code, msg string) Case {
			in := []*tensor.Tensor{scalarStr(p), strs(name), strs(spec)}
			return Case{Node: NodeForUnknown("RestoreV2", Attrs{"dtypes": ATypes(dt)}, in, nil), Inputs: in, Err: code, ErrMsg: msg}
		}
		cs = append(cs,
			errCase(prefix, "nope", "", tensor.Float, status.NotFound, "nope"),
			errCase(prefix, "full", "", tensor.Int32, status.InvalidArgument, "expected dtype int32"),
			errCase(filepath.Join(dir, "none"), "full", "", tensor.Int64, status.NotFound, "none"),
			errCase(prefix, "full", "5 3 0,9:-", tensor.Int64, status.Internal, "out of bounds"),
			errCase(prefix, "full", "4 3 -:-", tensor.Int64, status.InvalidArgument, "does not match"),
			errCase(prefix, "full", "5 3 x", tensor.Int64, status.InvalidArgument, "'x'"),
		)
		return cs
	})
	Add("MergeV2Checkpoints", func(r *rand.Rand) []Case {
		dir := ckptDir()
		var prefixes []string
		all := map[string]*tensor.Tensor{}
		for p := 0; p < 3; p++ {
			prefix := filepath.Join(dir, fmt.Sprintf("tmp%d", p), "part")
			w, err := checkpoint.NewWriter(prefix)
			if err != nil {
				panic(err)
			}
			names, ts := randCkptTensors(r, 1+r.Intn(3))
			for i, n := range names {
				n = fmt.Sprintf("p%d/%s", p, n)
				all[n] = ts[i]
				if err := w.Add(n, ts[i]); err != nil {
					panic(err)
				}
			}
			if err := w.Finish(); err != nil {
				panic(err)
			}
			prefixes = append(prefixes, prefix)
		}
		merged := filepath.Join(dir, "merged")
		in := []*tensor.Tensor{strs(prefixes...), scalarStr(merged)}
		missing := []*tensor.Tensor{strs(filepath.Join(dir, "none")), scalarStr(filepath.Join(dir, "m2"))}
		return []Case{
			{
				Node:   NodeFor("MergeV2Checkpoints", Attrs{"delete_old_dirs": ABool(true)}, in, nil),
				Inputs: in,
				Check: func([]*tensor.Tensor) error {
					rd, err := checkpoint.Open(merged)
					if err != nil {
						return err
					}
					defer rd.Close()
					if len(rd.Keys()) != len(all) {
						return fmt.Errorf("merged %d keys, want %d", len(rd.Keys()), len(all))
					}
					for n, want := range all {
						got, err := rd.Lookup(n)
						if err != nil {
							return err
						}
						if err := sameBits(got, want); err != nil {
							return fmt.Errorf("%s: %v", n, err)
						}
					}
					if _, err := os.Stat(filepath.Dir(prefixes[0])); err == nil {
						return fmt.Errorf("delete_old_dirs left %s", filepath.Dir(prefixes[0]))
					}
					return nil
				},
			},
			{Node: NodeFor("MergeV2Checkpoints", nil, missing, nil), Inputs: missing, Err: status.InvalidArgument, ErrMsg: "did not exist"},
		}
	})
	Add("ShardedFilename", func(r *rand.Rand) []Case {
		var cs []Case
		for _, v := range [][2]int32{{0, 1}, {3, 12}, {int32(r.Intn(100000)), 100000}, {-1, 7}} {
			in := []*tensor.Tensor{scalarStr("dir/base"), tensor.ScalarI32(v[0]), tensor.ScalarI32(v[1])}
			cs = append(cs, Case{Node: NodeFor("ShardedFilename", nil, in, nil), Inputs: in,
				Want: []*tensor.Tensor{scalarStr(fmt.Sprintf("dir/base-%05d-of-%05d", v[0], v[1]))}})
		}
		bad := []*tensor.Tensor{strs("a"), tensor.ScalarI32(1), tensor.ScalarI32(2)}
		cs = append(cs, Case{Node: NodeForUnknown("ShardedFilename", nil, bad, nil), Inputs: bad, Err: status.InvalidArgument, ErrMsg: "basename must be a scalar"})
		return cs
	})
	Add("ShardedFilespec", func(r *rand.Rand) []Case {
		n := int32(1 + r.Intn(1000))
		in := []*tensor.Tensor{scalarStr("b"), tensor.ScalarI32(n)}
		bad := []*tensor.Tensor{scalarStr("b"), tensor.FromI32(tensor.Shape{1}, []int32{2})}
		return []Case{
			{Node: NodeFor("ShardedFilespec", nil, in, nil), Inputs: in, Want: []*tensor.Tensor{scalarStr(fmt.Sprintf("b-?????-of-%05d", n))}},
			{Node: NodeForUnknown("ShardedFilespec", nil, bad, nil), Inputs: bad, Err: status.InvalidArgument, ErrMsg: "num_shards must be a scalar"},
		}
	})
}
