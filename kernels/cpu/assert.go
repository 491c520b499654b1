package cpu

import (
	"encoding/binary"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"mstream/kernels"
	"mstream/status"
	"mstream/tensor"
)

// Assert fails with INVALID_ARGUMENT when its condition is false, its
// message TF's: "assertion failed: " and each data tensor's first
// `summarize` elements in brackets, as TF's Tensor::SummarizeValue prints
// them (nested brackets per dimension, "..." when cut short).
func init() {
	kernels.Register(kernels.Def{Op: "Assert", Device: kernels.CPU, HostMemory: []string{"condition", "data"}, Factory: fn(func(ctx *kernels.Context) error {
		cond := ctx.Input(0)
		if len(cond.Shape) != 0 {
			return ctx.Errorf(status.InvalidArgument, "In[0] should be a scalar: %v", cond.Shape)
		}
		if cond.Buf[0] != 0 {
			return nil
		}
		summarize := attrInt(ctx.Node, "summarize", 3)
		var b strings.Builder
		b.WriteString("assertion failed: ")
		for i := 1; i < ctx.NumInputs(); i++ {
			b.WriteByte('[')
			b.WriteString(summarizeValue(ctx.Input(i), summarize))
			b.WriteByte(']')
			if i < ctx.NumInputs()-1 {
				b.WriteByte(' ')
			}
		}
		return ctx.Errorf(status.InvalidArgument, "%s", b.String())
	})})
}

// summarizeValue is TF's Tensor::SummarizeValue(max, print_v2=false).
func summarizeValue(t *tensor.Tensor, max int64) string {
	n := t.NumElements()
	if max < 0 {
		max = n
	}
	limit := min(max, n)
	var b strings.Builder
	if len(t.Shape) == 0 {
		for i := int64(0); i < limit; i++ {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(formatElem(t, i))
		}
		if n > limit {
			b.WriteString("...")
		}
		return b.String()
	}
	var idx int64
	printDim(&b, t, 0, limit, &idx)
	if n > limit {
		b.WriteString("...")
	}
	return b.String()
}

// printDim is TF's PrintOneDim.
func printDim(b *strings.Builder, t *tensor.Tensor, dim int, limit int64, idx *int64) {
	if *idx >= limit {
		return
	}
	count := t.Shape[dim]
	if dim == len(t.Shape)-1 {
		for i := int64(0); i < count; i++ {
			if *idx >= limit {
				if dim != 0 {
					b.WriteString("...")
				}
				return
			}
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(formatElem(t, *idx))
			*idx++
		}
		return
	}
	for i := int64(0); i < count; i++ {
		open := false
		if *idx < limit {
			b.WriteByte('[')
			open = true
		}
		printDim(b, t, dim+1, limit, idx)
		if *idx < limit || open {
			b.WriteByte(']')
		}
	}
}

// formatElem prints element i as TF's StrAppend does: floats with 6 (float)
// or 15 (double) significant digits, more when that does not read back,
// bools as 1 and 0, strings C-escaped.
func formatElem(t *tensor.Tensor, i int64) string {
	f32 := func(f float32) string {
		s := strconv.FormatFloat(float64(f), 'g', 6, 32)
		if v, _ := strconv.ParseFloat(s, 32); float32(v) != f && !math.IsNaN(float64(f)) {
			s = strconv.FormatFloat(float64(f), 'g', 9, 32)
		}
		return cFloat(s)
	}
	u16 := func() uint16 { return binary.LittleEndian.Uint16(t.Buf[2*i:]) }
	switch t.DType {
	case tensor.Float:
		return f32(t.F32()[i])
	case tensor.Half:
		return f32(tensor.HalfToF32(u16()))
	case tensor.Bfloat16:
		return f32(tensor.Bfloat16ToF32(u16()))
	case tensor.Double:
		f := t.F64()[i]
		s := strconv.FormatFloat(f, 'g', 15, 64)
		if v, _ := strconv.ParseFloat(s, 64); v != f && !math.IsNaN(f) {
			s = strconv.FormatFloat(f, 'g', 17, 64)
		}
		return cFloat(s)
	case tensor.Bool:
		if t.Buf[i] != 0 {
			return "1"
		}
		return "0"
	case tensor.String:
		return cEscape(t.Strs[i])
	case tensor.Int32:
		return strconv.FormatInt(int64(t.I32()[i]), 10)
	case tensor.Int64:
		return strconv.FormatInt(t.I64()[i], 10)
	case tensor.Int8:
		return strconv.FormatInt(int64(int8(t.Buf[i])), 10)
	case tensor.Uint8:
		return strconv.FormatUint(uint64(t.Buf[i]), 10)
	case tensor.Int16:
		return strconv.FormatInt(int64(int16(u16())), 10)
	case tensor.Uint16:
		return strconv.FormatUint(uint64(u16()), 10)
	case tensor.Uint32:
		return strconv.FormatUint(uint64(binary.LittleEndian.Uint32(t.Buf[4*i:])), 10)
	case tensor.Uint64:
		return strconv.FormatUint(binary.LittleEndian.Uint64(t.Buf[8*i:]), 10)
	}
	return "?"
}

// cFloat turns Go's spellings of the specials and exponents into C's.
func cFloat(s string) string {
	switch s {
	case "NaN":
		return "nan"
	case "+Inf":
		return "inf"
	case "-Inf":
		return "-inf"
	}
	return s
}

// cEscape is absl's Utf8SafeCEscape: C escapes for control characters,
// quotes and backslash; other bytes of valid UTF-8 as they are.
func cEscape(s []byte) string {
	var b strings.Builder
	for len(s) > 0 {
		c := s[0]
		switch c {
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '"':
			b.WriteString(`\"`)
		case '\'':
			b.WriteString(`\'`)
		case '\\':
			b.WriteString(`\\`)
		default:
			if c >= 0x80 {
				if r, n := utf8.DecodeRune(s); r != utf8.RuneError || n > 1 {
					b.Write(s[:n])
					s = s[n:]
					continue
				}
			}
			if c < 0x20 || c >= 0x7f {
				b.WriteString(`\` + strconv.FormatInt(int64(c)>>6, 8) + strconv.FormatInt(int64(c)>>3&7, 8) + strconv.FormatInt(int64(c)&7, 8))
			} else {
				b.WriteByte(c)
			}
		}
		s = s[1:]
	}
	return b.String()
}
