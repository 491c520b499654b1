package cpu

import (
	"encoding/binary"
	"math/bits"
)

// The string hashes of TF's feature-column ops, bit-exact: Fingerprint64
// (farmhash's Fingerprint64, i.e. its "na" Hash64) for
// StringToHashBucketFast, SipHash-2-4 for StringToHashBucketStrong, and
// TF's legacy Hash64 (a MurmurHash64A variant seeded 0xDECAFCAFFE) for
// StringToHashBucket. Written from the algorithms' public definitions;
// TestStringOpsLikeTF checks them against TF on many strings.

const (
	fk0 = 0xc3a5c85c97cb3127
	fk1 = 0xb492b66fbe98f273
	fk2 = 0x9ae16a3b2f90404f
)

func le64(s []byte) uint64       { return binary.LittleEndian.Uint64(s) }
func le32(s []byte) uint64       { return uint64(binary.LittleEndian.Uint32(s)) }
func rot(v uint64, n int) uint64 { return bits.RotateLeft64(v, -n) }
func shiftMix(v uint64) uint64   { return v ^ (v >> 47) }

func hashLen16(u, v, mul uint64) uint64 {
	a := (u ^ v) * mul
	a ^= a >> 47
	b := (v ^ a) * mul
	b ^= b >> 47
	return b * mul
}

func hashLen0to16(s []byte) uint64 {
	n := uint64(len(s))
	switch {
	case n >= 8:
		mul := fk2 + n*2
		a := le64(s) + fk2
		b := le64(s[n-8:])
		c := rot(b, 37)*mul + a
		d := (rot(a, 25) + b) * mul
		return hashLen16(c, d, mul)
	case n >= 4:
		mul := fk2 + n*2
		return hashLen16(n+(le32(s)<<3), le32(s[n-4:]), mul)
	case n > 0:
		a, b, c := uint32(s[0]), uint32(s[n>>1]), uint32(s[n-1])
		y := a + b<<8
		z := uint32(n) + c<<2
		return shiftMix(uint64(y)*fk2^uint64(z)*fk0) * fk2
	}
	return fk2
}

func hashLen17to32(s []byte) uint64 {
	n := uint64(len(s))
	mul := fk2 + n*2
	a := le64(s) * fk1
	b := le64(s[8:])
	c := le64(s[n-8:]) * mul
	d := le64(s[n-16:]) * fk2
	return hashLen16(rot(a+b, 43)+rot(c, 30)+d, a+rot(b+fk2, 18)+c, mul)
}

func hashLen33to64(s []byte) uint64 {
	n := uint64(len(s))
	mul := fk2 + n*2
	a := le64(s) * fk2
	b := le64(s[8:])
	c := le64(s[n-8:]) * mul
	d := le64(s[n-16:]) * fk2
	y := rot(a+b, 43) + rot(c, 30) + d
	z := hashLen16(y, a+rot(b+fk2, 18)+c, mul)
	e := le64(s[16:]) * mul
	f := le64(s[24:])
	g := (y + le64(s[n-32:])) * mul
	h := (z + le64(s[n-24:])) * mul
	return hashLen16(rot(e+f, 43)+rot(g, 30)+h, e+rot(f+a, 18)+g, mul)
}

func weakHashLen32(s []byte, a, b uint64) (uint64, uint64) {
	w, x, y, z := le64(s), le64(s[8:]), le64(s[16:]), le64(s[24:])
	a += w
	b = rot(b+a+z, 21)
	c := a
	a += x
	a += y
	b += rot(a, 44)
	return a + z, b + c
}

// fingerprint64 is farmhash's Fingerprint64, TF's Fingerprint64.
func fingerprint64(s []byte) uint64 {
	n := len(s)
	switch {
	case n <= 16:
		return hashLen0to16(s)
	case n <= 32:
		return hashLen17to32(s)
	case n <= 64:
		return hashLen33to64(s)
	}
	const seed = 81
	x := uint64(seed)
	y := x*fk1 + 113
	z := shiftMix(y*fk2+113) * fk2
	var v1, v2, w1, w2 uint64
	x = x*fk2 + le64(s)
	end := ((n - 1) / 64) * 64
	last64 := end + ((n - 1) & 63) - 63
	for p := 0; p != end; p += 64 {
		b := s[p:]
		x = rot(x+y+v1+le64(b[8:]), 37) * fk1
		y = rot(y+v2+le64(b[48:]), 42) * fk1
		x ^= w2
		y += v1 + le64(b[40:])
		z = rot(z+w1, 33) * fk1
		v1, v2 = weakHashLen32(b, v2*fk1, x+w1)
		w1, w2 = weakHashLen32(b[32:], z+w2, y+le64(b[16:]))
		z, x = x, z
	}
	mul := fk1 + ((z & 0xff) << 1)
	b := s[last64:]
	w1 += uint64((n - 1) & 63)
	v1 += w1
	w1 += v1
	x = rot(x+y+v1+le64(b[8:]), 37) * mul
	y = rot(y+v2+le64(b[48:]), 42) * mul
	x ^= w2 * 9
	y += v1*9 + le64(b[40:])
	z = rot(z+w1, 33) * mul
	v1, v2 = weakHashLen32(b, v2*mul, x+w1)
	w1, w2 = weakHashLen32(b[32:], z+w2, y+le64(b[16:]))
	z, x = x, z
	return hashLen16(hashLen16(v1, w1, mul)+shiftMix(y)*fk0+z, hashLen16(v2, w2, mul)+x, mul)
}

// sipHash24 is SipHash-2-4 keyed by (k0, k1), as highwayhash's
// SipHashState computes it for TF's StrongKeyedHash.
func sipHash24(k0, k1 uint64, s []byte) uint64 {
	v0 := k0 ^ 0x736f6d6570736575
	v1 := k1 ^ 0x646f72616e646f6d
	v2 := k0 ^ 0x6c7967656e657261
	v3 := k1 ^ 0x7465646279746573
	round := func() {
		v0 += v1
		v1 = bits.RotateLeft64(v1, 13)
		v1 ^= v0
		v0 = bits.RotateLeft64(v0, 32)
		v2 += v3
		v3 = bits.RotateLeft64(v3, 16)
		v3 ^= v2
		v0 += v3
		v3 = bits.RotateLeft64(v3, 21)
		v3 ^= v0
		v2 += v1
		v1 = bits.RotateLeft64(v1, 17)
		v1 ^= v2
		v2 = bits.RotateLeft64(v2, 32)
	}
	n := len(s)
	for ; len(s) >= 8; s = s[8:] {
		m := le64(s)
		v3 ^= m
		round()
		round()
		v0 ^= m
	}
	var last [8]byte
	copy(last[:], s)
	last[7] = byte(n)
	m := binary.LittleEndian.Uint64(last[:])
	v3 ^= m
	round()
	round()
	v0 ^= m
	v2 ^= 0xff
	for i := 0; i < 4; i++ {
		round()
	}
	return v0 ^ v1 ^ v2 ^ v3
}

// legacyHash64 is TF's Hash64(data, n) with its default seed.
func legacyHash64(s []byte) uint64 {
	const m = 0xc6a4a7935bd1e995
	const r = 47
	h := uint64(0xDECAFCAFFE) ^ (uint64(len(s)) * m)
	for ; len(s) >= 8; s = s[8:] {
		k := le64(s)
		k *= m
		k ^= k >> r
		k *= m
		h ^= k
		h *= m
	}
	if len(s) > 0 {
		for i := len(s) - 1; i >= 0; i-- {
			h ^= uint64(s[i]) << (8 * i)
		}
		h *= m
	}
	h ^= h >> r
	h *= m
	h ^= h >> r
	return h
}
