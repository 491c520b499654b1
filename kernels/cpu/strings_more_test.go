package cpu

import (
	"math"
	"math/rand"

	"google.golang.org/protobuf/proto"

	"mstream/proto/tfpb"

	"mstream/kernels/kerneltest"
	"mstream/tensor"
)

// moreStringCases are the cases of the string ops beyond the hashes.
func moreStringCases(r *rand.Rand) []tfCase {
	var cs []tfCase
	text := strsT(tensor.Shape{9}, "", "abc", "aaa", "hello world", "x1y22z333", "ünï cödé", "a.b.c", "  spaces  ", "line\nbreak")
	for _, p := range []struct{ pat, rw string }{
		{"a", "b"}, {"a*", "-"}, {"", "."}, {`(\w+) (\w+)`, `\2 \1`}, {`\d+`, `<\0>`}, {"^", ">"}, {"$", "<"},
		{`(a)|(b)`, `[\1\2]`}, {`.`, `\\`}, {`(?i)A`, "Z"}, {`\s+`, " "}, {`x`, `\3`}, {`b`, `q\x`}, {`[[:alpha:]]+`, "W"},
		{`ö|ü`, "o"}, {`(\p{L})`, `\1\1`}, {`a??`, "_"}, {`c$`, "C"},
	} {
		for _, global := range []bool{true, false} {
			cs = append(cs, tfCase{name: "StaticRegexReplace " + p.pat, op: "StaticRegexReplace",
				attrs: kerneltest.Attrs{"pattern": kerneltest.AStr(p.pat), "rewrite": kerneltest.AStr(p.rw), "replace_global": kerneltest.ABool(global)},
				in:    []*tensor.Tensor{text}})
			cs = append(cs, tfCase{name: "RegexReplace " + p.pat, op: "RegexReplace",
				attrs: kerneltest.Attrs{"replace_global": kerneltest.ABool(global)},
				in:    []*tensor.Tensor{text, strsT(nil, p.pat), strsT(nil, p.rw)}})
		}
		cs = append(cs, tfCase{name: "StaticRegexFullMatch " + p.pat, op: "StaticRegexFullMatch",
			attrs: kerneltest.Attrs{"pattern": kerneltest.AStr(p.pat)}, in: []*tensor.Tensor{text}})
	}
	for _, pat := range []string{"a.*", `\w+`, `[a-c]{3}`, `.*\d`, `(a|b)+`, `\S+ \S+`, `(?s).*`} {
		cs = append(cs, tfCase{name: "StaticRegexFullMatch " + pat, op: "StaticRegexFullMatch",
			attrs: kerneltest.Attrs{"pattern": kerneltest.AStr(pat)}, in: []*tensor.Tensor{text}})
	}
	cs = append(cs,
		tfCase{name: "bad pattern", op: "StaticRegexFullMatch", attrs: kerneltest.Attrs{"pattern": kerneltest.AStr("(a")}, in: []*tensor.Tensor{text}},
		tfCase{name: "bad pattern", op: "StaticRegexReplace", attrs: kerneltest.Attrs{"pattern": kerneltest.AStr("[z-a]"), "rewrite": kerneltest.AStr("")}, in: []*tensor.Tensor{text}},
		tfCase{name: "bad pattern", op: "RegexReplace", attrs: kerneltest.Attrs{}, in: []*tensor.Tensor{text, strsT(nil, "*"), strsT(nil, "")}},
		tfCase{name: "pattern not scalar", op: "RegexReplace", attrs: kerneltest.Attrs{}, in: []*tensor.Tensor{text, strsT(tensor.Shape{1}, "a"), strsT(nil, "")}},
		tfCase{name: "2-D input", op: "RegexReplace", attrs: kerneltest.Attrs{}, in: []*tensor.Tensor{strsT(tensor.Shape{2, 2}, "ab", "ba", "", "bb"), strsT(nil, "b"), strsT(nil, "c")}},
	)
	cs = append(cs, asStringCases(r)...)
	cs = append(cs, substrCases(r)...)
	cs = append(cs, parseExampleCases(r)...)
	lines := strsT(tensor.Shape{8}, "", "a b  c", "  lead and trail  ", "1,,2,", ",", "a<>b<>c", "tab\tnew\nline\vvt\ffeed\rcr", "x")
	for _, sep := range []string{"", ",", "<>", " ", "zz"} {
		for _, ms := range []int64{-1, 0, 1, 2} {
			cs = append(cs, tfCase{name: "StringSplitV2 sep " + sep, op: "StringSplitV2", attrs: kerneltest.Attrs{"maxsplit": kerneltest.AInt(ms)}, in: []*tensor.Tensor{lines, strsT(nil, sep)}})
		}
	}
	cs = append(cs,
		tfCase{name: "StringSplitV2 empty batch", op: "StringSplitV2", attrs: kerneltest.Attrs{}, in: []*tensor.Tensor{strsT(tensor.Shape{0}), strsT(nil, ",")}},
		tfCase{name: "StringSplitV2 matrix", op: "StringSplitV2", attrs: kerneltest.Attrs{}, in: []*tensor.Tensor{strsT(tensor.Shape{1, 1}, "a"), strsT(nil, ",")}},
		tfCase{name: "StringSplitV2 sep vector", op: "StringSplitV2", attrs: kerneltest.Attrs{}, in: []*tensor.Tensor{lines, strsT(tensor.Shape{1}, ",")}},
	)
	return append(cs, stitchCases(r)...)
}

// asStringCases cover every dtype AsString takes and its attrs.
func asStringCases(r *rand.Rand) []tfCase {
	var cs []tfCase
	fl := tensor.FromF32(tensor.Shape{10}, []float32{0, -0.0, 1, -2.5, 3.14159265, 1e10, 1e-7, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())})
	db := tensor.FromF64(tensor.Shape{6}, []float64{123456789.123456789, -1e-300, 1e300, 0.1, math.Inf(1), -math.NaN()})
	ints := []*tensor.Tensor{
		tensor.FromI64(tensor.Shape{4}, []int64{math.MaxInt64, math.MinInt64, 0, -42}),
		tensor.FromI32(tensor.Shape{3}, []int32{math.MaxInt32, math.MinInt32, 7}),
		kerneltest.Rand(r, tensor.Int8, tensor.Shape{4}), kerneltest.Rand(r, tensor.Int16, tensor.Shape{4}),
		kerneltest.Rand(r, tensor.Uint8, tensor.Shape{4}), kerneltest.Rand(r, tensor.Uint16, tensor.Shape{4}),
		kerneltest.Rand(r, tensor.Uint32, tensor.Shape{4}), tensor.FromBool(tensor.Shape{2}, []bool{true, false}),
	}
	c64 := tensor.New(tensor.Complex64, tensor.Shape{3})
	c64.C64()[0], c64.C64()[1], c64.C64()[2] = complex(1.5, -2), complex(r.Float32(), float32(math.Inf(1))), 0
	c128 := tensor.New(tensor.Complex128, tensor.Shape{2})
	c128.C128()[0], c128.C128()[1] = complex(-1e-9, 3e20), complex(r.NormFloat64(), r.NormFloat64())
	u64 := tensor.New(tensor.Uint64, tensor.Shape{2})
	u64.U64()[0], u64.U64()[1] = math.MaxUint64, 12345
	ints = append(ints, u64)
	floats := []*tensor.Tensor{fl, db, kerneltest.Rand(r, tensor.Half, tensor.Shape{4}), kerneltest.Rand(r, tensor.Bfloat16, tensor.Shape{4}), c64, c128}
	as := func(name string, in *tensor.Tensor, attrs kerneltest.Attrs) {
		cs = append(cs, tfCase{name: "AsString " + name + " " + in.DType.String(), op: "AsString", attrs: attrs, in: []*tensor.Tensor{in}})
	}
	A := kerneltest.Attrs{}
	for _, t := range ints {
		as("plain", t, A)
		as("width 8 fill 0", t, kerneltest.Attrs{"width": kerneltest.AInt(8), "fill": kerneltest.AStr("0")})
		as("fill -", t, kerneltest.Attrs{"width": kerneltest.AInt(6), "fill": kerneltest.AStr("-")})
		as("fill +", t, kerneltest.Attrs{"fill": kerneltest.AStr("+")})
	}
	for _, t := range floats {
		as("plain", t, A)
		as("precision 3", t, kerneltest.Attrs{"precision": kerneltest.AInt(3)})
		as("scientific", t, kerneltest.Attrs{"scientific": kerneltest.ABool(true)})
		as("shortest", t, kerneltest.Attrs{"shortest": kerneltest.ABool(true)})
		as("shortest precision 2", t, kerneltest.Attrs{"shortest": kerneltest.ABool(true), "precision": kerneltest.AInt(2)})
		as("width 12 fill space", t, kerneltest.Attrs{"width": kerneltest.AInt(12), "fill": kerneltest.AStr(" ")})
		as("width 14 fill 0 sci", t, kerneltest.Attrs{"width": kerneltest.AInt(14), "fill": kerneltest.AStr("0"), "scientific": kerneltest.ABool(true)})
		as("fill # shortest", t, kerneltest.Attrs{"fill": kerneltest.AStr("#"), "shortest": kerneltest.ABool(true)})
		as("fill + width 10 left", t, kerneltest.Attrs{"fill": kerneltest.AStr("+"), "width": kerneltest.AInt(10)})
	}
	words := strsT(tensor.Shape{3}, "ab", "", "longer one")
	as("pass", words, A)
	as("width", words, kerneltest.Attrs{"width": kerneltest.AInt(5)})
	as("width -", words, kerneltest.Attrs{"width": kerneltest.AInt(5), "fill": kerneltest.AStr("-")})
	as("width precision", words, kerneltest.Attrs{"width": kerneltest.AInt(4), "precision": kerneltest.AInt(2)})
	as("bad fill", fl, kerneltest.Attrs{"fill": kerneltest.AStr("x")})
	as("long fill", fl, kerneltest.Attrs{"fill": kerneltest.AStr("00")})
	as("sci and shortest", fl, kerneltest.Attrs{"scientific": kerneltest.ABool(true), "shortest": kerneltest.ABool(true)})
	as("int precision", ints[0], kerneltest.Attrs{"precision": kerneltest.AInt(2)})
	as("int scientific", ints[1], kerneltest.Attrs{"scientific": kerneltest.ABool(true)})
	return cs
}

// stitchCases are DynamicStitch's and DynamicPartition's.
func stitchCases(r *rand.Rand) []tfCase {
	i32 := func(s tensor.Shape, v ...int32) *tensor.Tensor { return tensor.FromI32(s, v) }
	f := func(s tensor.Shape) *tensor.Tensor { return kerneltest.Rand(r, tensor.Float, s) }
	words := func(s tensor.Shape) *tensor.Tensor { return kerneltest.RandStrings(r, s) }
	var cs []tfCase
	stitch := func(name string, idx, data []*tensor.Tensor) {
		in := append(append([]*tensor.Tensor{}, idx...), data...)
		cs = append(cs, tfCase{name: "DynamicStitch " + name, op: "DynamicStitch", attrs: kerneltest.Attrs{}, in: in, lists: map[int]int{0: len(idx), 1: len(data)}})
	}
	stitch("rows", []*tensor.Tensor{i32(tensor.Shape{2}, 0, 2), i32(tensor.Shape{2}, 1, 3)}, []*tensor.Tensor{f(tensor.Shape{2, 3}), f(tensor.Shape{2, 3})})
	stitch("overlap", []*tensor.Tensor{i32(tensor.Shape{3}, 0, 1, 2), i32(tensor.Shape{1}, 1)}, []*tensor.Tensor{f(tensor.Shape{3}), f(tensor.Shape{1})})
	stitch("strings 2-D index", []*tensor.Tensor{i32(tensor.Shape{2, 2}, 3, 0, 2, 1)}, []*tensor.Tensor{words(tensor.Shape{2, 2, 2})})
	stitch("scalar index", []*tensor.Tensor{i32(nil, 1), i32(tensor.Shape{1}, 0)}, []*tensor.Tensor{f(tensor.Shape{4}), f(tensor.Shape{1, 4})})
	stitch("int64", []*tensor.Tensor{i32(tensor.Shape{3}, 2, 1, 0)}, []*tensor.Tensor{kerneltest.Rand(r, tensor.Int64, tensor.Shape{3})})
	stitch("empty", []*tensor.Tensor{i32(tensor.Shape{0})}, []*tensor.Tensor{f(tensor.Shape{0, 2})})
	stitch("negative", []*tensor.Tensor{i32(tensor.Shape{2}, 0, -1)}, []*tensor.Tensor{f(tensor.Shape{2})})
	stitch("shape mismatch", []*tensor.Tensor{i32(tensor.Shape{2}, 0, 1), i32(tensor.Shape{1}, 2)}, []*tensor.Tensor{f(tensor.Shape{2, 3}), f(tensor.Shape{1, 2})})
	part := func(name string, np int64, data, p *tensor.Tensor) {
		cs = append(cs, tfCase{name: "DynamicPartition " + name, op: "DynamicPartition", attrs: kerneltest.Attrs{"num_partitions": kerneltest.AInt(np)}, in: []*tensor.Tensor{data, p}})
	}
	part("rows", 3, f(tensor.Shape{6, 2}), i32(tensor.Shape{6}, 2, 0, 2, 1, 0, 2))
	part("strings", 2, words(tensor.Shape{5}), i32(tensor.Shape{5}, 1, 1, 0, 1, 0))
	part("2-D partitions", 4, kerneltest.Rand(r, tensor.Int64, tensor.Shape{2, 3, 2}), i32(tensor.Shape{2, 3}, 3, 3, 0, 1, 3, 0))
	part("scalar", 2, f(nil), i32(nil, 1))
	part("empty partition", 3, f(tensor.Shape{2}), i32(tensor.Shape{2}, 0, 0))
	part("out of range", 2, f(tensor.Shape{2, 2}), i32(tensor.Shape{2, 2}, 0, 1, 2, 0))
	part("shape mismatch", 2, f(tensor.Shape{3}), i32(tensor.Shape{2}, 0, 1))
	return cs
}

// substrCases cover both units, negative positions and lengths, each
// broadcasting form TF has, and its errors.
func substrCases(r *rand.Rand) []tfCase {
	var cs []tfCase
	words := strsT(tensor.Shape{5}, "hello", "", "héllo wörld", "日本語テキスト", "ab")
	sub := func(name string, in, pos, length *tensor.Tensor, unit string) {
		cs = append(cs, tfCase{name: "Substr " + name + " " + unit, op: "Substr", attrs: kerneltest.Attrs{"unit": kerneltest.AStr(unit)}, in: []*tensor.Tensor{in, pos, length}})
	}
	i32 := func(s tensor.Shape, v ...int32) *tensor.Tensor { return tensor.FromI32(s, v) }
	i64 := func(s tensor.Shape, v ...int64) *tensor.Tensor { return tensor.FromI64(s, v) }
	for _, unit := range []string{"BYTE", "UTF8_CHAR"} {
		for _, pl := range [][2]int32{{0, 2}, {1, 100}, {0, -1}, {-2, 1}, {-1, 5}, {0, 0}} {
			sub("scalar", words, i32(nil, pl[0]), i32(nil, pl[1]), unit)
		}
		sub("elementwise", words, i64(tensor.Shape{5}, 1, 0, 3, 2, -2), i64(tensor.Shape{5}, 3, 0, 4, -1, 2), unit)
		grid := strsT(tensor.Shape{2, 3}, "abcdef", "ghij", "klmno", "pq", "rstu", "vwxyz")
		sub("broadcast row", grid, i32(tensor.Shape{3}, 0, 1, 2), i32(tensor.Shape{3}, 2, 2, 1), unit)
		sub("broadcast column", grid, i32(tensor.Shape{2, 1}, 1, 0), i32(tensor.Shape{2, 1}, 1, 3), unit)
		sub("broadcast input", strsT(tensor.Shape{1}, "broadcast"), i32(tensor.Shape{3}, 0, 2, 4), i32(tensor.Shape{3}, 1, 2, 3), unit)
		sub("pos out of range", words, i32(nil, 3), i32(nil, 1), unit)
		sub("negative out of range", words, i32(nil, -6), i32(nil, 1), unit)
		sub("shape mismatch", words, i32(tensor.Shape{2}, 0, 1), i32(tensor.Shape{3}, 0, 1, 2), unit)
		sub("incompatible", words, i32(tensor.Shape{3}, 0, 1, 2), i32(tensor.Shape{3}, 1, 1, 1), unit)
		sub("3-D broadcast", strsT(tensor.Shape{1, 1, 2}, "ab", "cd"), i32(tensor.Shape{2, 1, 1}, 0, 1), i32(tensor.Shape{2, 1, 1}, 1, 1), unit)
	}
	return cs
}

func example(feats map[string]*tfpb.Feature) []byte {
	b, err := proto.Marshal(&tfpb.Example{Features: &tfpb.Features{Feature: feats}})
	if err != nil {
		panic(err)
	}
	return b
}

func fInt(v ...int64) *tfpb.Feature {
	return &tfpb.Feature{Kind: &tfpb.Feature_Int64List{Int64List: &tfpb.Int64List{Value: v}}}
}
func fFloat(v ...float32) *tfpb.Feature {
	return &tfpb.Feature{Kind: &tfpb.Feature_FloatList{FloatList: &tfpb.FloatList{Value: v}}}
}
func fBytes(v ...string) *tfpb.Feature {
	var b [][]byte
	for _, s := range v {
		b = append(b, []byte(s))
	}
	return &tfpb.Feature{Kind: &tfpb.Feature_BytesList{BytesList: &tfpb.BytesList{Value: b}}}
}

func aShapes(s ...tensor.Shape) *tfpb.AttrValue {
	l := &tfpb.AttrValue_ListValue{}
	for _, x := range s {
		l.Shape = append(l.Shape, tensor.ShapeToProto(tensor.KnownShape(x)))
	}
	return &tfpb.AttrValue{Value: &tfpb.AttrValue_List{List: l}}
}

// parseExampleCases decode serialized Examples (kept to bytes TF can
// quote in its error messages: Python cannot raise one holding invalid
// UTF-8) with dense features (with
// and without defaults) and sparse ones, through both op versions, and
// each error TF reports.
func parseExampleCases(r *rand.Rand) []tfCase {
	good := []map[string]*tfpb.Feature{
		{"age": fInt(12345), "score": fFloat(0.25, -2), "tags": fBytes("a", "bb"), "ids": fInt(1, 2, 3), "name": fBytes("n0")},
		{"age": fInt(-5), "tags": fBytes(), "ids": fInt(7)},
		{"age": fInt(0), "score": fFloat(1, 2), "ids": &tfpb.Feature{}, "name": fBytes("")},
	}
	ser := func(exs ...map[string]*tfpb.Feature) *tensor.Tensor {
		var v []string
		for _, e := range exs {
			v = append(v, string(example(e)))
		}
		return strsT(tensor.Shape{int64(len(v))}, v...)
	}
	types := kerneltest.ATypes
	defaults := []*tensor.Tensor{tensor.New(tensor.Int64, tensor.Shape{0}), tensor.FromF32(tensor.Shape{2}, []float32{0.5, -1}), strsT(nil, "none")}
	denseShapes := aShapes(tensor.Shape{1}, tensor.Shape{2}, tensor.Shape{})
	v1 := func(name string, serialized *tensor.Tensor, defs []*tensor.Tensor) tfCase {
		in := []*tensor.Tensor{serialized, strsT(tensor.Shape{0}), strsT(nil, "tags"), strsT(nil, "ids"), strsT(nil, "age"), strsT(nil, "score"), strsT(nil, "name")}
		in = append(in, defs...)
		return tfCase{name: "ParseExample " + name, op: "ParseExample", in: in, lists: map[int]int{2: 2, 3: 3, 4: 3},
			attrs: kerneltest.Attrs{"Nsparse": kerneltest.AInt(2), "Ndense": kerneltest.AInt(3), "sparse_types": types(tensor.String, tensor.Int64),
				"Tdense": types(tensor.Int64, tensor.Float, tensor.String), "dense_shapes": denseShapes}}
	}
	v2 := func(name string, serialized *tensor.Tensor, defs []*tensor.Tensor) tfCase {
		in := []*tensor.Tensor{serialized, strsT(tensor.Shape{0}), strsT(tensor.Shape{2}, "tags", "ids"), strsT(tensor.Shape{3}, "age", "score", "name"), strsT(tensor.Shape{0})}
		in = append(in, defs...)
		return tfCase{name: "ParseExampleV2 " + name, op: "ParseExampleV2", in: in, lists: map[int]int{5: 3},
			attrs: kerneltest.Attrs{"num_sparse": kerneltest.AInt(2), "sparse_types": types(tensor.String, tensor.Int64),
				"Tdense": types(tensor.Int64, tensor.Float, tensor.String), "dense_shapes": denseShapes,
				"ragged_value_types": types(), "ragged_split_types": types()}}
	}
	missingAge := map[string]*tfpb.Feature{"score": fFloat(1, 2)}
	wrongCount := map[string]*tfpb.Feature{"age": fInt(1, 2)}
	wrongType := map[string]*tfpb.Feature{"age": fFloat(1)}
	sparseType := map[string]*tfpb.Feature{"age": fInt(1), "ids": fBytes("x")}
	return []tfCase{
		v1("good", ser(good...), defaults),
		v1("empty batch", ser(), defaults),
		v1("required missing", ser(good[0], missingAge), defaults),
		v1("wrong count", ser(wrongCount), defaults),
		v1("wrong type", ser(wrongType), defaults),
		v1("sparse wrong type", ser(sparseType), defaults),
		v1("garbage", strsT(tensor.Shape{1}, "not a proto"), defaults),
		v2("good", ser(good...), defaults),
		v2("scalar", strsT(nil, string(example(good[0]))), defaults),
		v2("required missing", ser(missingAge), defaults),
		v2("wrong count", ser(good[1], wrongCount), defaults),
	}
}
