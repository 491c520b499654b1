package graph

import (
	"testing"

	"google.golang.org/protobuf/proto"
)

func fuzzSeeds(f *testing.F) []string {
	return []string{
		mlpText,
		ph("a", "2 3") + ph("b", "3 4") + op("mm", "MatMul", aT, "a", "b"),
		ph("a", "4 6") + ci("s", false, -1, 3) + op("out", "Reshape", aT+aShape, "a", "s"),
		ph("a", "5 6 7") + ci("b", false, 1, 0) + ci("e", false, 3, 0) + ci("s", false, 1, 1) +
			op("out", "StridedSlice", aT+`attr { key: "Index" value { type: DT_INT32 } } attr { key: "ellipsis_mask" value { i: 2 } }`, "a", "b", "e", "s"),
		ph("a", "2 3") + ph("b", "2 5") + ci("ax", true, 1) + op("out", "ConcatV2", aT+aN2+aTidx, "a", "b", "ax"),
		`node { name: "a" op: "Identity" input: "b" ` + tF + ` } node { name: "b" op: "Identity" input: "a" ` + tF + ` }`,
		`node { name: "x" op: "NoOp" input: "^y" } node { name: "y" op: "NoOp" } versions { producer: 3 }`,
	}
}

// FuzzImportGraphDef feeds arbitrary bytes through ParseGraphDef and Import:
// each must fail cleanly or succeed, and a success must export and import
// again.
func FuzzImportGraphDef(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		gd, err := ParseTextGraphDef([]byte(s))
		if err != nil {
			f.Fatal(err)
		}
		b, _ := proto.Marshal(gd)
		f.Add(b)
	}
	f.Add([]byte{0x0a, 0x02, 0x0a, 0x00})
	f.Fuzz(func(t *testing.T, b []byte) {
		gd, err := ParseGraphDef(b)
		if err != nil {
			return
		}
		g := New()
		if _, err := g.Import(gd, &ImportOptions{Prefix: "f"}); err != nil {
			if g.NumNodes() != 0 {
				t.Fatal("failed import changed the graph")
			}
			return
		}
		if _, err := New().Import(g.ToGraphDef(), nil); err != nil {
			t.Fatalf("re-import of an exported graph failed: %v", err)
		}
	})
}

// FuzzParseTextGraphDef feeds arbitrary text through ParseTextGraphDef and
// Import.
func FuzzParseTextGraphDef(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Add(`node { name: "x" op: }`)
	f.Fuzz(func(t *testing.T, s string) {
		gd, err := ParseTextGraphDef([]byte(s))
		if err != nil {
			return
		}
		_, _ = New().Import(gd, nil)
	})
}
