package cpu

import (
	"regexp"

	"mstream/graph"
	"mstream/kernels"
	"mstream/status"
)

// Regex kernels. TF uses RE2; Go's regexp implements RE2's syntax and
// leftmost-first semantics, so a pattern means the same in both. What Go
// does not share is RE2's rewrite language, so rewrite strings are
// expanded here as RE2::Rewrite does: \0..\9 name groups, \\ is a
// backslash, anything else after a backslash makes the rewrite invalid.
// Known divergence: on bytes that are not UTF-8, Go matches each invalid
// byte as U+FFFD where RE2 matches nothing.

func init() {
	reg("StaticRegexFullMatch", nil, nil, func(n *graph.Node) (kernels.Kernel, error) {
		pat := attrString(n, "pattern", "")
		re, err := regexp.Compile(`\A(?:` + pat + `)\z`)
		if _, err0 := regexp.Compile(pat); err0 != nil || err != nil {
			return nil, status.Errorf(status.InvalidArgument, "%s: Invalid pattern: %s, error: %v", n.Name, pat, err0)
		}
		return kernels.KernelFunc(func(ctx *kernels.Context) error {
			in := ctx.Input(0)
			out, err := ctx.Allocate(0, in.Shape)
			if err != nil {
				return err
			}
			o := out.Bools()
			for i, s := range in.Strs {
				o[i] = re.Match(s)
			}
			return nil
		}), nil
	})
	reg("StaticRegexReplace", nil, nil, func(n *graph.Node) (kernels.Kernel, error) {
		pat := attrString(n, "pattern", "")
		re, err := regexp.Compile(pat)
		if err != nil {
			return nil, status.Errorf(status.InvalidArgument, "%s: Invalid pattern: %s, error: %v", n.Name, pat, err)
		}
		rw := []byte(attrString(n, "rewrite", ""))
		global := attrBool(n, "replace_global")
		return kernels.KernelFunc(func(ctx *kernels.Context) error { return regexReplace(ctx, re, rw, global) }), nil
	})
	reg("RegexReplace", nil, nil, func(n *graph.Node) (kernels.Kernel, error) {
		global := attrBool(n, "replace_global")
		return kernels.KernelFunc(func(ctx *kernels.Context) error {
			p, rw := ctx.Input(1), ctx.Input(2)
			if len(p.Shape) != 0 {
				return ctx.Errorf(status.InvalidArgument, "Pattern must be scalar, but received %v", p.Shape)
			}
			re, err := regexp.Compile(string(p.Strs[0]))
			if err != nil {
				return ctx.Errorf(status.InvalidArgument, "Invalid pattern: %s, error: %v", p.Strs[0], err)
			}
			if len(rw.Shape) != 0 {
				return ctx.Errorf(status.InvalidArgument, "Rewrite must be scalar, but received %v", rw.Shape)
			}
			return regexReplace(ctx, re, rw.Strs[0], global)
		}), nil
	})
}

func regexReplace(ctx *kernels.Context, re *regexp.Regexp, rw []byte, global bool) error {
	in := ctx.Input(0)
	out, err := ctx.Allocate(0, in.Shape)
	if err != nil {
		return err
	}
	// RE2 refuses (leaves the string as it is) a rewrite naming a group
	// the pattern lacks.
	usable := maxSubmatch(rw) <= re.NumSubexp()
	budget := ctx.StringBytes(out)
	for i, s := range in.Strs {
		out.Strs[i] = s
		if !usable {
			continue
		}
		var ms [][]int
		if global {
			ms = re.FindAllSubmatchIndex(s, -1)
		} else if m := re.FindSubmatchIndex(s); m != nil {
			ms = [][]int{m}
		}
		if len(ms) == 0 {
			continue
		}
		// The new string's length, counted before it is made: a short
		// rewrite at every position of a long string multiplies it.
		n := int64(len(s))
		for _, m := range ms {
			n += rewriteLen(rw, s, m) - int64(m[1]-m[0])
		}
		if err := budget.Take(n); err != nil {
			return err
		}
		if global {
			out.Strs[i] = globalReplace(ms, s, rw)
		} else if b, ok := rewrite(nil, rw, s, ms[0]); ok {
			m := ms[0]
			out.Strs[i] = append(append(append([]byte{}, s[:m[0]]...), b...), s[m[1]:]...)
		}
	}
	return nil
}

// globalReplace is RE2::GlobalReplace over the matches ms of s (every
// non-overlapping match, an empty match right after the previous one
// skipped, as FindAllSubmatchIndex gives them). A rewrite that fails part
// way keeps what it appended, as RE2's does.
func globalReplace(ms [][]int, s, rw []byte) []byte {
	var out []byte
	p := 0
	for _, m := range ms {
		out = append(out, s[p:m[0]]...)
		out, _ = rewrite(out, rw, s, m)
		p = m[1]
	}
	return append(out, s[p:]...)
}

// rewriteLen bounds the number of bytes rewrite appends for match m from
// above (it is exact when the rewrite succeeds).
func rewriteLen(rw, s []byte, m []int) int64 {
	var n int64
	for i := 0; i < len(rw); i++ {
		if rw[i] != '\\' {
			n++
			continue
		}
		i++
		switch {
		case i < len(rw) && rw[i] >= '0' && rw[i] <= '9':
			if g := int(rw[i] - '0'); 2*g+1 < len(m) && m[2*g] >= 0 {
				n += int64(m[2*g+1] - m[2*g])
			}
		default:
			n++
		}
	}
	return n
}

// rewrite appends rw with \N replaced by group N of match m of s.
func rewrite(out, rw, s []byte, m []int) ([]byte, bool) {
	for i := 0; i < len(rw); i++ {
		c := rw[i]
		if c != '\\' {
			out = append(out, c)
			continue
		}
		i++
		switch {
		case i < len(rw) && rw[i] >= '0' && rw[i] <= '9':
			g := int(rw[i] - '0')
			if 2*g+1 >= len(m) {
				return out, false
			}
			if m[2*g] >= 0 {
				out = append(out, s[m[2*g]:m[2*g+1]]...)
			}
		case i < len(rw) && rw[i] == '\\':
			out = append(out, '\\')
		default:
			return out, false
		}
	}
	return out, true
}

// maxSubmatch is RE2::MaxSubmatch: the largest group a rewrite names.
func maxSubmatch(rw []byte) int {
	mx := 0
	for i := 0; i < len(rw); i++ {
		if rw[i] == '\\' && i+1 < len(rw) {
			if c := rw[i+1]; c >= '0' && c <= '9' {
				mx = max(mx, int(c-'0'))
			}
			i++
		}
	}
	return mx
}
