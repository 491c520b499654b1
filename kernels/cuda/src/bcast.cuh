// Broadcast indexing shared by the binary programs (cwise.cu, intdiv.cu):
// the Go side (launchBroadcast) merges dims and passes the output shape
// and both inputs' element strides (0 where an input repeats), at most
// MAXR dims; bc_index maps an output element to its input elements. Rank 1
// covers equal shapes and a scalar on either side, without the division.

struct Bc {
	i64 rank;
	i64 out[MAXR];
	i64 sa[MAXR];
	i64 sb[MAXR];
};

__device__ __forceinline__ void bc_index(const Bc &bc, i64 i, i64 &ia, i64 &ib) {
	if (bc.rank == 1) {
		ia = i * bc.sa[0];
		ib = i * bc.sb[0];
		return;
	}
	i64 r = i;
	ia = 0;
	ib = 0;
	for (int d = (int)bc.rank - 1; d >= 0; d--) {
		i64 q = r / bc.out[d];
		i64 x = r - q * bc.out[d];
		r = q;
		ia += x * bc.sa[d];
		ib += x * bc.sb[d];
	}
}
