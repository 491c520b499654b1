package lower

import (
	"os"
	"path/filepath"
	"testing"

	"mstream/graph"
)

// FuzzLower imports mutated text GraphDefs with function libraries (seeded
// with TF's test/functions graphs) and lowers every node they hold: any
// GraphDef that imports must lower or fail with a status, never panic.
func FuzzLower(f *testing.F) {
	paths, _ := filepath.Glob("../test/functions/*.pbtxt")
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, text []byte) {
		gd, err := graph.ParseTextGraphDef(text)
		if err != nil {
			return
		}
		g := graph.New()
		if _, err := g.Import(gd, nil); err != nil {
			return
		}
		var targets []*graph.Node
		var fetches []graph.Output
		for _, n := range g.Nodes() {
			targets = append(targets, n)
			for i := range n.OutTypes {
				fetches = append(fetches, n.Output(i))
			}
		}
		g.RLock()
		defer g.RUnlock()
		lower(g, nil, fetches, targets, 1<<14)
	})
}
