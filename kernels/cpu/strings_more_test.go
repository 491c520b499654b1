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
	return cs
}
