package cpu

import (
	"math/rand"

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
	return append(cs, stitchCases(r)...)
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
