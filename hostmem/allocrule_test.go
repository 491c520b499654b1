package hostmem

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// allocDirs are the packages that allocate memory sized by what a graph, a
// feed, an attr, a file or a C caller says (relative to this package).
// Packages left out hold no such allocation: bfc and tensorholder carve
// regions already checked, device/ allocates what the allocators ask for,
// optimize and groups size by the graph's node count (already in memory),
// envcfg and status by their own tables.
// exec is left out too: it stages and copies tensors that already exist
// (host copies of device tensors, fed values), each the size of memory
// already held, and its outputs come from kernels, which this rule covers.
var allocDirs = []string{
	"../kernels/cpu", "../kernels/cuda", "../kernels", "../tensor", "../graph", "../capi",
	"../checkpoint", "../session", "../proto/pbparse", "../dataset",
}

// TestAllocationsAreChecked is a vet-style check over the source of
// allocDirs: memory whose size comes from data (a kernel's inputs or attrs,
// a TensorProto, a checkpoint's index, a C caller's byte count) must be
// checked against a Limit (Limit.Check, Make; in kernels
// kernels.Context.Allocate, kernels.Scratch, kernels.NewTensor) before it is
// asked for, never taken by a raw make or tensor.New (Go's out of memory is
// fatal to the host process). It flags
//   - tensor.New / hostmem.Alloc whose shape is not a literal, and
//   - make of a slice whose length or capacity is data-sized: it calls
//     NumElements or ByteSize, indexes a shape (a dimension such as
//     out[i]), or multiplies.
//
// Lengths taken from len() of memory that already exists, ranks and attr
// counts stay plain makes. A flagged line that is bounded for a reason the
// rule cannot see (a Limit.Check just before it, a size bounded by memory
// that exists) says so with a "//mstream:bounded <why>" comment.
func TestAllocationsAreChecked(t *testing.T) {
	var files []string
	for _, d := range allocDirs {
		fs, err := filepath.Glob(filepath.Join(d, "*.go"))
		if err != nil || len(fs) == 0 {
			t.Fatalf("%s: no Go files (%v)", d, err)
		}
		files = append(files, fs...)
	}
	fset := token.NewFileSet()
	var bad []string
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(src), "\n")
		flag := func(n ast.Node, why string) {
			p := fset.Position(n.Pos())
			if strings.Contains(lines[p.Line-1], "//mstream:bounded ") {
				return
			}
			bad = append(bad, p.String()+": "+why+": "+strings.TrimSpace(lines[p.Line-1]))
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			switch fun := call.Fun.(type) {
			case *ast.Ident:
				if fun.Name == "make" && len(call.Args) >= 2 {
					if _, isSlice := call.Args[0].(*ast.ArrayType); !isSlice {
						return true
					}
					for _, a := range call.Args[1:] {
						if why := dataSized(a); why != "" {
							flag(call, "make sized by "+why+" (use kernels.Scratch or ctx.Allocate)")
						}
					}
				}
			case *ast.SelectorExpr:
				pkg, ok := fun.X.(*ast.Ident)
				if !ok {
					return true
				}
				if (pkg.Name == "tensor" && fun.Sel.Name == "New") || (pkg.Name == "hostmem" && fun.Sel.Name == "Alloc") {
					if len(call.Args) > 0 && !literalShape(call.Args[len(call.Args)-1]) {
						flag(call, pkg.Name+"."+fun.Sel.Name+" of a computed size (use ctx.Allocate or kernels.Scratch)")
					}
				}
			}
			return true
		})
	}
	if len(bad) > 0 {
		t.Errorf("%d allocations sized by data bypass the checked allocator:\n%s", len(bad), strings.Join(bad, "\n"))
	}
}

// dataSized says why e looks like a size taken from tensor data, "" if not.
func dataSized(e ast.Expr) (why string) {
	ast.Inspect(e, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.CallExpr:
			if id, ok := x.Fun.(*ast.Ident); ok && (id.Name == "len" || id.Name == "cap") {
				return false // the size of memory that already exists
			}
			if sel, ok := x.Fun.(*ast.SelectorExpr); ok && (sel.Sel.Name == "NumElements" || sel.Sel.Name == "ByteSize") {
				why = "an element count"
			}
		case *ast.IndexExpr:
			why = "a dimension"
		case *ast.BinaryExpr:
			if x.Op == token.MUL && !constExpr(x) {
				why = "a product"
			}
		}
		return why == ""
	})
	return why
}

// constExpr reports whether e is arithmetic on literals only (1+2*8).
func constExpr(e ast.Expr) bool {
	switch x := e.(type) {
	case *ast.BasicLit:
		return true
	case *ast.ParenExpr:
		return constExpr(x.X)
	case *ast.BinaryExpr:
		return constExpr(x.X) && constExpr(x.Y)
	}
	return false
}

// literalShape reports whether e is a shape or size written as constants.
func literalShape(e ast.Expr) bool {
	ok := true
	ast.Inspect(e, func(n ast.Node) bool {
		switch n.(type) {
		case *ast.Ident, *ast.CallExpr, *ast.IndexExpr, *ast.SelectorExpr:
			ok = false
		}
		return ok
	})
	if cl, isLit := e.(*ast.CompositeLit); isLit {
		ok = true
		for _, el := range cl.Elts {
			if _, isBasic := el.(*ast.BasicLit); !isBasic {
				ok = false
			}
		}
	}
	return ok
}
