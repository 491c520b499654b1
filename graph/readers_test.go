package graph

import (
	"fmt"
	"sync"
	"testing"
)

// TestNodeByIDSeesImportsWhole reads the graph without its lock, as every
// Run does (NodeByID, Version), while imports grow it: a reader sees an
// import's nodes all or none, each at its ID, and the version never goes
// back. Run it with -race: the readers take no lock.
func TestNodeByIDSeesImportsWhole(t *testing.T) {
	g := New()
	gd := mustParse(t, mlpText)
	const imports = 200
	per := len(gd.Node)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errs := make(chan error, 4)
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var lastVersion uint64
			for {
				select {
				case <-stop:
					return
				default:
				}
				v := g.Version()
				if v < lastVersion {
					errs <- fmt.Errorf("version went from %d back to %d", lastVersion, v)
					return
				}
				lastVersion = v
				// The first node of the newest import seen decides how many
				// nodes must be there: all of that import's.
				n := 0
				for g.NodeByID(n) != nil {
					n += per
				}
				for id := n - per; id >= 0 && id < n; id++ {
					nd := g.NodeByID(id)
					if nd == nil {
						errs <- fmt.Errorf("node %d of an import whose node %d is visible is missing", id, n-per)
						return
					}
					if nd.ID != id {
						errs <- fmt.Errorf("NodeByID(%d) returned node %d", id, nd.ID)
						return
					}
				}
			}
		}()
	}
	for i := range imports {
		if _, err := g.Import(gd, &ImportOptions{Prefix: fmt.Sprint("i", i)}); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if g.NodeByID(imports*per-1) == nil || g.NodeByID(imports*per) != nil || g.NodeByID(-1) != nil {
		t.Errorf("NodeByID at the ends: %d nodes", g.NumNodes())
	}
}
