package tensor

import (
	"bytes"
	"strings"
	"testing"

	"mstream/proto/tfpb"
)

// TestStringTensorContent: a string tensor's tensor_content is TF's list
// encoding (every length as a varint32, then the bytes); FromProto reads
// what ToAttrProto writes, and refuses lengths that do not add up.
func TestStringTensorContent(t *testing.T) {
	long := strings.Repeat("x", 300) // a two-byte varint
	in := New(String, Shape{3})
	in.Strs = [][]byte{[]byte("ab"), {}, []byte(long)}
	p := ToAttrProto(in)
	if len(p.StringVal) != 0 || len(p.TensorContent) != 1+1+2+2+300 {
		t.Fatalf("ToAttrProto: string_val %d, tensor_content %d bytes", len(p.StringVal), len(p.TensorContent))
	}
	out, err := FromProto(p)
	if err != nil {
		t.Fatal(err)
	}
	for i := range in.Strs {
		if !bytes.Equal(out.Strs[i], in.Strs[i]) {
			t.Errorf("element %d: %q, want %q", i, out.Strs[i], in.Strs[i])
		}
	}
	shape := &tfpb.TensorShapeProto{Dim: []*tfpb.TensorShapeProto_Dim{{Size: 2}}}
	for _, bad := range [][]byte{
		{2, 3, 'a', 'b'},                  // lengths say 5 bytes, 2 follow
		{2, 1, 'a', 'b', 'c', 'd'},        // lengths say 3 bytes, 4 follow
		{0x80},                            // truncated varint
		{0xff, 0xff, 0xff, 0xff, 0x7f, 0}, // a length beyond 32 bits
	} {
		_, err := FromProto(&tfpb.TensorProto{Dtype: tfpb.DataType_DT_STRING, TensorShape: shape, TensorContent: bad})
		if err == nil || !strings.Contains(err.Error(), "tensor_content") {
			t.Errorf("FromProto(% x): %v, want an error naming tensor_content", bad, err)
		}
	}
}

// TestToAttrProtoTypedField: zero or one element goes to the dtype's typed
// field, as TF's SetAttrValue does; FromProto reads each back.
func TestToAttrProtoTypedField(t *testing.T) {
	for _, dt := range []DType{Float, Double, Int32, Int16, Int8, Uint8, Uint16, Int64, Uint32, Uint64, Bool, Half, Bfloat16, Complex64, Complex128, String} {
		one := New(dt, Shape{})
		if dt == String {
			one.Strs[0] = []byte("s")
		} else {
			for i := range one.Buf {
				one.Buf[i] = byte(0x3c + i)
			}
			if dt == Bool {
				one.Buf[0] = 1
			}
		}
		p := ToAttrProto(one)
		if len(p.TensorContent) != 0 {
			t.Errorf("%v scalar: tensor_content set", dt)
		}
		back, err := FromProto(p)
		if err != nil {
			t.Fatalf("%v: %v", dt, err)
		}
		if dt == String {
			if string(back.Strs[0]) != "s" {
				t.Errorf("string scalar: %q", back.Strs[0])
			}
		} else if !bytes.Equal(back.Buf, one.Buf) {
			t.Errorf("%v scalar: % x, want % x", dt, back.Buf, one.Buf)
		}
		if e := ToAttrProto(New(dt, Shape{0})); len(e.TensorContent)+len(e.StringVal)+len(e.FloatVal) != 0 {
			t.Errorf("%v empty: values written", dt)
		}
	}
}
