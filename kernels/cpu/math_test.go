package cpu

import (
	"encoding/binary"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"mstream/proto/tfpb"
	"mstream/tensor"
)

func TestActivations(t *testing.T) {
	r := newRand(t)
	fs := map[string]func(float64) float64{
		"Relu":    func(x float64) float64 { return math.Max(x, 0) },
		"Sigmoid": func(x float64) float64 { return 1 / (1 + math.Exp(-x)) },
		"Tanh":    math.Tanh,
	}
	for op, f := range fs {
		for _, dt := range floatTypes {
			for _, sh := range []tensor.Shape{{}, {0}, {1}, {7, 3}, {100000}} {
				x, ref := randTensor(r, dt, sh)
				want := make([]float64, len(ref))
				for i, v := range ref {
					want[i] = f(v)
				}
				check(t, op, mustRun(t, node(op, nil, []tensor.DType{dt}, dt), x)[0], sh, want, 1e-3)
			}
		}
	}
	x, ref := randTensor(r, i32, tensor.Shape{9})
	want := make([]float64, 9)
	for i, v := range ref {
		want[i] = math.Max(v, 0)
	}
	check(t, "Relu int32", mustRun(t, node("Relu", nil, []tensor.DType{i32}, i32), x)[0], tensor.Shape{9}, want, 0)
}

func TestSoftmax(t *testing.T) {
	r := newRand(t)
	for _, dt := range floatTypes {
		for _, sh := range []tensor.Shape{{5}, {3, 1}, {4, 7}, {2, 0}, {2, 3, 9}} {
			x, ref := randTensor(r, dt, sh)
			d := int(sh[len(sh)-1])
			want := make([]float64, len(ref))
			for row := 0; d > 0 && row < len(ref)/d; row++ {
				var s float64
				for _, v := range ref[row*d : (row+1)*d] {
					s += math.Exp(v)
				}
				for i := row * d; i < (row+1)*d; i++ {
					want[i] = math.Exp(ref[i]) / s
				}
			}
			check(t, "Softmax", mustRun(t, node("Softmax", nil, []tensor.DType{dt}, dt), x)[0], sh, want, 0.01)
		}
	}
	big := tensor.FromF32(tensor.Shape{2}, []float32{1000, 1000})
	out := mustRun(t, node("Softmax", nil, []tensor.DType{f32}, f32), big)[0].F32()
	if out[0] != 0.5 || out[1] != 0.5 {
		t.Errorf("Softmax([1000,1000]) = %v", out)
	}
}

func TestBiasAdd(t *testing.T) {
	r := newRand(t)
	for _, dt := range []tensor.DType{f32, tensor.Double, tensor.Half, tensor.Bfloat16, i32} {
		for _, format := range []string{"NHWC", "NCHW"} {
			x, rx := randTensor(r, dt, tensor.Shape{2, 3, 4})
			c := int64(4)
			if format == "NCHW" {
				c = 3
			}
			b, rb := randTensor(r, dt, tensor.Shape{c})
			want := make([]float64, len(rx))
			for i := range rx {
				ch := i % 4
				if format == "NCHW" {
					ch = i / 4 % 3
				}
				want[i] = roundTo(dt, rx[i]+rb[ch])
			}
			n := node("BiasAdd", map[string]*tfpb.AttrValue{"data_format": aStr(format)}, []tensor.DType{dt, dt}, dt)
			check(t, "BiasAdd "+format, mustRun(t, n, x, b)[0], tensor.Shape{2, 3, 4}, want, 1)
			_, err := run(t, n, x, tensor.New(dt, tensor.Shape{5}))
			wantErr(t, err, n, "as many biases")
		}
	}
}

// refMatMul is a float64 reference for a batched product with broadcasting.
func refMatMul(a []float64, as tensor.Shape, b []float64, bs tensor.Shape, ta, tb bool) ([]float64, tensor.Shape) {
	ra, rb := len(as), len(bs)
	m, k := as[ra-2], as[ra-1]
	if ta {
		m, k = k, m
	}
	n := bs[rb-1]
	if tb {
		n = bs[rb-2]
	}
	bc, _ := broadcastShapes(as[:ra-2], bs[:rb-2])
	var out []float64
	forEachRow(bc, func(_, ao, bo, cnt, s1, s2 int64) {
		for q := int64(0); q < cnt; q++ {
			A := a[(ao+q*s1)*m*k:]
			B := b[(bo+q*s2)*k*n:]
			for i := int64(0); i < m; i++ {
				for j := int64(0); j < n; j++ {
					var s float64
					for p := int64(0); p < k; p++ {
						var x, y float64
						if ta {
							x = A[p*m+i]
						} else {
							x = A[i*k+p]
						}
						if tb {
							y = B[j*k+p]
						} else {
							y = B[p*n+j]
						}
						s += x * y
					}
					out = append(out, s)
				}
			}
		}
	})
	if bc.out.NumElements() == 0 {
		out = make([]float64, 0)
	}
	return out, append(bc.out.Clone(), m, n)
}

func TestMatMul(t *testing.T) {
	r := newRand(t)
	for _, dt := range []tensor.DType{f32, tensor.Double, tensor.Half, tensor.Bfloat16, i32, i64} {
		for _, mnk := range [][3]int64{{1, 1, 1}, {3, 5, 7}, {0, 4, 3}, {4, 3, 0}, {65, 33, 130}} {
			for _, ta := range []bool{false, true} {
				for _, tb := range []bool{false, true} {
					m, n, k := mnk[0], mnk[1], mnk[2]
					as, bs := tensor.Shape{m, k}, tensor.Shape{k, n}
					if ta {
						as = tensor.Shape{k, m}
					}
					if tb {
						bs = tensor.Shape{n, k}
					}
					a, ra := randTensor(r, dt, as)
					b, rb := randTensor(r, dt, bs)
					want, shape := refMatMul(ra, as, rb, bs, ta, tb)
					for i := range want {
						want[i] = roundTo(dt, want[i])
					}
					nd := node("MatMul", map[string]*tfpb.AttrValue{"transpose_a": aBool(ta), "transpose_b": aBool(tb)}, []tensor.DType{dt, dt}, dt)
					check(t, "MatMul", mustRun(t, nd, a, b)[0], shape, want, 9*math.Sqrt(float64(k)+1))
				}
			}
		}
	}
	nd := node("MatMul", nil, []tensor.DType{f32, f32}, f32)
	_, err := run(t, nd, tensor.New(f32, tensor.Shape{2, 3}), tensor.New(f32, tensor.Shape{2, 3}))
	wantErr(t, err, nd, "Matrix size-incompatible")
}

func TestBatchMatMul(t *testing.T) {
	r := newRand(t)
	cases := [][2]tensor.Shape{{{2, 3, 4}, {2, 4, 5}}, {{3, 4}, {2, 4, 5}}, {{2, 1, 3, 4}, {3, 4, 2}}, {{0, 3, 4}, {4, 2}}}
	for _, op := range []string{"BatchMatMulV2", "BatchMatMulV3"} {
		for _, dt := range []tensor.DType{f32, tensor.Double, tensor.Half} {
			for _, c := range cases {
				for _, adj := range [][2]bool{{false, false}, {true, true}} {
					as, bs := c[0].Clone(), c[1].Clone()
					if adj[0] {
						as[len(as)-1], as[len(as)-2] = as[len(as)-2], as[len(as)-1]
					}
					if adj[1] {
						bs[len(bs)-1], bs[len(bs)-2] = bs[len(bs)-2], bs[len(bs)-1]
					}
					a, ra := randTensor(r, dt, as)
					b, rb := randTensor(r, dt, bs)
					want, shape := refMatMul(ra, as, rb, bs, adj[0], adj[1])
					attrs := map[string]*tfpb.AttrValue{"adj_x": aBool(adj[0]), "adj_y": aBool(adj[1])}
					if op == "BatchMatMulV3" {
						attrs["Ta"], attrs["Tb"], attrs["Tout"] = aType(dt), aType(dt), aType(dt)
					}
					nd := node(op, attrs, []tensor.DType{dt, dt}, dt)
					check(t, op, mustRun(t, nd, a, b)[0], shape, want, 30)
				}
			}
		}
	}
	nd := node("BatchMatMulV2", nil, []tensor.DType{f32, f32}, f32)
	_, err := run(t, nd, tensor.New(f32, tensor.Shape{2, 3, 4}), tensor.New(f32, tensor.Shape{3, 4, 5}))
	wantErr(t, err, nd, "compatible batch dimensions")
}

// TestMatMulNumPy compares MatMul with numpy.matmul on the same data.
func TestMatMulNumPy(t *testing.T) {
	py := "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		t.Skip("python3 not installed")
	}
	if exec.Command(py, "-c", "import numpy").Run() != nil {
		t.Skip("numpy not installed")
	}
	r := newRand(t)
	m, n, k := int64(37), int64(53), int64(129)
	a, _ := randTensor(r, f32, tensor.Shape{k, m})
	b, _ := randTensor(r, f32, tensor.Shape{k, n})
	dir := t.TempDir()
	for name, x := range map[string]*tensor.Tensor{"a": a, "b": b} {
		if err := os.WriteFile(filepath.Join(dir, name), x.Buf, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	nd := node("MatMul", map[string]*tfpb.AttrValue{"transpose_a": aBool(true)}, []tensor.DType{f32, f32}, f32)
	got := mustRun(t, nd, a, b)[0]
	script := `import numpy as np, sys
d = sys.argv[1]
a = np.fromfile(d + "/a", dtype="<f4").reshape(129, 37).astype(np.float64)
b = np.fromfile(d + "/b", dtype="<f4").reshape(129, 53).astype(np.float64)
(a.T @ b).astype("<f8").tofile(d + "/c")`
	if out, err := exec.Command(py, "-c", script, dir).CombinedOutput(); err != nil {
		t.Fatalf("numpy: %v\n%s", err, out)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "c"))
	if err != nil {
		t.Fatal(err)
	}
	want := make([]float64, m*n)
	for i := range want {
		want[i] = math.Float64frombits(binary.LittleEndian.Uint64(raw[i*8:]))
	}
	check(t, "MatMul vs numpy", got, tensor.Shape{m, n}, want, 30)
}
