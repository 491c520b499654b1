package exec

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestStash: a stash gives back what was put (each value once), keeps at
// most stashSlots values, and survives concurrent use (under -race).
func TestStash(t *testing.T) {
	var s stash[int]
	if v := s.get(); v != nil {
		t.Fatalf("empty stash gave %v", *v)
	}
	vals := make([]int, stashSlots+3)
	for i := range vals {
		vals[i] = i
		s.put(&vals[i])
	}
	seen := map[*int]bool{}
	for v := s.get(); v != nil; v = s.get() {
		if seen[v] {
			t.Fatalf("value %d given twice", *v)
		}
		seen[v] = true
	}
	if len(seen) != stashSlots {
		t.Fatalf("kept %d values, want %d", len(seen), stashSlots)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mine := g
			for range 1000 {
				v := s.get()
				if v == nil {
					v = &mine
				}
				s.put(v)
			}
		}()
	}
	wg.Wait()
	n := 0
	for s.get() != nil {
		n++
	}
	if n == 0 || n > stashSlots {
		t.Fatalf("after concurrent use the stash held %d values", n)
	}
}

// TestNoPoolFields: no type of the module keeps a sync.Pool in a field.
// The runtime lists each pool that was Put to and drops it only at the
// next collection but one's start, so a pool field kept its owner (a plan,
// a C session, a kernel and its plan's graph) alive a collection longer;
// twice that grew the heap of a process making sessions one after another
// from cycle to cycle. An owner keeps a stash of its own (a plan's steps)
// or takes from a package-level pool, which owns nothing.
func TestNoPoolFields(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (name == "build" || name == "testdata" || strings.HasPrefix(name, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			st, ok := n.(*ast.StructType)
			if !ok {
				return true
			}
			for _, fld := range st.Fields.List {
				if sel, ok := fld.Type.(*ast.SelectorExpr); ok && sel.Sel.Name == "Pool" {
					if x, ok := sel.X.(*ast.Ident); ok && x.Name == "sync" {
						t.Errorf("%s: a struct field of type sync.Pool keeps its owner alive a collection longer; keep a stash (exec/stash.go) or a package-level pool", fset.Position(fld.Pos()))
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
