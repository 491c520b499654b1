package grad_test

import (
	"fmt"
	"math"
	"math/rand"
	"strings"
	"testing"

	"mstream/grad"
	"mstream/graph"
	"mstream/session"
	"mstream/status"
	"mstream/tensor"
)

// loop adds a TF_NewWhile-style loop over inputs to c's graph: cond and
// body build on fresh graphs from their Placeholders.
func (c *cb) loop(name string, inputs []graph.Output, cond func(k *cb, in []graph.Output) graph.Output, body func(k *cb, in []graph.Output) []graph.Output) []graph.Output {
	c.t.Helper()
	sub := func(prefix string) (*cb, []graph.Output, []graph.TensorID) {
		k := &cb{t: c.t, g: graph.New(), r: c.r}
		var outs []graph.Output
		var ids []graph.TensorID
		for i, in := range inputs {
			b := k.g.NewBuilder("Placeholder", fmt.Sprint(prefix, i))
			b.SetAttr("dtype", graph.AttrType(in.DType()))
			n, err := b.Finish()
			if err != nil {
				c.t.Fatal(err)
			}
			outs = append(outs, n.Output(0))
			ids = append(ids, graph.TensorID{Name: n.Name})
		}
		return k, outs, ids
	}
	ck, cin, cids := sub("cond_input")
	co := cond(ck, cin)
	bk, bin, bids := sub("body_input")
	var bouts []graph.TensorID
	for _, o := range body(bk, bin) {
		bouts = append(bouts, graph.TensorID{Name: o.Node.Name, Index: o.Index})
	}
	exits, err := c.g.AddWhileLoop(&graph.WhileLoop{Name: name, Inputs: inputs, Cond: ck.g, CondInputs: cids,
		CondOutput: graph.TensorID{Name: co.Node.Name, Index: co.Index}, Body: bk.g, BodyInputs: bids, BodyOutputs: bouts})
	if err != nil {
		c.t.Fatal(err)
	}
	return exits
}

func (c *cb) f64(v float64) graph.Output { return c.konst(tensor.FromF64(nil, []float64{v})) }

// whileCases are TF's while_gradients_test loops (bodies whose gradient
// does not read the body's own values, which TF's C++ builder requires),
// in float64, with the gradients TF's test expects.
var whileCases = []struct {
	name  string
	feeds []float64
	want  []float64
	build func(c *cb)
}{
	{"basic: while i < 10: i += 1", []float64{1}, []float64{1}, func(c *cb) {
		x := c.xr(0, 1)
		c.ys = c.loop("test_loop", []graph.Output{x},
			func(k *cb, in []graph.Output) graph.Output { return k.op("Less", nil, in[0], k.f64(10)) },
			func(k *cb, in []graph.Output) []graph.Output {
				return []graph.Output{k.op("AddN", nil, []graph.Output{in[0], k.f64(1)})}
			})
	}},
	{"multiple loop vars: i += j; j += 1; k = k", []float64{0, 1, 2}, []float64{1, 5, 1}, func(c *cb) {
		ins := []graph.Output{c.xr(0, 0.5), c.xr(0.5, 1), c.xr(0, 1)}
		c.ys = c.loop("test_loop", ins,
			func(k *cb, in []graph.Output) graph.Output { return k.op("Less", nil, in[0], k.f64(10)) },
			func(k *cb, in []graph.Output) []graph.Output {
				return []graph.Output{k.op("AddN", nil, []graph.Output{in[0], in[1]}), k.op("AddN", nil, []graph.Output{in[1], k.f64(1)}), in[2]}
			})
	}},
	{"chaining: while i > 0 && j > 0: i -= 1", []float64{1, 1}, []float64{-2, 2}, func(c *cb) {
		ins := []graph.Output{c.op("Mul", nil, c.xr(0, 2), c.f64(2)), c.op("Mul", nil, c.xr(0, 2), c.f64(2))}
		out := c.loop("test_loop", ins,
			func(k *cb, in []graph.Output) graph.Output {
				return k.op("LogicalAnd", nil, k.op("Greater", nil, in[0], k.f64(0)), k.op("Greater", nil, in[1], k.f64(0)))
			},
			func(k *cb, in []graph.Output) []graph.Output {
				return []graph.Output{k.op("AddN", nil, []graph.Output{in[0], k.f64(-1)}), in[1]}
			})
		c.ys = []graph.Output{c.op("Neg", nil, out[0]), out[1]}
	}},
	// TF 2.15 runs this one's gradient into a dead tensor (test/capidiff
	// says so); the finite differences check mstream's.
	{"two loops in a row", nil, nil, func(c *cb) {
		x := c.xr(0, 1)
		a := c.loop("first", []graph.Output{x},
			func(k *cb, in []graph.Output) graph.Output { return k.op("Less", nil, in[0], k.f64(3)) },
			func(k *cb, in []graph.Output) []graph.Output {
				return []graph.Output{k.op("AddN", nil, []graph.Output{in[0], in[0]})}
			})
		c.ys = c.loop("second", []graph.Output{c.op("Square", nil, a[0])},
			func(k *cb, in []graph.Output) graph.Output { return k.op("Less", nil, in[0], k.f64(100)) },
			func(k *cb, in []graph.Output) []graph.Output {
				return []graph.Output{k.op("AddN", nil, []graph.Output{in[0], k.f64(7)})}
			})
	}},
}

// TestWhileGradients runs each loop's gradient on the values TF's test
// feeds (where it has them) and on random ones, against TF's expected
// values and float64 central differences.
func TestWhileGradients(t *testing.T) {
	for i, wc := range whileCases {
		t.Run(wc.name, func(t *testing.T) {
			c := &cb{t: t, g: graph.New(), r: rand.New(rand.NewSource(int64(i) + 1))}
			wc.build(c)
			grads, err := grad.AddGradients(c.g, "", c.ys, c.xs, nil)
			if err != nil {
				t.Fatalf("AddGradients: %v", err)
			}
			s, err := session.New(c.g, &session.Options{Env: map[string]string{}})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if wc.feeds != nil {
				over := map[int]*tensor.Tensor{}
				for j, v := range wc.feeds {
					over[j] = tensor.FromF64(nil, []float64{v})
				}
				got := run(t, s, c, grads, over)
				for j, w := range wc.want {
					if g := got[j].F64()[0]; g != w {
						t.Errorf("TF's feeds: d/dx%d = %g, TF's test expects %g", j, g, w)
					}
				}
			}
			got := run(t, s, c, grads, nil)
			const h = 1e-6
			for xi, f := range c.feeds {
				v := f.Tensor.F64()[0]
				fp := sumAll(run(t, s, c, c.ys, map[int]*tensor.Tensor{xi: tensor.FromF64(nil, []float64{v + h})}))
				fm := sumAll(run(t, s, c, c.ys, map[int]*tensor.Tensor{xi: tensor.FromF64(nil, []float64{v - h})}))
				want := (fp - fm) / (2 * h)
				if g := got[xi].F64()[0]; math.Abs(g-want) > 1e-6*math.Max(1, math.Abs(want)) {
					t.Errorf("d/dx%d: got %.9g, finite difference %.9g", xi, g, want)
				}
			}
		})
	}
}

// TestWhileGradientErrors: TF's errors for a loop whose Exit has no
// gradient; an imported loop (no WhileContext, on which TF crashes) is
// UNIMPLEMENTED naming the Exit.
func TestWhileGradientErrors(t *testing.T) {
	c := &cb{t: t, g: graph.New(), r: rand.New(rand.NewSource(1))}
	x := c.xr(0, 1)
	out := c.loop("l", []graph.Output{x, c.xr(0, 1)},
		func(k *cb, in []graph.Output) graph.Output { return k.op("Less", nil, in[0], k.f64(10)) },
		func(k *cb, in []graph.Output) []graph.Output {
			return []graph.Output{k.op("AddN", nil, []graph.Output{in[0], in[1]}), in[1]}
		})
	y := c.op("AddN", nil, []graph.Output{out[0], c.op("Cast", grad.A{"DstT": graph.AttrType(tensor.Double)}, c.op("Shape", nil, out[1]))})
	_, err := grad.AddGradients(c.g, "", []graph.Output{y}, []graph.Output{x}, nil)
	if status.CodeOf(err) != status.Unimplemented || !strings.Contains(err.Error(), "Missing gradient into while loop") {
		t.Errorf("an Exit without gradient: %v", err)
	}

	// A body whose gradient reads the body's values: as in TF, the gradient
	// builds, and running it fails with INVALID_ARGUMENT (TF: the
	// gradient loop's Merge has inputs from two frames; here: its output
	// is dead), never a hang.
	xm := c.xr(1, 2)
	m := c.loop("m", []graph.Output{xm},
		func(k *cb, in []graph.Output) graph.Output { return k.op("Less", nil, in[0], k.f64(10)) },
		func(k *cb, in []graph.Output) []graph.Output {
			return []graph.Output{k.op("Mul", nil, in[0], k.f64(1.5))}
		})
	gm, err := grad.AddGradients(c.g, "", m, []graph.Output{xm}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := session.New(c.g, &session.Options{Env: map[string]string{}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, _, err := s.Run(nil, c.feeds, gm, nil); status.CodeOf(err) != status.InvalidArgument {
		t.Errorf("the gradient of x * 1.5 in a loop: %v", err)
	}

	g := graph.New()
	if _, err := g.Import(c.g.ToGraphDef(), &graph.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = grad.AddGradients(g, "", []graph.Output{g.Lookup(out[0].Node.Name).Output(0)}, []graph.Output{g.Lookup(x.Node.Name).Output(0)}, nil)
	if status.CodeOf(err) != status.Unimplemented || !strings.Contains(err.Error(), "l/Exit") {
		t.Errorf("an imported loop: %v", err)
	}
}
