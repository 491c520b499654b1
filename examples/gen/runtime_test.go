package main

import (
	"encoding/binary"
	"math"
	"testing"

	"mstream/graph"
	_ "mstream/kernels/cpu"
	"mstream/proto/tfpb"
	"mstream/session"
	"mstream/tensor"

	// GPUs and GPU kernels, as the library links them.
	_ "mstream/kernels/cuda"
)

// TestModelRunsInRuntime imports the model into the Go runtime (graph,
// session, CPU kernels), without the C API, and checks the expected outputs.
func TestModelRunsInRuntime(t *testing.T) {
	m := newModel()
	g := graph.New()
	if _, err := g.Import(m.graphDef(), &graph.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	s, err := session.New(g, &session.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	in := m.inputs()
	var feeds []session.Feed
	dt, err := tensor.FromProto(&tfpb.TensorProto{Dtype: tfpb.DataType_DT_FLOAT, TensorShape: shapeProto(batchSize, denseDim), FloatVal: in.dense})
	if err != nil {
		t.Fatal(err)
	}
	feeds = append(feeds, session.Feed{Output: graph.Output{Node: g.Lookup("dense")}, Tensor: dt})
	for k, tb := range m.tables {
		p := &tfpb.TensorProto{Dtype: tb.idType, TensorShape: shapeProto(batchSize)}
		if tb.column {
			p.TensorShape = shapeProto(batchSize, 1)
		}
		for _, v := range in.ids[k] {
			if tb.idType == tfpb.DataType_DT_INT32 {
				p.IntVal = append(p.IntVal, int32(v))
			} else {
				p.Int64Val = append(p.Int64Val, v)
			}
		}
		x, err := tensor.FromProto(p)
		if err != nil {
			t.Fatal(err)
		}
		feeds = append(feeds, session.Feed{Output: graph.Output{Node: g.Lookup("ids_" + string(rune('0'+k)))}, Tensor: x})
	}
	want := m.forward(in)
	for r := 0; r < 3; r++ {
		outs, _, err := s.Run(nil, feeds, []graph.Output{{Node: g.Lookup("output")}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		{
			p := tensor.ToProto(outs[0])
			var got []float32
			if len(p.TensorContent) > 0 {
				for i := 0; i < len(p.TensorContent); i += 4 {
					got = append(got, math.Float32frombits(binary.LittleEndian.Uint32(p.TensorContent[i:])))
				}
			} else {
				got = p.FloatVal
			}
			for i := range want {
				if math.Abs(float64(got[i])-want[i]) > 1e-5 {
					t.Errorf("row %d: got %v want %v", i, got[i], want[i])
				}
			}
		}
	}
}
