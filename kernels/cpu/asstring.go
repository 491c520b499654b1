package cpu

import (
	"fmt"
	"math"
	"strings"

	"mstream/graph"
	"mstream/kernels"
	"mstream/status"
	"mstream/tensor"
)

// AsString formats each element as TF's kernel does: it builds a C printf
// format from the attrs (fill flag, width, precision, then d/u/f/e/g/s)
// and applies it per element. Go's fmt agrees with C's printf on these
// verbs and flags once %u becomes %d, %g gets C's default precision of 6,
// and infinities and NaNs are spelt as C spells them (inf, nan).

type asStringFmt struct {
	dt           tensor.DType
	flag         string
	width, prec  int64
	verb         byte // d, f, e, g or s; 0 for bool and pass-through strings
	float, cmplx bool
}

func init() {
	reg("AsString", nil, nil, func(n *graph.Node) (kernels.Kernel, error) {
		f, err := parseAsString(n)
		if err != nil {
			return nil, err
		}
		return kernels.KernelFunc(func(ctx *kernels.Context) error { return f.compute(ctx) }), nil
	})
}

func parseAsString(n *graph.Node) (*asStringFmt, error) {
	f := &asStringFmt{dt: attrType(n, "T"), width: attrInt(n, "width", -1), prec: attrInt(n, "precision", -1)}
	sci, short := attrBool(n, "scientific"), attrBool(n, "shortest")
	fill := attrString(n, "fill", "")
	bad := func(format string, args ...any) error {
		return status.Errorf(status.InvalidArgument, "%s: %s", n.Name, fmt.Sprintf(format, args...))
	}
	switch f.dt {
	case tensor.String, tensor.Half, tensor.Bfloat16, tensor.Float, tensor.Double, tensor.Complex64, tensor.Complex128:
		f.float = f.dt != tensor.String
		f.cmplx = f.dt == tensor.Complex64 || f.dt == tensor.Complex128
	default:
		if sci || short {
			return nil, bad("scientific and shortest format not supported for datatype %v", f.dt)
		}
		if f.prec >= 0 {
			return nil, bad("precision not supported for datatype %v", f.dt)
		}
	}
	if len(fill) > 1 {
		return nil, bad("Fill string must be one or fewer characters")
	}
	if sci && short {
		return nil, bad("Cannot select both scientific and shortest notation")
	}
	if fill != "" {
		if !strings.Contains(" +-0#", fill) {
			return nil, bad("Fill argument not supported: \"%s\"", fill)
		}
		f.flag = fill
	}
	switch {
	case f.dt == tensor.String:
		if f.width > 0 {
			f.verb = 's'
		}
	case f.float && short:
		f.verb = 'g'
	case f.float && sci:
		f.verb = 'e'
	case f.float:
		f.verb = 'f'
	case f.dt == tensor.Bool:
	case f.dt.IsInteger():
		f.verb = 'd'
		if (f.dt == tensor.Uint8 || f.dt == tensor.Uint16 || f.dt == tensor.Uint32 || f.dt == tensor.Uint64) && (f.flag == "+" || f.flag == " ") {
			f.flag = "" // C's %u has no sign to show
		}
	default:
		return nil, bad("Type not supported: %v", f.dt)
	}
	return f, nil
}

// spec is the Go format for one number.
func (f *asStringFmt) spec() string {
	s := "%" + f.flag
	if f.width > -1 {
		s += fmt.Sprint(f.width)
	}
	prec := f.prec
	if prec < 0 && f.verb == 'g' {
		prec = 6 // C's default; Go's %g would print the shortest form
	}
	if prec > -1 {
		s += "." + fmt.Sprint(prec)
	}
	return s + string(f.verb)
}

// pad applies the flag and width to an already formatted word, as C
// pads what it cannot zero-fill (inf, nan, strings).
func (f *asStringFmt) pad(w string) string {
	if n := int(f.width) - len(w); n > 0 {
		if f.flag == "-" {
			return w + strings.Repeat(" ", n)
		}
		return strings.Repeat(" ", n) + w
	}
	return w
}

func (f *asStringFmt) float64s(v float64) string {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		w := "inf"
		if math.IsNaN(v) {
			w = "nan"
		}
		if math.Signbit(v) {
			w = "-" + w
		} else if f.flag == "+" || f.flag == " " {
			w = f.flag + w
		}
		return f.pad(w)
	}
	return fmt.Sprintf(f.spec(), v)
}

func (f *asStringFmt) compute(ctx *kernels.Context) error {
	in := ctx.Input(0)
	if in.DType == tensor.String && f.verb == 0 {
		ctx.SetOutput(0, in)
		return nil
	}
	out, err := ctx.Allocate(0, in.Shape)
	if err != nil {
		return err
	}
	n := int(in.NumElements())
	// Every element is at least width bytes: those are counted before any
	// is formatted (a width from the attr could ask for more than memory),
	// the rest of each element as it is made.
	budget := ctx.StringBytes(out)
	wide := max(f.width, 0)
	if wide > 0 && int64(n) > math.MaxInt64/wide {
		err = budget.Take(-1) // more than any limit
	} else {
		err = budget.Take(int64(n) * wide)
	}
	if err != nil {
		return err
	}
	put := func(i int, s string) {
		if err == nil {
			err = budget.Take(max(int64(len(s))-wide, 0))
		}
		if err == nil {
			out.Strs[i] = []byte(s)
		}
	}
	spec := f.spec()
	switch in.DType {
	case tensor.String:
		for i, s := range in.Strs {
			s = []byte(cString(s))
			if f.prec >= 0 && int(f.prec) < len(s) {
				s = s[:f.prec]
			}
			put(i, f.pad(string(s)))
		}
	case tensor.Bool:
		for i, b := range in.Bools() {
			put(i, map[bool]string{true: "true", false: "false"}[b])
		}
	case tensor.Complex64, tensor.Complex128:
		for i := 0; i < n; i++ {
			var c complex128
			if in.DType == tensor.Complex64 {
				c = complex128(in.C64()[i])
			} else {
				c = in.C128()[i]
			}
			put(i, "("+f.float64s(real(c))+","+f.float64s(imag(c))+")")
		}
	case tensor.Float, tensor.Double, tensor.Half, tensor.Bfloat16:
		for i := 0; i < n; i++ {
			put(i, f.float64s(in.ElementF64(i)))
		}
	case tensor.Uint64:
		for i, v := range in.U64() {
			put(i, fmt.Sprintf(spec, v))
		}
	case tensor.Int64:
		for i, v := range in.I64() {
			put(i, fmt.Sprintf(spec, v))
		}
	default: // the narrower integers, exact in a float64
		for i := 0; i < n; i++ {
			put(i, fmt.Sprintf(spec, int64(in.ElementF64(i))))
		}
	}
	return err
}
