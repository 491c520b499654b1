package cpu

import (
	"math"
	"math/rand"
	"testing"

	"mstream/kernels/kerneltest"
	"mstream/tensor"
)

// hashInputs are strings of every length up to 130 (each branch of
// farmhash and of the 8-byte loops), long ones, and fixed edge cases.
func hashInputs(r *rand.Rand) *tensor.Tensor {
	v := []string{"", "a", "hello", "\x00", "\xff\xfe\x00\x01", "feature_column", "ünïcödé"}
	for n := 0; n <= 130; n++ {
		b := make([]byte, n)
		r.Read(b)
		v = append(v, string(b))
	}
	for _, n := range []int{255, 256, 1000, 4097} {
		b := make([]byte, n)
		r.Read(b)
		v = append(v, string(b))
	}
	return tensor.FromStrings(tensor.Shape{int64(len(v))}, v)
}

func strsT(shape tensor.Shape, v ...string) *tensor.Tensor { return tensor.FromStrings(shape, v) }

// TestStringOpsLikeTF runs the string kernels and real TF 2.15 on the same
// inputs and compares outputs bit for bit, or error codes.
func TestStringOpsLikeTF(t *testing.T) {
	r := rand.New(rand.NewSource(int64(rand.Uint32())))
	in := hashInputs(r)
	var cs []tfCase
	for _, b := range []int64{1, 7, 1 << 20, math.MaxInt64} {
		for _, op := range []string{"StringToHashBucketFast", "StringToHashBucket"} {
			cs = append(cs, tfCase{name: op, op: op, attrs: kerneltest.Attrs{"num_buckets": kerneltest.AInt(b)}, in: []*tensor.Tensor{in}})
		}
		k0, k1 := int64(r.Uint64()), int64(r.Uint64())
		cs = append(cs, tfCase{name: "Strong", op: "StringToHashBucketStrong", attrs: kerneltest.Attrs{"num_buckets": kerneltest.AInt(b), "key": kerneltest.AInts(k0, k1)}, in: []*tensor.Tensor{in}})
	}
	grid := strsT(tensor.Shape{2, 3}, "a", "", "ccc", "d\x00", "e", "ff")
	cs = append(cs,
		tfCase{name: "Fast 2-D", op: "StringToHashBucketFast", attrs: kerneltest.Attrs{"num_buckets": kerneltest.AInt(1000)}, in: []*tensor.Tensor{grid}},
		tfCase{name: "Fast empty", op: "StringToHashBucketFast", attrs: kerneltest.Attrs{"num_buckets": kerneltest.AInt(10)}, in: []*tensor.Tensor{strsT(tensor.Shape{0, 4})}},
		tfCase{name: "Strong bad key", op: "StringToHashBucketStrong", attrs: kerneltest.Attrs{"num_buckets": kerneltest.AInt(10), "key": kerneltest.AInts(1, 2, 3)}, in: []*tensor.Tensor{grid}},
		tfCase{name: "Join", op: "StringJoin", attrs: kerneltest.Attrs{"separator": kerneltest.AStr(", ")}, in: []*tensor.Tensor{grid, strsT(nil, "s"), grid}, lists: map[int]int{0: 3}},
		tfCase{name: "Join scalars", op: "StringJoin", attrs: kerneltest.Attrs{}, in: []*tensor.Tensor{strsT(nil, "x"), strsT(nil, "")}, lists: map[int]int{0: 2}},
		tfCase{name: "Join one", op: "StringJoin", attrs: kerneltest.Attrs{"separator": kerneltest.AStr("--")}, in: []*tensor.Tensor{grid}, lists: map[int]int{0: 1}},
		tfCase{name: "Join mismatch", op: "StringJoin", attrs: kerneltest.Attrs{}, in: []*tensor.Tensor{grid, strsT(tensor.Shape{3, 2}, "1", "2", "3", "4", "5", "6")}, lists: map[int]int{0: 2}},
	)
	cs = append(cs, moreStringCases(r)...)
	ok := compareWithTF(t, cs)
	t.Logf("%d of %d cases agree with TF", ok, len(cs))
}
