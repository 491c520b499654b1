package vec

/*
#include "vec.h"
#include "calls.h"
*/
import "C"

import (
	"fmt"
	"unsafe"

	"mstream/kernels/cpu/ccall"
)

// AttentionScratch is how many floats of scratch Attention needs for sk
// keys of depth d: k transposed, and one block of query rows' scores
// (and their scaled query).
func AttentionScratch(sk, d int) int {
	ldt := (sk + 63) &^ 63
	return (d+C.MS_ATT_MR)*ldt + C.MS_ATT_MR*d
}

// Attention writes out = softmax(scale q k^T) v for one (batch, head):
// q [sq, d] (rows ldq apart), k [sk, d] (ldk), v [sk, dv] (ldv), out
// [sq, dv] (ldo); with scaleQ, q times scale before the product (the
// float32 rounding of Keras' scaled query), else the scores times scale.
// Each block of query rows keeps its scores in cache through the softmax
// into the second product, and the softmax's 1 / sum multiplies the
// context row once. scratch holds at least AttentionScratch(sk, d)
// floats. It reports false, touching nothing, below AVX-512: the caller
// then takes its GEMMs and Softmax.
func Attention(sq, sk, d, dv int, q []float32, ldq int, k []float32, ldk int, v []float32, ldv int,
	out []float32, ldo int, scale float32, scaleQ bool, scratch []float32) bool {
	if sq < 0 || sk < 0 || d < 0 || dv < 0 || ldq < d || ldk < d || ldv < dv || ldo < dv ||
		short(len(q), sq, d, ldq) || short(len(k), sk, d, ldk) ||
		short(len(v), sk, dv, ldv) || short(len(out), sq, dv, ldo) ||
		len(scratch) < AttentionScratch(sk, d) {
		panic(fmt.Sprintf("vec: Attention with sq=%d sk=%d d=%d dv=%d ldq=%d ldk=%d ldv=%d ldo=%d len(q)=%d len(k)=%d len(v)=%d len(out)=%d len(scratch)=%d",
			sq, sk, d, dv, ldq, ldk, ldv, ldo, len(q), len(k), len(v), len(out), len(scratch)))
	}
	if CurrentLevel() < AVX512 {
		return false
	}
	if sq == 0 || dv == 0 {
		return true
	}
	if sk == 0 {
		panic("vec: Attention with no keys (the softmax of no scores)")
	}
	args := C.ms_attention_args{sq: C.long(sq), sk: C.long(sk), d: C.long(d), dv: C.long(dv), q: ptr(q), ldq: C.long(ldq),
		k: ptr(k), ldk: C.long(ldk), v: ptr(v), ldv: C.long(ldv), out: (*C.float)(&out[0]), ldo: C.long(ldo),
		scale: C.float(scale), scale_q: C.int(b2i(scaleQ)), scratch: (*C.float)(&scratch[0])}
	ccall.Call(C.ms_attention_call, unsafe.Pointer(&args), ccall.Flops(2*float64(sq)*float64(sk)*float64(d+dv)+20*float64(sq)*float64(sk)))
	return args.ret != 0
}

// ptr is &x[0], or nil for an empty x (an operand of depth 0 is never
// read).
func ptr(x []float32) *C.float {
	if len(x) == 0 {
		return nil
	}
	return (*C.float)(&x[0])
}
