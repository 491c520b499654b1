package kerneltest

import (
	"fmt"
	"math/rand"

	"mstream/status"
	"mstream/tensor"
)

// FakeQuantWithMinMaxArgs/Vars/VarsPerChannel against a NumPy model of
// TF's functors in float32, one rounding per operation (so the expected
// values are exact), and BatchNormWithGlobalNormalization against its
// formula in float64.

// fakeQuantPy defines fq(x, lo, hi, bits, narrow, div) in g.
const fakeQuantPy = `
import math
import numpy as np
f = np.float32
def nudge(lo, hi, qmin, qmax):
    qlo, qhi = f(qmin), f(qmax)
    scale = f((hi - lo) / f(qhi - qlo))
    inv = f(f(qhi - qlo) / f(hi - lo))
    zp_min = f(qlo - f(lo / scale))
    if zp_min < qlo:
        zp = qmin
    elif zp_min > qhi:
        zp = qmax
    else:
        zp = int(math.floor(abs(float(zp_min)) + 0.5)) * (1 if zp_min >= 0 else -1)
    nmin = f(f(qlo - f(zp)) * scale)
    nmax = f(f(qhi - f(zp)) * scale)
    qz = f(np.floor(f(f(-nmin * inv) + f(0.5))))
    return nmin, nmax, scale, inv, qz
def fq(x, lo, hi, bits, narrow, div):
    x = np.asarray(x, f)
    lo, hi = np.atleast_1d(np.asarray(lo, f)), np.atleast_1d(np.asarray(hi, f))
    qmin, qmax = (1 if narrow else 0), 2 ** bits - 1
    d = lo.shape[0]
    xs = x.reshape(-1, d)
    out = np.zeros_like(xs)
    for c in range(d):
        if lo[c] == 0 and hi[c] == 0 and div is not None:
            continue
        nmin, nmax, scale, inv, qz = nudge(lo[c], hi[c], qmin, qmax)
        v = np.minimum(xs[:, c], nmax)
        v = np.maximum(v, nmin)
        s = (v - nmin).astype(f)
        q = (s / scale).astype(f) if div else (s * inv).astype(f)
        q = ((q - qz).astype(f) + f(0.5)).astype(f)
        out[:, c] = (np.floor(q) * scale).astype(f)
    return out.reshape(x.shape)
`

// fqExpr is the NumPy expression calling fq on the case's inputs. div is
// "True" (Vars), "False" (PerChannel) or "None" (Args: no zero case).
func fqExpr(lo, hi string, bits int64, narrow bool, div string) string {
	nr := "False"
	if narrow {
		nr = "True"
	}
	return fmt.Sprintf("(lambda g: (exec(%q, g), g['fq'](a0, %s, %s, %d, %s, %s))[1])({})", fakeQuantPy, lo, hi, bits, nr, div)
}

func init() {
	Add("FakeQuantWithMinMaxArgs", func(r *rand.Rand) []Case {
		var cs []Case
		for _, s := range []tensor.Shape{{}, {7}, {3, 50}, {0, 4}} {
			for _, bits := range []int64{2, 8, 16} {
				narrow := r.Intn(2) == 0
				lo, hi := -float32(r.Intn(13))/2, float32(1+r.Intn(12))/2
				x := RandRange(r, tensor.Float, s, -8, 8)
				at := Attrs{"min": AFloat(lo), "max": AFloat(hi), "num_bits": AInt(bits), "narrow_range": ABool(narrow)}
				cs = append(cs, Case{Node: NodeFor("FakeQuantWithMinMaxArgs", at, ins(x), nil), Inputs: ins(x),
					NumPy: fqExpr(fmt.Sprint(lo), fmt.Sprint(hi), bits, narrow, "None"), Tol: 1e-7})
			}
		}
		x := RandRange(r, tensor.Float, tensor.Shape{4}, -1, 1)
		bad(&cs, "FakeQuantWithMinMaxArgs", Attrs{"min": AFloat(1), "max": AFloat(1)}, ins(x), nil, status.InvalidArgument)
		bad(&cs, "FakeQuantWithMinMaxArgs", Attrs{"num_bits": AInt(1)}, ins(x), nil, status.InvalidArgument)
		return cs
	})
	Add("FakeQuantWithMinMaxVars", func(r *rand.Rand) []Case {
		var cs []Case
		for _, s := range []tensor.Shape{{}, {9}, {4, 33}, {2, 0}} {
			for _, mm := range [][2]float32{{-6, 6}, {-0.3, 1.7}, {0, 0}, {-2.5, 0}, {0.5, 3}} {
				bits := []int64{4, 8, 13}[r.Intn(3)]
				narrow := r.Intn(2) == 0
				x := RandRange(r, tensor.Float, s, -8, 8)
				in := ins(x, FromF32(tensor.Shape{}, mm[0]), FromF32(tensor.Shape{}, mm[1]))
				at := Attrs{"num_bits": AInt(bits), "narrow_range": ABool(narrow)}
				cs = append(cs, Case{Node: NodeFor("FakeQuantWithMinMaxVars", at, in, nil), Inputs: in,
					NumPy: fqExpr("a1", "a2", bits, narrow, "True"), Tol: 1e-7})
			}
		}
		x := RandRange(r, tensor.Float, tensor.Shape{4}, -1, 1)
		bad(&cs, "FakeQuantWithMinMaxVars", nil, ins(x, FromF32(tensor.Shape{1}, -1), FromF32(tensor.Shape{}, 1)), nil, status.InvalidArgument)
		bad(&cs, "FakeQuantWithMinMaxVars", Attrs{"num_bits": AInt(17)}, ins(x, FromF32(tensor.Shape{}, -1), FromF32(tensor.Shape{}, 1)), nil, status.InvalidArgument)
		return cs
	})
	Add("FakeQuantWithMinMaxVarsPerChannel", func(r *rand.Rand) []Case {
		var cs []Case
		for _, s := range []tensor.Shape{{5}, {3, 4}, {2, 3, 7}, {0, 6}} {
			d := s[len(s)-1]
			lo, hi := make([]float32, d), make([]float32, d)
			for c := range lo {
				lo[c], hi[c] = -float32(r.Intn(9))/2, float32(r.Intn(9))/2+0.25
				if c == 1 {
					lo[c], hi[c] = 0, 0
				}
			}
			bits := []int64{3, 8, 16}[r.Intn(3)]
			narrow := r.Intn(2) == 0
			x := RandRange(r, tensor.Float, s, -6, 6)
			in := ins(x, FromF32(tensor.Shape{d}, lo...), FromF32(tensor.Shape{d}, hi...))
			at := Attrs{"num_bits": AInt(bits), "narrow_range": ABool(narrow)}
			cs = append(cs, Case{Node: NodeFor("FakeQuantWithMinMaxVarsPerChannel", at, in, nil), Inputs: in,
				NumPy: fqExpr("a1", "a2", bits, narrow, "False"), Tol: 1e-7})
		}
		x := RandRange(r, tensor.Float, tensor.Shape{2, 3}, -1, 1)
		bad(&cs, "FakeQuantWithMinMaxVarsPerChannel", nil, ins(x, FromF32(tensor.Shape{2}, -1, -1), FromF32(tensor.Shape{3}, 1, 1, 1)), nil, status.InvalidArgument)
		bad(&cs, "FakeQuantWithMinMaxVarsPerChannel", nil, ins(x, FromF32(tensor.Shape{}, -1), FromF32(tensor.Shape{3}, 1, 1, 1)), nil, status.InvalidArgument)
		return cs
	})
	Add("BatchNormWithGlobalNormalization", func(r *rand.Rand) []Case {
		var cs []Case
		for _, dt := range []tensor.DType{tensor.Float, tensor.Half, tensor.Double} {
			for _, s := range []tensor.Shape{{2, 3, 4, 5}, {1, 1, 1, 3}, {0, 2, 2, 4}} {
				for _, scale := range []bool{false, true} {
					d := tensor.Shape{s[3]}
					in := ins(RandRange(r, dt, s, -2, 2), RandRange(r, dt, d, -1, 1), RandRange(r, dt, d, 0.1, 2),
						RandRange(r, dt, d, -1, 1), RandRange(r, dt, d, 0.5, 1.5))
					g := "1"
					if scale {
						g = "a4.astype(np.float64)"
					}
					at := Attrs{"variance_epsilon": AFloat(0.001), "scale_after_normalization": ABool(scale)}
					cs = append(cs, Case{Node: NodeFor("BatchNormWithGlobalNormalization", at, in, nil), Inputs: in,
						NumPy: fmt.Sprintf("(a0.astype(np.float64) - a1) / np.sqrt(a2.astype(np.float64) + np.float32(0.001)) * %s + a3", g),
						Tol:   2 * Tol(dt)})
				}
			}
		}
		x := RandRange(r, tensor.Float, tensor.Shape{2, 3, 4}, -1, 1)
		v := RandRange(r, tensor.Float, tensor.Shape{4}, 0.5, 1)
		at := Attrs{"variance_epsilon": AFloat(0.001), "scale_after_normalization": ABool(true)}
		bad(&cs, "BatchNormWithGlobalNormalization", at, ins(x, v, v, v, v), nil, status.InvalidArgument)
		x4 := RandRange(r, tensor.Float, tensor.Shape{1, 2, 3, 4}, -1, 1)
		bad(&cs, "BatchNormWithGlobalNormalization", at, ins(x4, v, RandRange(r, tensor.Float, tensor.Shape{3}, 0.5, 1), v, v), nil, status.InvalidArgument)
		return cs
	})
}

// FromF32 is tensor.FromF32 with the values listed.
func FromF32(s tensor.Shape, v ...float32) *tensor.Tensor { return tensor.FromF32(s, v) }
