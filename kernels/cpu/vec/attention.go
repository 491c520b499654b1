package vec

/*
long ms_attention_scratch(long sk, long d);
int ms_attention_f32(long sq, long sk, long d, long dv, const float *q, long ldq, const float *k, long ldk,
		const float *v, long ldv, float *out, long ldo, float scale, int scale_q, float *scratch);
*/
import "C"

import "fmt"

// AttentionScratch is how many floats of scratch Attention needs for sk
// keys of depth d: k transposed, and one block of query rows' scores
// (and their scaled query).
func AttentionScratch(sk, d int) int {
	return int(C.ms_attention_scratch(C.long(sk), C.long(d)))
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
	return C.ms_attention_f32(C.long(sq), C.long(sk), C.long(d), C.long(dv), ptr(q), C.long(ldq), ptr(k), C.long(ldk),
		ptr(v), C.long(ldv), (*C.float)(&out[0]), C.long(ldo), C.float(scale), C.int(b2i(scaleQ)), (*C.float)(&scratch[0])) != 0
}

// ptr is &x[0], or nil for an empty x (an operand of depth 0 is never
// read).
func ptr(x []float32) *C.float {
	if len(x) == 0 {
		return nil
	}
	return (*C.float)(&x[0])
}
