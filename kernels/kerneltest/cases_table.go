package kerneltest

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"

	"mstream/graph"
	"mstream/proto/tfpb"
	"mstream/resource"
	"mstream/status"
	"mstream/tensor"
)

// The lookup-table families run on one set of resources per case
// (Case.State): a set-up call makes the table (HashTableV2 or
// MutableHashTableV2 named "t") and fills it; the case reads it. The
// reference is a Go map of the entries written. session's
// TestVariablesAgainstTF runs TF-written programs with tables against TF.

func tableNode(mutable bool, k, v tensor.DType) *graph.Node {
	op := "HashTableV2"
	if mutable {
		op = "MutableHashTableV2"
	}
	return NodeFor(op, map[string]*tfpb.AttrValue{"key_dtype": AType(k), "value_dtype": AType(v), "shared_name": AStr("t")}, nil, nil)
}

func tableH() *tensor.Tensor { return resource.Handle{Name: "t", Kind: resource.TableKind}.Tensor() }

func tableCall(mutable bool, k, v tensor.DType) Call { return Call{tableNode(mutable, k, v), nil} }

func opCall(op string, attrs map[string]*tfpb.AttrValue, in ...*tensor.Tensor) Call {
	return Call{NodeFor(op, attrs, in, nil), in}
}

// randEntries draws n distinct string keys and int64 values.
func randEntries(r *rand.Rand, n int) ([]string, []int64) {
	seen := map[string]bool{}
	var ks []string
	var vs []int64
	for len(ks) < n {
		k := fmt.Sprintf("w%d", r.Intn(1000))
		if !seen[k] {
			seen[k] = true
			ks = append(ks, k)
			vs = append(vs, r.Int63n(1000)-500)
		}
	}
	return ks, vs
}

// findCase looks up query (some keys present, some not) with default d.
func findCase(before []Call, m map[string]int64, query []string, d int64) Case {
	h := tableH()
	q := tensor.FromStrings(tensor.Shape{int64(len(query))}, query)
	def := tensor.FromI64(tensor.Shape{}, []int64{d})
	want := make([]int64, len(query))
	for i, k := range query {
		if v, ok := m[k]; ok {
			want[i] = v
		} else {
			want[i] = d
		}
	}
	n := NodeFor("LookupTableFindV2", nil, []*tensor.Tensor{h, q, def}, nil)
	return Case{Node: n, Inputs: []*tensor.Tensor{h, q, def}, State: true, Before: before,
		Want: []*tensor.Tensor{tensor.FromI64(tensor.Shape{int64(len(query))}, want)}}
}

func tableCases(r *rand.Rand, mutable bool, fill func(h, k, v *tensor.Tensor) Call) []Case {
	ks, vs := randEntries(r, 1+r.Intn(6))
	m := map[string]int64{}
	for i, k := range ks {
		m[k] = vs[i]
	}
	h := tableH()
	kt, vt := tensor.FromStrings(tensor.Shape{int64(len(ks))}, ks), tensor.FromI64(tensor.Shape{int64(len(vs))}, vs)
	query := append([]string{"absent"}, ks...)
	r.Shuffle(len(query), func(i, j int) { query[i], query[j] = query[j], query[i] })
	before := []Call{tableCall(mutable, tensor.String, tensor.Int64), fill(h, kt, vt)}
	return []Case{findCase(before, m, query, r.Int63n(100)-200)}
}

func init() {
	for _, op := range []string{"HashTableV2", "MutableHashTableV2"} {
		Add(op, func(r *rand.Rand) []Case {
			n := tableNode(op == "MutableHashTableV2", tensor.Int64, tensor.Float)
			return []Case{{Node: n, State: true, Check: func(out []*tensor.Tensor) error {
				h, err := resource.FromTensor(out[0])
				if err != nil {
					return err
				}
				if h.Container != resource.DefaultContainer || h.Name != "t" || h.Kind != resource.TableKind {
					return fmt.Errorf("handle %+v", h)
				}
				return nil
			}}}
		})
	}
	initT := func(h, k, v *tensor.Tensor) Call { return opCall("InitializeTableV2", nil, h, k, v) }
	importT := func(h, k, v *tensor.Tensor) Call { return opCall("LookupTableImportV2", nil, h, k, v) }
	insertT := func(h, k, v *tensor.Tensor) Call { return opCall("LookupTableInsertV2", nil, h, k, v) }
	Add("InitializeTableV2", func(r *rand.Rand) []Case {
		cs := tableCases(r, false, initT)
		h := tableH()
		k, v := tensor.FromStrings(tensor.Shape{2}, []string{"a", "b"}), tensor.FromI64(tensor.Shape{2}, []int64{1, 2})
		k3, v3 := tensor.FromStrings(tensor.Shape{3}, []string{"a", "b", "c"}), tensor.FromI64(tensor.Shape{3}, []int64{1, 2, 3})
		again := initT(h, k3, v3)
		cs = append(cs, Case{Node: again.Node, Inputs: again.Inputs, State: true, Before: []Call{tableCall(false, tensor.String, tensor.Int64), initT(h, k, v)},
			Err: status.FailedPrecondition, ErrMsg: "Table was already initialized with different data."})
		return cs
	})
	Add("LookupTableImportV2", func(r *rand.Rand) []Case {
		return append(tableCases(r, false, importT), tableCases(r, true, importT)...)
	})
	Add("LookupTableInsertV2", func(r *rand.Rand) []Case { return tableCases(r, true, insertT) })
	Add("LookupTableFindV2", func(r *rand.Rand) []Case {
		cs := tableCases(r, true, insertT)
		h := tableH()
		q, d := tensor.FromStrings(tensor.Shape{1}, []string{"x"}), tensor.FromI64(tensor.Shape{}, []int64{0})
		n := NodeFor("LookupTableFindV2", nil, []*tensor.Tensor{h, q, d}, nil)
		cs = append(cs,
			Case{Node: n, Inputs: []*tensor.Tensor{h, q, d}, State: true, Before: []Call{tableCall(false, tensor.String, tensor.Int64)},
				Err: status.FailedPrecondition, ErrMsg: "Table not initialized."},
			Case{Node: n, Inputs: []*tensor.Tensor{h, q, d}, State: true, Err: status.NotFound, ErrMsg: "localhost"})
		return cs
	})
	Add("LookupTableSizeV2", func(r *rand.Rand) []Case {
		ks, vs := randEntries(r, 1+r.Intn(8))
		h := tableH()
		kt, vt := tensor.FromStrings(tensor.Shape{int64(len(ks))}, ks), tensor.FromI64(tensor.Shape{int64(len(vs))}, vs)
		n := NodeFor("LookupTableSizeV2", nil, []*tensor.Tensor{h}, nil)
		return []Case{
			{Node: n, Inputs: []*tensor.Tensor{h}, State: true, Before: []Call{tableCall(true, tensor.String, tensor.Int64), insertT(h, kt, vt), insertT(h, kt, vt)},
				Want: []*tensor.Tensor{tensor.FromI64(tensor.Shape{}, []int64{int64(len(ks))})}},
		}
	})
	Add("LookupTableExportV2", func(r *rand.Rand) []Case {
		h := tableH()
		k, v := tensor.FromI64(tensor.Shape{1}, []int64{r.Int63n(100)}), tensor.FromF32(tensor.Shape{1}, []float32{r.Float32()})
		n := NodeFor("LookupTableExportV2", map[string]*tfpb.AttrValue{"Tkeys": AType(tensor.Int64), "Tvalues": AType(tensor.Float)}, []*tensor.Tensor{h}, nil)
		return []Case{{Node: n, Inputs: []*tensor.Tensor{h}, State: true,
			Before: []Call{tableCall(true, tensor.Int64, tensor.Float), opCall("LookupTableInsertV2", nil, h, k, v)}, Want: []*tensor.Tensor{k, v}}}
	})
	Add("InitializeTableFromTextFileV2", func(r *rand.Rand) []Case {
		dir, err := os.MkdirTemp("", "kerneltest-vocab")
		if err != nil {
			panic(err)
		}
		ks, _ := randEntries(r, 1+r.Intn(6))
		path := filepath.Join(dir, "vocab.txt")
		if err := os.WriteFile(path, []byte(strings.Join(ks, "\n")+"\n"), 0o644); err != nil {
			panic(err)
		}
		m := map[string]int64{}
		for i, k := range ks {
			m[k] = int64(i)
		}
		h := tableH()
		fname := tensor.FromStrings(tensor.Shape{}, []string{path})
		initF := opCall("InitializeTableFromTextFileV2", map[string]*tfpb.AttrValue{"key_index": AInt(-2), "value_index": AInt(-1)}, h, fname)
		before := []Call{tableCall(false, tensor.String, tensor.Int64), initF}
		return []Case{
			findCase(before, m, append([]string{"zz"}, ks...), -1),
			{Node: initF.Node, Inputs: []*tensor.Tensor{h, tensor.FromStrings(tensor.Shape{}, []string{filepath.Join(dir, "missing")})}, State: true,
				Before: before[:1], Err: status.NotFound, ErrMsg: "missing"},
		}
	})
}

// MutableHashTableOfTensorsV2: int64 keys to float vectors of width w,
// inserted, then found with one default for every key and with one per
// key, exported, and a value of the wrong shape refused.
func init() {
	Add("MutableHashTableOfTensorsV2", func(r *rand.Rand) []Case {
		w := int64(1 + r.Intn(4))
		node := NodeFor("MutableHashTableOfTensorsV2", map[string]*tfpb.AttrValue{"key_dtype": AType(tensor.Int64),
			"value_dtype": AType(tensor.Float), "value_shape": AShape(tensor.Shape{w}), "shared_name": AStr("t")}, nil, nil)
		h := tableH()
		n := 1 + r.Intn(5)
		keys := make([]int64, n)
		for i := range keys {
			keys[i] = int64(i*7) + r.Int63n(7)
		}
		vals := Rand(r, tensor.Float, tensor.Shape{int64(n), w})
		kt := tensor.FromI64(tensor.Shape{int64(n)}, keys)
		before := []Call{{node, nil}, opCall("LookupTableInsertV2", nil, h, kt, vals)}
		query := tensor.FromI64(tensor.Shape{2, 2}, []int64{keys[n-1], -1, keys[0], 1000})
		def := Rand(r, tensor.Float, tensor.Shape{w})
		defs := Rand(r, tensor.Float, tensor.Shape{2, 2, w})
		find := func(d *tensor.Tensor, perKey bool) Case {
			want := tensor.New(tensor.Float, tensor.Shape{2, 2, w})
			for i, k := range query.I64() {
				row := -1
				for j := range keys {
					if keys[j] == k {
						row = j
					}
				}
				for e := range w {
					switch {
					case row >= 0:
						want.F32()[int64(i)*w+e] = vals.F32()[int64(row)*w+e]
					case perKey:
						want.F32()[int64(i)*w+e] = d.F32()[int64(i)*w+e]
					default:
						want.F32()[int64(i)*w+e] = d.F32()[e]
					}
				}
			}
			in := []*tensor.Tensor{h, query, d}
			return Case{Node: NodeFor("LookupTableFindV2", nil, in, nil), Inputs: in, State: true, Before: before, Want: []*tensor.Tensor{want}}
		}
		exp := NodeFor("LookupTableExportV2", map[string]*tfpb.AttrValue{"Tkeys": AType(tensor.Int64), "Tvalues": AType(tensor.Float)}, []*tensor.Tensor{h}, nil)
		k1 := tensor.FromI64(tensor.Shape{1}, keys[:1])
		v1 := tensor.FromF32(tensor.Shape{1, w}, vals.F32()[:w])
		one := append(before[:1:1], opCall("LookupTableInsertV2", nil, h, k1, v1))
		badVals := Rand(r, tensor.Float, tensor.Shape{int64(n), w + 1})
		bad := opCall("LookupTableInsertV2", nil, h, kt, badVals)
		size := NodeFor("LookupTableSizeV2", nil, []*tensor.Tensor{h}, nil)
		return []Case{
			{Node: node, State: true, Check: func(out []*tensor.Tensor) error {
				if hd, err := resource.FromTensor(out[0]); err != nil || hd.Name != "t" || hd.Kind != resource.TableKind {
					return fmt.Errorf("handle %+v, %v", hd, err)
				}
				return nil
			}},
			find(def, false),
			find(defs, true),
			{Node: exp, Inputs: []*tensor.Tensor{h}, State: true, Before: one, Want: []*tensor.Tensor{k1, v1}},
			{Node: size, Inputs: []*tensor.Tensor{h}, State: true, Before: before, Want: []*tensor.Tensor{tensor.FromI64(tensor.Shape{}, []int64{int64(n)})}},
			{Node: bad.Node, Inputs: bad.Inputs, State: true, Before: before[:1], Err: status.InvalidArgument,
				ErrMsg: fmt.Sprintf("Expected shape [%d,%d] for value, got [%d,%d]", n, w, n, w+1)},
		}
	})
}

// LookupTableRemoveV2: entries removed (an absent key among them) are
// found as the default afterwards, the rest unchanged; an initialised
// HashTable refuses it as TF's does.
func init() {
	Add("LookupTableRemoveV2", func(r *rand.Rand) []Case {
		ks, vs := randEntries(r, 2+r.Intn(5))
		h := tableH()
		kt, vt := tensor.FromStrings(tensor.Shape{int64(len(ks))}, ks), tensor.FromI64(tensor.Shape{int64(len(vs))}, vs)
		gone := []string{ks[0], "absent"}
		rm := tensor.FromStrings(tensor.Shape{2}, gone)
		remove := opCall("LookupTableRemoveV2", nil, h, rm)
		m := map[string]int64{}
		for i, k := range ks[1:] {
			m[k] = vs[i+1]
		}
		made := []Call{tableCall(true, tensor.String, tensor.Int64), opCall("LookupTableInsertV2", nil, h, kt, vt)}
		ints := tensor.FromI64(tensor.Shape{1}, []int64{3})
		return []Case{
			{Node: remove.Node, Inputs: remove.Inputs, State: true, Before: made},
			findCase(append(made, remove), m, append([]string{"absent"}, ks...), -9),
			{Node: remove.Node, Inputs: remove.Inputs, State: true,
				Before: []Call{tableCall(false, tensor.String, tensor.Int64), opCall("InitializeTableV2", nil, h, kt, vt)},
				Err:    status.Unimplemented, ErrMsg: "Remove not supported"},
			{Node: NodeFor("LookupTableRemoveV2", nil, []*tensor.Tensor{h, ints}, nil), Inputs: []*tensor.Tensor{h, ints}, State: true, Before: made,
				Err: status.InvalidArgument, ErrMsg: "Key must be type string but got int64"},
		}
	})
	// String values, vectors of two: each packed with its length.
	Add("MutableHashTableOfTensorsV2", func(r *rand.Rand) []Case {
		node := NodeFor("MutableHashTableOfTensorsV2", map[string]*tfpb.AttrValue{"key_dtype": AType(tensor.String),
			"value_dtype": AType(tensor.String), "value_shape": AShape(tensor.Shape{2}), "shared_name": AStr("t")}, nil, nil)
		h := tableH()
		ks, _ := randEntries(r, 3)
		vals := RandStrings(r, tensor.Shape{3, 2})
		kt := tensor.FromStrings(tensor.Shape{3}, ks)
		q := tensor.FromStrings(tensor.Shape{2}, []string{ks[1], "absent"})
		def := tensor.FromStrings(tensor.Shape{2}, []string{"", "none"})
		want := tensor.FromStrings(tensor.Shape{2, 2}, []string{string(vals.Strs[2]), string(vals.Strs[3]), "", "none"})
		in := []*tensor.Tensor{h, q, def}
		return []Case{{Node: NodeFor("LookupTableFindV2", nil, in, nil), Inputs: in, State: true,
			Before: []Call{{node, nil}, opCall("LookupTableInsertV2", nil, h, kt, vals)}, Want: []*tensor.Tensor{want}}}
	})
}
