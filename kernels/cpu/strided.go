package cpu

import (
	"mstream/hostmem"
	"mstream/kernels"
	"mstream/tensor"
)

// copyStrided fills dst (row-major over its shape) from src, reading the
// element at index (i0, ..., ir) at sum(ik * stride[k]): a transpose, a
// diagonal or a broadcast, depending on the strides. Transpose and Einsum's
// rearrangements are this one loop. Dims that are contiguous in src too are
// merged first, so a permutation that keeps the innermost dim (the
// transformer's [B,T,H,D] -> [B,H,T,D]) copies whole rows; a plain 2-D
// transpose goes in tiles so that both sides are read and written a cache
// line at a time; the rows are split over the intra-op pool.
func copyStrided(ctx *kernels.Context, dst, src *tensor.Tensor, stride []int64) {
	n := dst.NumElements()
	if n == 0 {
		return
	}
	if src.DType.InStrs() || src.DType == tensor.Variant {
		gatherStridedElems(dst, src, stride)
		return
	}
	shape, st := mergeStrided(dst.Shape, stride)
	switch src.DType.Size() {
	case 1:
		stridedT(ctx, hostmem.View[uint8](dst.Buf), hostmem.View[uint8](src.Buf), shape, st)
	case 2:
		stridedT(ctx, hostmem.View[uint16](dst.Buf), hostmem.View[uint16](src.Buf), shape, st)
	case 4:
		stridedT(ctx, hostmem.View[uint32](dst.Buf), hostmem.View[uint32](src.Buf), shape, st)
	case 8:
		stridedT(ctx, hostmem.View[uint64](dst.Buf), hostmem.View[uint64](src.Buf), shape, st)
	case 16:
		stridedT(ctx, hostmem.View[[2]uint64](dst.Buf), hostmem.View[[2]uint64](src.Buf), shape, st)
	default:
		gatherStridedElems(dst, src, stride)
	}
}

// mergeStrided drops dims of size 1 and merges a dim into the one before it
// when src holds them contiguously (dst always does), so the loops run over
// as few and as long dims as possible. A scalar becomes shape [1].
func mergeStrided(shape tensor.Shape, stride []int64) ([]int64, []int64) {
	var sh, st []int64
	for k, d := range shape {
		if d == 1 {
			continue
		}
		if j := len(sh) - 1; j >= 0 && st[j] == stride[k]*d {
			sh[j] *= d
			st[j] = stride[k]
			continue
		}
		sh = append(sh, d)
		st = append(st, stride[k])
	}
	if len(sh) == 0 {
		return []int64{1}, []int64{0}
	}
	return sh, st
}

// stridedTile is the side of a 2-D transpose's tile, in elements.
const stridedTile = 16

func stridedT[T any](ctx *kernels.Context, d, s []T, shape, st []int64) {
	r := len(shape)
	inner, is := shape[r-1], st[r-1]
	rows := int64(len(d)) / inner
	if r >= 2 && is != 1 && st[r-2] == 1 && shape[r-2] >= stridedTile && inner >= stridedTile {
		transposeTiles(ctx, d, s, shape, st)
		return
	}
	ctx.For(int(rows), float64(inner)*0.5+5, kernels.StartLoop, func(lo, hi int) {
		off := stridedOffset(int64(lo), shape[:r-1], st[:r-1])
		idx := stridedIndex(int64(lo), shape[:r-1])
		for row := int64(lo); row < int64(hi); row++ {
			out := d[row*inner : (row+1)*inner]
			switch is {
			case 1:
				copy(out, s[off:off+inner])
			case 0:
				v := s[off]
				for i := range out {
					out[i] = v
				}
			default:
				p := off
				for i := range out {
					out[i] = s[p]
					p += is
				}
			}
			// Step the outer index.
			for k := r - 2; k >= 0; k-- {
				idx[k]++
				off += st[k]
				if idx[k] < shape[k] {
					break
				}
				off -= st[k] * idx[k]
				idx[k] = 0
			}
		}
	})
}

// transposeTiles is stridedT when the last two dims are a transpose (the
// next-to-last dim is src's contiguous one): each [stridedTile x inner]
// band of dst is filled tile by tile.
func transposeTiles[T any](ctx *kernels.Context, d, s []T, shape, st []int64) {
	r := len(shape)
	rowsN, inner, is := shape[r-2], shape[r-1], st[r-1]
	bands := (rowsN + stridedTile - 1) / stridedTile
	planes := int64(len(d)) / (rowsN * inner)
	ctx.For(int(planes*bands), float64(stridedTile*inner)*0.7, kernels.StartLoop, func(lo, hi int) {
		for job := int64(lo); job < int64(hi); job++ {
			plane, band := job/bands, job%bands
			base := stridedOffset(plane, shape[:r-2], st[:r-2])
			r0, r1 := band*stridedTile, min((band+1)*stridedTile, rowsN)
			out := d[plane*rowsN*inner:]
			for j0 := int64(0); j0 < inner; j0 += stridedTile {
				j1 := min(j0+stridedTile, inner)
				for i := r0; i < r1; i++ {
					row := out[i*inner : (i+1)*inner]
					p := base + i + j0*is
					for j := j0; j < j1; j++ {
						row[j] = s[p]
						p += is
					}
				}
			}
		}
	})
}

// stridedIndex is the multi-index of the flat row-major position pos.
func stridedIndex(pos int64, shape []int64) []int64 {
	idx := make([]int64, len(shape))
	for k := len(shape) - 1; k >= 0; k-- {
		idx[k] = pos % shape[k]
		pos /= shape[k]
	}
	return idx
}

// stridedOffset is the src offset of the flat row-major position pos.
func stridedOffset(pos int64, shape, st []int64) int64 {
	off := int64(0)
	for k := len(shape) - 1; k >= 0; k-- {
		off += pos % shape[k] * st[k]
		pos /= shape[k]
	}
	return off
}
