package tensor

import (
	"fmt"
	"strings"
)

// Shape is a fully known shape; a scalar has no dimensions.
type Shape []int64

// NumElements is the product of the dimensions (1 for a scalar).
func (s Shape) NumElements() int64 {
	n := int64(1)
	for _, d := range s {
		n *= d
	}
	return n
}

// Equal reports whether two shapes have the same dimensions.
func (s Shape) Equal(o Shape) bool {
	if len(s) != len(o) {
		return false
	}
	for i := range s {
		if s[i] != o[i] {
			return false
		}
	}
	return true
}

// Clone returns a copy that does not share storage with s.
func (s Shape) Clone() Shape { return append(Shape{}, s...) }

// String formats as TF does: [2,3], [] for a scalar.
func (s Shape) String() string { return fmtDims(s) }

// Validate checks that every dimension is non-negative and the element count
// does not overflow int64.
// The shape goes into its errors as a string: a Shape in an interface
// escapes, and every shape checked (each output's) would be an allocation.
func (s Shape) Validate() error {
	n := int64(1)
	for _, d := range s {
		if d < 0 {
			return fmt.Errorf("dimension %d in shape %s is negative", d, s.String())
		}
		if d != 0 && n > (1<<62)/d {
			return fmt.Errorf("shape %s has too many elements", s.String())
		}
		n *= d
	}
	return nil
}

// PartialShape is a shape that may be unknown in rank (Known false) or in
// some dimensions (-1), as TF's shape inference sees it.
type PartialShape struct {
	Known bool
	Dims  []int64
}

// Unknown is a shape of unknown rank.
var Unknown = PartialShape{}

// Known returns the partial shape for a fully known shape.
func KnownShape(s Shape) PartialShape {
	return PartialShape{Known: true, Dims: append([]int64{}, s...)}
}

// Rank is the number of dimensions, or -1 when unknown.
func (p PartialShape) Rank() int {
	if !p.Known {
		return -1
	}
	return len(p.Dims)
}

// FullyDefined reports whether the rank and every dimension are known.
func (p PartialShape) FullyDefined() bool {
	if !p.Known {
		return false
	}
	for _, d := range p.Dims {
		if d < 0 {
			return false
		}
	}
	return true
}

// Compatible reports whether a concrete shape fits p.
func (p PartialShape) Compatible(s Shape) bool {
	if !p.Known {
		return true
	}
	if len(p.Dims) != len(s) {
		return false
	}
	for i, d := range p.Dims {
		if d >= 0 && d != s[i] {
			return false
		}
	}
	return true
}

// String formats as TF does: <unknown>, [?,3].
func (p PartialShape) String() string {
	if !p.Known {
		return "<unknown>"
	}
	return fmtDims(p.Dims)
}

func fmtDims(d []int64) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, x := range d {
		if i > 0 {
			b.WriteByte(',')
		}
		if x < 0 {
			b.WriteByte('?')
		} else {
			fmt.Fprint(&b, x)
		}
	}
	b.WriteByte(']')
	return b.String()
}
