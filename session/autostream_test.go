package session

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"mstream/graph"
	"mstream/partition"
	"mstream/tensor"
)

// trainingModel is the training example's graph
// (examples/data/training.pbtxt: four towers of embedding + MLP, a head,
// TF's gradients and Adagrad) with feeds for its init and train steps.
type trainingModel struct {
	g           *graph.Graph
	init, train *graph.Node
	loss        graph.Output
}

func loadTrainingModel(t *testing.T) *trainingModel {
	g := importFile(t, "../examples/data/training.pbtxt")
	return &trainingModel{g: g, init: g.Lookup("init"), train: g.Lookup("train"), loss: g.Lookup("loss").Output(0)}
}

// initFeeds gives every <variable>_init_value placeholder uniform [-1, 1)
// values, as the example's client does.
func (m *trainingModel) initFeeds(r *rand.Rand) []Feed {
	var feeds []Feed
	for _, n := range m.g.Nodes() {
		if n.Op != "Placeholder" || !strings.HasSuffix(n.Name, "_init_value") {
			continue
		}
		var shape tensor.Shape
		for _, d := range n.Attrs["shape"].GetShape().GetDim() {
			shape = append(shape, d.GetSize())
		}
		v := make([]float32, shape.NumElements())
		for i := range v {
			v[i] = 2*r.Float32() - 1
		}
		feeds = append(feeds, Feed{Output: n.Output(0), Tensor: tensor.FromF32(shape, v)})
	}
	return feeds
}

// batch is one training step's feeds: ids per tower, 0/1 labels.
func (m *trainingModel) batch(r *rand.Rand, n int) []Feed {
	var feeds []Feed
	for t := 0; ; t++ {
		ids := m.g.Lookup(fmt.Sprintf("tower%d/ids", t))
		if ids == nil {
			break
		}
		rows := m.g.Lookup(fmt.Sprintf("tower%d/emb", t)).Attrs["shape"].GetShape().GetDim()[0].GetSize()
		v := make([]int64, n)
		for i := range v {
			v[i] = r.Int63n(rows)
		}
		feeds = append(feeds, Feed{Output: ids.Output(0), Tensor: tensor.FromI64(tensor.Shape{int64(n)}, v)})
	}
	labels := make([]float32, n)
	for i := range labels {
		labels[i] = float32(r.Intn(2))
	}
	return append(feeds, Feed{Output: m.g.Lookup("head/label").Output(0), Tensor: tensor.FromF32(tensor.Shape{int64(n), 1}, labels)})
}

// losses initialises a session on env and trains steps steps, returning
// the loss of each.
func (m *trainingModel) losses(t *testing.T, env map[string]string, steps int) ([]float32, *Session) {
	t.Helper()
	s := openSession(t, m.g, env)
	r := rand.New(rand.NewSource(7))
	if _, _, err := s.Run(nil, m.initFeeds(r), nil, []*graph.Node{m.init}); err != nil {
		t.Fatalf("init: %v", err)
	}
	var out []float32
	for k := 0; k < steps; k++ {
		got, _, err := s.Run(nil, m.batch(r, 32), []graph.Output{m.loss}, []*graph.Node{m.train})
		if err != nil {
			t.Fatalf("step %d: %v", k, err)
		}
		out = append(out, got[0].F32()[0])
	}
	return out, s
}

// TestAutoStreamAssignTraining: MSTREAM_STREAM_ASSIGN=auto with no file
// puts the training example's four towers on four different groups (each
// tower's forward gather and GEMMs on one group), two per group with two
// groups, and under the stream sanitizer trains with exactly the
// one-group losses. (partition's table test covers file rules mixed in.)
func TestAutoStreamAssignTraining(t *testing.T) {
	m := loadTrainingModel(t)
	want, _ := m.losses(t, map[string]string{}, 3)
	for _, env := range []map[string]string{
		{"TF_GPU_STREAM_GROUP_COUNT": "4", "TF_NODE_LEVEL_MULTISTREAM": "true", "MSTREAM_STREAM_ASSIGN": "auto",
			"MSTREAM_STREAM_JITTER": "1"},
		{"TF_GPU_STREAM_GROUP_COUNT": "2", "TF_NODE_LEVEL_MULTISTREAM": "true", "MSTREAM_STREAM_ASSIGN": "auto"},
	} {
		t.Run(env["TF_GPU_STREAM_GROUP_COUNT"], func(t *testing.T) {
			got, s := m.losses(t, env, 3)
			for k := range want {
				if got[k] != want[k] {
					t.Errorf("step %d: loss %v, one group %v", k, got[k], want[k])
				}
			}
			checkQuiescent(t, s)
			groups := len(s.impl.set.OnDevice(0))
			r := rand.New(rand.NewSource(1))
			var feedOuts []graph.Output
			for _, f := range m.batch(r, 4) {
				feedOuts = append(feedOuts, f.Output)
			}
			plan, err := s.planFor(feedOuts, []graph.Output{m.loss}, []*graph.Node{m.train})
			if err != nil {
				t.Fatal(err)
			}
			assign, used := s.impl.assignment(plan, groups)
			if len(used) != groups {
				t.Errorf("groups used %v, want all %d", used, groups)
			}
			// Each tower's forward pass (its gather and GEMMs, fused or
			// not) on one group; the towers spread evenly over the groups.
			// (Backward, the analysis may split a layer's two gradient
			// GEMMs over two groups: they are independent.)
			tower := map[int]int{}
			for i, n := range plan.Nodes() {
				var tw int
				if _, err := fmt.Sscanf(n.Name, "tower%d/", &tw); err != nil || partition.Cost(n.Op) != partition.Heavy {
					continue
				}
				if g, ok := tower[tw]; ok && g != assign[i] {
					t.Errorf("%s (%s) on group %d, tower%d's other heavy nodes on %d", n.Name, n.Op, assign[i], tw, g)
				}
				tower[tw] = assign[i]
			}
			per := map[int]int{}
			for _, g := range tower {
				per[g]++
			}
			if len(tower) != 4 || len(per) != groups {
				t.Errorf("towers on groups %v, want them spread over all %d", tower, groups)
			}
			for g, k := range per {
				if k != 4/groups {
					t.Errorf("group %d has %d towers, want %d", g, k, 4/groups)
				}
			}
		})
	}
}
