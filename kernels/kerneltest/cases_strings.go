package kerneltest

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"mstream/status"
	"mstream/tensor"
)

// String op families. The hashes have no independent Go reference here:
// their cases check what holds whatever the hash (shape, range, equal
// strings in equal buckets), and kernels/cpu's TestStringOpsLikeTF holds
// the values bit for bit to real TF's.

// hashCheck checks a bucket output for the input strings.
func hashCheck(in *tensor.Tensor, buckets int64) func([]*tensor.Tensor) error {
	return func(out []*tensor.Tensor) error {
		o := out[0]
		if o.DType != tensor.Int64 || !o.Shape.Equal(in.Shape) {
			return fmt.Errorf("output %v for input %v", o, in)
		}
		seen := map[string]int64{}
		for i, b := range o.I64() {
			if b < 0 || b >= buckets {
				return fmt.Errorf("bucket %d outside [0, %d)", b, buckets)
			}
			s := string(in.Strs[i])
			if prev, ok := seen[s]; ok && prev != b {
				return fmt.Errorf("%q hashed to %d and %d", s, prev, b)
			}
			seen[s] = b
		}
		return nil
	}
}

func init() {
	for _, op := range []string{"StringToHashBucketFast", "StringToHashBucket", "StringToHashBucketStrong"} {
		op := op
		Add(op, func(r *rand.Rand) []Case {
			var cs []Case
			for _, s := range EdgeShapes {
				in := RandStrings(r, s)
				if len(in.Strs) > 1 {
					in.Strs[len(in.Strs)-1] = in.Strs[0] // a repeat
				}
				buckets := int64(1 + r.Intn(1000))
				attrs := Attrs{"num_buckets": AInt(buckets)}
				if op == "StringToHashBucketStrong" {
					attrs["key"] = AInts(r.Int63(), r.Int63())
				}
				cs = append(cs, Case{Node: NodeFor(op, attrs, ins(in), nil), Inputs: ins(in), Check: hashCheck(in, buckets)})
			}
			if op == "StringToHashBucketStrong" {
				in := RandStrings(r, tensor.Shape{2})
				cs = append(cs, Case{Node: NodeFor(op, Attrs{"num_buckets": AInt(3), "key": AInts(1)}, ins(in), nil), Inputs: ins(in), Err: status.InvalidArgument, ErrMsg: "Key must have 2 elements"})
			}
			return cs
		})
	}
	Add("StringJoin", func(r *rand.Rand) []Case {
		var cs []Case
		for _, s := range EdgeShapes {
			k := 1 + r.Intn(3)
			var in []*tensor.Tensor
			for i := 0; i < k; i++ {
				if r.Intn(3) == 0 {
					in = append(in, RandStrings(r, nil))
				} else {
					in = append(in, RandStrings(r, s))
				}
			}
			sep := []string{"", ",", " | "}[r.Intn(3)]
			shape := tensor.Shape{}
			for _, t := range in {
				if len(t.Shape) > 0 {
					shape = t.Shape
				}
			}
			want := tensor.New(tensor.String, shape)
			for i := range want.Strs {
				var parts []string
				for _, t := range in {
					if len(t.Shape) == 0 {
						parts = append(parts, string(t.Strs[0]))
					} else {
						parts = append(parts, string(t.Strs[i]))
					}
				}
				want.Strs[i] = []byte(strings.Join(parts, sep))
			}
			cs = append(cs, Case{Node: NodeFor("StringJoin", Attrs{"separator": AStr(sep)}, in, map[int]int{0: k}), Inputs: in, Want: []*tensor.Tensor{want}})
		}
		a, b := RandStrings(r, tensor.Shape{2, 3}), RandStrings(r, tensor.Shape{3, 2})
		cs = append(cs, Case{Node: NodeForUnknown("StringJoin", nil, ins(a, b), map[int]int{0: 2}), Inputs: ins(a, b), Err: status.InvalidArgument, ErrMsg: "Input shapes do not match"})
		return cs
	})
}

// randWords draws strings over a small alphabet, so that patterns match
// some and not others.
func randWords(r *rand.Rand, shape tensor.Shape) *tensor.Tensor {
	t := tensor.New(tensor.String, shape)
	for i := range t.Strs {
		b := make([]byte, r.Intn(8))
		for j := range b {
			b[j] = "ab1 "[r.Intn(4)]
		}
		t.Strs[i] = b
	}
	return t
}

// StringLength in bytes and in UTF-8 characters, over words of ASCII,
// two-, three- and four-byte characters and stray bytes (a lone
// continuation byte, a truncated sequence: TF counts invalid UTF-8 byte by
// byte rather than failing). The reference counts the bytes that are not
// continuation bytes (10xxxxxx), as TF's UTF8StrLen.
func init() {
	Add("StringLength", func(r *rand.Rand) []Case {
		pieces := []string{"a", "Z", " ", "é", "ß", "€", "中", "😀", "\x80", "\xbf", "\xe2\x82", "\xff", "\x00"}
		var cs []Case
		for _, unit := range []string{"", "BYTE", "UTF8_CHAR"} {
			for _, s := range EdgeShapes {
				in := tensor.New(tensor.String, s)
				want := tensor.New(tensor.Int32, s)
				for i := range in.Strs {
					var b []byte
					for range r.Intn(7) {
						b = append(b, pieces[r.Intn(len(pieces))]...)
					}
					in.Strs[i] = b
					n := len(b)
					if unit == "UTF8_CHAR" {
						n = 0
						for _, c := range b {
							if c&0xc0 != 0x80 {
								n++
							}
						}
					}
					want.I32()[i] = int32(n)
				}
				attrs := Attrs{}
				if unit != "" {
					attrs["unit"] = AStr(unit)
				}
				args := ins(in)
				cs = append(cs, Case{Node: NodeFor("StringLength", attrs, args, nil), Inputs: args, Want: []*tensor.Tensor{want}})
			}
		}
		return cs
	})
}

// The regex families take their reference from the standard library's
// strings functions on patterns whose meaning they spell out; real RE2's
// behaviour is TestStringOpsLikeTF's to check.
func init() {
	Add("StaticRegexFullMatch", func(r *rand.Rand) []Case {
		var cs []Case
		for _, s := range EdgeShapes {
			in := randWords(r, s)
			want := tensor.New(tensor.Bool, s)
			for i, w := range in.Strs {
				want.Bools()[i] = len(w) > 0 && strings.Trim(string(w), "ab") == "" // [ab]+
			}
			cs = append(cs, Case{Node: NodeFor("StaticRegexFullMatch", Attrs{"pattern": AStr("[ab]+")}, ins(in), nil), Inputs: ins(in), Want: []*tensor.Tensor{want}})
		}
		in := randWords(r, tensor.Shape{2})
		cs = append(cs, Case{Node: NodeFor("StaticRegexFullMatch", Attrs{"pattern": AStr("(a")}, ins(in), nil), Inputs: ins(in), Err: status.InvalidArgument, ErrMsg: "Invalid pattern"})
		return cs
	})
	replace := func(op string) Gen {
		return func(r *rand.Rand) []Case {
			var cs []Case
			for _, s := range EdgeShapes {
				for _, global := range []bool{true, false} {
					in := randWords(r, s)
					want := tensor.New(tensor.String, s)
					n := -1
					if !global {
						n = 1
					}
					for i, w := range in.Strs {
						want.Strs[i] = []byte(strings.Replace(string(w), "a", "<a>", n))
					}
					attrs := Attrs{"replace_global": ABool(global)}
					args := ins(in)
					if op == "StaticRegexReplace" {
						attrs["pattern"], attrs["rewrite"] = AStr("a"), AStr(`<\0>`)
					} else {
						args = ins(in, tensor.FromStrings(nil, []string{"(a)"}), tensor.FromStrings(nil, []string{`<\1>`}))
					}
					cs = append(cs, Case{Node: NodeFor(op, attrs, args, nil), Inputs: args, Want: []*tensor.Tensor{want}})
				}
			}
			if op == "RegexReplace" {
				in := randWords(r, tensor.Shape{2})
				args := ins(in, tensor.FromStrings(nil, []string{"*"}), tensor.FromStrings(nil, []string{""}))
				cs = append(cs, Case{Node: NodeFor(op, nil, args, nil), Inputs: args, Err: status.InvalidArgument, ErrMsg: "Invalid pattern"})
			}
			return cs
		}
	}
	Add("StaticRegexReplace", replace("StaticRegexReplace"))
	Add("RegexReplace", replace("RegexReplace"))
}

func init() {
	// AsString's reference is strconv on integers and bools; its float
	// formats are TestStringOpsLikeTF's to hold to TF's printf.
	Add("AsString", func(r *rand.Rand) []Case {
		var cs []Case
		for _, dt := range []tensor.DType{tensor.Int8, tensor.Int16, tensor.Int32, tensor.Int64, tensor.Uint8, tensor.Uint16, tensor.Uint32, tensor.Uint64, tensor.Bool} {
			for _, s := range EdgeShapes {
				in := Rand(r, dt, s)
				want := tensor.New(tensor.String, s)
				for i := range want.Strs {
					switch dt {
					case tensor.Bool:
						want.Strs[i] = []byte(strconv.FormatBool(in.Bools()[i]))
					case tensor.Int64:
						want.Strs[i] = []byte(strconv.FormatInt(in.I64()[i], 10))
					case tensor.Uint64:
						want.Strs[i] = []byte(strconv.FormatUint(in.U64()[i], 10))
					default:
						want.Strs[i] = []byte(strconv.FormatInt(int64(F64s(in)[i]), 10))
					}
				}
				cs = append(cs, Case{Node: NodeFor("AsString", nil, ins(in), nil), Inputs: ins(in), Want: []*tensor.Tensor{want}})
			}
		}
		in := Rand(r, tensor.Float, tensor.Shape{3})
		want := tensor.New(tensor.String, tensor.Shape{3})
		for i, v := range in.F32() {
			want.Strs[i] = []byte(strconv.FormatFloat(float64(v), 'f', 2, 64))
		}
		cs = append(cs, Case{Node: NodeFor("AsString", Attrs{"precision": AInt(2)}, ins(in), nil), Inputs: ins(in), Want: []*tensor.Tensor{want}})
		for _, dt := range []tensor.DType{tensor.Double, tensor.Half, tensor.Bfloat16, tensor.Complex64, tensor.Complex128, tensor.String} {
			var x *tensor.Tensor
			if dt == tensor.String {
				x = RandStrings(r, tensor.Shape{2})
			} else if dt.IsComplex() {
				x = tensor.New(dt, tensor.Shape{2})
			} else {
				x = Rand(r, dt, tensor.Shape{2})
			}
			cs = append(cs, Case{Node: NodeFor("AsString", Attrs{"width": AInt(3)}, ins(x), nil), Inputs: ins(x), Check: func(out []*tensor.Tensor) error {
				for _, s := range out[0].Strs {
					if len(s) < 3 {
						return fmt.Errorf("%q is narrower than width 3", s)
					}
				}
				return nil
			}})
		}
		in = Rand(r, tensor.Int32, tensor.Shape{2})
		cs = append(cs, Case{Node: NodeFor("AsString", Attrs{"precision": AInt(2)}, ins(in), nil), Inputs: ins(in), Err: status.InvalidArgument, ErrMsg: "precision not supported"})
		return cs
	})
}

func init() {
	// StringSplitV2's reference is strings.SplitN (a separator) and
	// strings.Fields (none) over words of "ab1 " and commas.
	Add("StringSplitV2", func(r *rand.Rand) []Case {
		var cs []Case
		for _, sep := range []string{"", ",", "a1"} {
			for _, ms := range []int{-1, 1, 2} {
				in := randWords(r, tensor.Shape{int64(r.Intn(5))})
				for i := range in.Strs {
					in.Strs[i] = []byte(strings.ReplaceAll(string(in.Strs[i]), "b", ","))
				}
				var idx []int64
				var vals []string
				widest := 0
				for i, s := range in.Strs {
					var parts []string
					switch {
					case sep != "" && ms < 0:
						parts = strings.Split(string(s), sep)
					case sep != "":
						parts = strings.SplitN(string(s), sep, ms+1)
					case ms < 0:
						parts = strings.Fields(string(s))
					default:
						rest := strings.TrimLeft(string(s), " ")
						for k := 0; k < ms && rest != ""; k++ {
							end := strings.IndexByte(rest, ' ')
							if end < 0 {
								end = len(rest)
							}
							parts = append(parts, rest[:end])
							rest = strings.TrimLeft(rest[end:], " ")
							if k == ms-1 {
								parts = append(parts, rest)
							}
						}
					}
					widest = max(widest, len(parts))
					for j, p := range parts {
						idx = append(idx, int64(i), int64(j))
						vals = append(vals, p)
					}
				}
				args := ins(in, tensor.FromStrings(nil, []string{sep}))
				want := []*tensor.Tensor{
					tensor.FromI64(tensor.Shape{int64(len(vals)), 2}, idx),
					tensor.FromStrings(tensor.Shape{int64(len(vals))}, vals),
					tensor.FromI64(tensor.Shape{2}, []int64{int64(len(in.Strs)), int64(widest)}),
				}
				cs = append(cs, Case{Node: NodeFor("StringSplitV2", Attrs{"maxsplit": AInt(int64(ms))}, args, nil), Inputs: args, Want: want})
			}
		}
		args := ins(randWords(r, tensor.Shape{2}), tensor.FromStrings(tensor.Shape{1}, []string{","}))
		cs = append(cs, Case{Node: NodeForUnknown("StringSplitV2", nil, args, nil), Inputs: args, Err: status.InvalidArgument, ErrMsg: "sep must be a scalar"})
		return cs
	})
}

func init() {
	// Substr's reference is Go slicing of ASCII words (bytes and
	// characters agree there); UTF-8, negative positions and broadcasting
	// are TestStringOpsLikeTF's.
	Add("Substr", func(r *rand.Rand) []Case {
		var cs []Case
		for _, dt := range []tensor.DType{tensor.Int32, tensor.Int64} {
			for _, unit := range []string{"BYTE", "UTF8_CHAR"} {
				for _, s := range EdgeShapes {
					in := randWords(r, s)
					pos, length := tensor.New(dt, s), tensor.New(dt, s)
					want := tensor.New(tensor.String, s)
					for i, w := range in.Strs {
						p, l := r.Intn(len(w)+1), r.Intn(6)
						SetF64(pos, i, float64(p))
						SetF64(length, i, float64(l))
						want.Strs[i] = w[p:min(p+l, len(w))]
					}
					args := ins(in, pos, length)
					cs = append(cs, Case{Node: NodeFor("Substr", Attrs{"unit": AStr(unit)}, args, nil), Inputs: args, Want: []*tensor.Tensor{want}})
				}
			}
		}
		args := ins(tensor.FromStrings(tensor.Shape{1}, []string{"ab"}), tensor.ScalarI32(3), tensor.ScalarI32(1))
		cs = append(cs, Case{Node: NodeFor("Substr", nil, args, nil), Inputs: args, Err: status.InvalidArgument, ErrMsg: "out of range"})
		return cs
	})
}

// ReadFile: a file of random bytes (an empty one too) read back whole; a
// missing file is NOT_FOUND naming it.
func init() {
	Add("ReadFile", func(r *rand.Rand) []Case {
		dir, err := os.MkdirTemp("", "kerneltest-readfile")
		if err != nil {
			panic(err)
		}
		var cs []Case
		for _, n := range []int{0, 1 + r.Intn(300)} {
			b := make([]byte, n)
			r.Read(b)
			path := filepath.Join(dir, fmt.Sprintf("f%d", n))
			if err := os.WriteFile(path, b, 0o644); err != nil {
				panic(err)
			}
			in := []*tensor.Tensor{tensor.FromStrings(tensor.Shape{}, []string{path})}
			cs = append(cs, Case{Node: NodeFor("ReadFile", nil, in, nil), Inputs: in,
				Want: []*tensor.Tensor{tensor.FromStrings(tensor.Shape{}, []string{string(b)})}})
		}
		missing := []*tensor.Tensor{tensor.FromStrings(tensor.Shape{}, []string{filepath.Join(dir, "missing")})}
		cs = append(cs, Case{Node: NodeFor("ReadFile", nil, missing, nil), Inputs: missing, Err: status.NotFound, ErrMsg: "missing"})
		return cs
	})
}
