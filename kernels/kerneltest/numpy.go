package kerneltest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"mstream/tensor"
)

// Python is the interpreter with NumPy used for references.
var Python = func() string {
	if p := os.Getenv("KERNELTEST_PYTHON"); p != "" {
		return p
	}
	if _, err := os.Stat("/usr/bin/python3"); err == nil {
		return "/usr/bin/python3"
	}
	return "python3"
}()

var npTypes = map[tensor.DType]string{
	tensor.Float: "<f4", tensor.Double: "<f8", tensor.Half: "<f2",
	tensor.Int32: "<i4", tensor.Int64: "<i8", tensor.Int16: "<i2", tensor.Int8: "i1",
	tensor.Uint8: "u1", tensor.Uint16: "<u2", tensor.Uint32: "<u4", tensor.Uint64: "<u8",
	tensor.Bool: "?",
}

// The helper reads raw input files and a manifest, evaluates each
// expression and writes every output as float64 (or int64/bool raw) with
// its shape. bfloat16 inputs travel as float32.
const npScript = `
import json, sys, numpy as np
d = sys.argv[1]
man = json.load(open(d + "/in.json"))
res = []
for ci, c in enumerate(man):
    env = {"np": np}
    for j, a in enumerate(c["inputs"]):
        env["a%d" % j] = np.fromfile(d + "/%d_%d.bin" % (ci, j), dtype=a["dtype"]).reshape(a["shape"])
    try:
        with np.errstate(all="ignore"):
            v = eval(c["expr"], env)
    except Exception as e:
        shapes = [list(env["a%d" % j].shape) for j in range(len(c["inputs"]))]
        raise SystemExit("case %d %r on shapes %s: %s: %s" % (ci, c["expr"], shapes, type(e).__name__, e))
    if not isinstance(v, tuple):
        v = (v,)
    outs = []
    for k, o in enumerate(v):
        o = np.asarray(o)
        kind = "b" if o.dtype == np.bool_ else ("i" if o.dtype.kind in "iu" else "f")
        arr = o.astype({"b": np.bool_, "i": np.int64, "f": np.float64}[kind])
        arr.tofile(d + "/%d_out%d.bin" % (ci, k))
        outs.append({"kind": kind, "shape": list(o.shape)})
    res.append(outs)
json.dump(res, open(d + "/out.json", "w"))
`

type npInput struct {
	DType string  `json:"dtype"`
	Shape []int64 `json:"shape"`
}

type npCase struct {
	Expr   string    `json:"expr"`
	Inputs []npInput `json:"inputs"`
}

type npOut struct {
	Kind  string  `json:"kind"`
	Shape []int64 `json:"shape"`
}

// evalNumPy fills Want of every case from its NumPy expression.
func evalNumPy(cases []*Case) error {
	dir, err := os.MkdirTemp("", "kerneltest")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	man := make([]npCase, len(cases))
	for ci, c := range cases {
		man[ci].Expr = c.NumPy
		for j, in := range c.Inputs {
			src := in
			if in.DType == tensor.Bfloat16 {
				src = Map(in, tensor.Float, func(v float64) float64 { return v })
			}
			nt, ok := npTypes[src.DType]
			if !ok {
				return fmt.Errorf("case %q: dtype %v has no NumPy form", c.NumPy, in.DType)
			}
			shape := []int64(src.Shape)
			if shape == nil {
				shape = []int64{}
			}
			man[ci].Inputs = append(man[ci].Inputs, npInput{nt, shape})
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%d_%d.bin", ci, j)), src.Buf, 0o644); err != nil {
				return err
			}
		}
	}
	b, _ := json.Marshal(man)
	if err := os.WriteFile(filepath.Join(dir, "in.json"), b, 0o644); err != nil {
		return err
	}
	cmd := exec.Command(Python, "-c", npScript, dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %v: %s", Python, err, stderr.String())
	}
	b, err = os.ReadFile(filepath.Join(dir, "out.json"))
	if err != nil {
		return err
	}
	var res [][]npOut
	if err := json.Unmarshal(b, &res); err != nil {
		return err
	}
	for ci, c := range cases {
		outs := res[ci]
		if len(outs) != len(c.Node.OutTypes) {
			return fmt.Errorf("case %q gives %d outputs, node %s has %d", c.NumPy, len(outs), c.Node.Op, len(c.Node.OutTypes))
		}
		c.Want = make([]*tensor.Tensor, len(outs))
		for k, o := range outs {
			raw, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("%d_out%d.bin", ci, k)))
			if err != nil {
				return err
			}
			var src *tensor.Tensor
			switch o.Kind {
			case "b":
				src = &tensor.Tensor{DType: tensor.Bool, Shape: o.Shape, Buf: raw}
			case "i":
				src = tensor.New(tensor.Int64, o.Shape)
				copy(src.Buf, raw)
				if dt := c.Node.OutTypes[k]; dt.IsInteger() {
					// Integers wrap exactly as NumPy and TF do; a trip
					// through float64 would round above 2^53 and leave
					// negative-to-unsigned conversions undefined.
					c.Want[k] = wrapInts(src.I64(), dt, o.Shape)
					continue
				}
			default:
				src = tensor.New(tensor.Double, o.Shape)
				copy(src.Buf, raw)
			}
			c.Want[k] = Map(src, c.Node.OutTypes[k], func(v float64) float64 { return v })
		}
	}
	return nil
}

// wrapInts converts int64 values to dt with two's-complement wrapping.
func wrapInts(v []int64, dt tensor.DType, shape tensor.Shape) *tensor.Tensor {
	t := tensor.New(dt, shape)
	for i, x := range v {
		switch dt {
		case tensor.Int32:
			t.I32()[i] = int32(x)
		case tensor.Int64:
			t.I64()[i] = x
		case tensor.Int16:
			t.I16()[i] = int16(x)
		case tensor.Int8:
			t.I8()[i] = int8(x)
		case tensor.Uint8:
			t.U8()[i] = uint8(x)
		case tensor.Uint16:
			t.U16()[i] = uint16(x)
		case tensor.Uint32:
			t.U32()[i] = uint32(x)
		case tensor.Uint64:
			t.U64()[i] = uint64(x)
		}
	}
	return t
}
