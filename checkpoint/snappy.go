package checkpoint

import "encoding/binary"

// unsnappy decodes a snappy block (the format's block encoding, without
// framing): the decoded length as a uvarint, then literals and
// back-references. TF's table builder compresses index blocks this way when
// asked to (TF's own test data has such a bundle). Every length and offset
// is checked; a malformed block is DATA_LOSS, never a panic.
func unsnappy(src []byte) ([]byte, error) {
	n, k := binary.Uvarint(src)
	// No element expands more than 64 / 3 times, so a larger claim is a
	// corrupt length, not a reason to allocate.
	if k <= 0 || n > 22*uint64(len(src)) {
		return nil, errCorrupt("snappy-compressed block: bad length")
	}
	src = src[k:]
	dst := make([]byte, 0, n) //mstream:bounded n is at most 22 times the block, which is in memory
	for len(src) > 0 {
		tag := src[0]
		var length, offset int
		switch tag & 3 {
		case 0: // literal
			length = int(tag>>2) + 1
			src = src[1:]
			if extra := int(tag>>2) - 59; extra > 0 { // 60..63: the length follows in 1-4 bytes
				if len(src) < extra {
					return nil, errCorrupt("snappy-compressed block: truncated literal")
				}
				length = 0
				for i := extra - 1; i >= 0; i-- {
					length = length<<8 | int(src[i])
				}
				length++
				src = src[extra:]
			}
			if length <= 0 || length > len(src) || uint64(len(dst)+length) > n {
				return nil, errCorrupt("snappy-compressed block: bad literal")
			}
			dst = append(dst, src[:length]...)
			src = src[length:]
			continue
		case 1: // copy, 1-byte offset
			if len(src) < 2 {
				return nil, errCorrupt("snappy-compressed block: truncated copy")
			}
			length = 4 + int(tag>>2)&7
			offset = int(tag>>5)<<8 | int(src[1])
			src = src[2:]
		case 2: // copy, 2-byte offset
			if len(src) < 3 {
				return nil, errCorrupt("snappy-compressed block: truncated copy")
			}
			length = 1 + int(tag>>2)
			offset = int(binary.LittleEndian.Uint16(src[1:]))
			src = src[3:]
		case 3: // copy, 4-byte offset
			if len(src) < 5 {
				return nil, errCorrupt("snappy-compressed block: truncated copy")
			}
			length = 1 + int(tag>>2)
			offset = int(binary.LittleEndian.Uint32(src[1:]))
			src = src[5:]
		}
		if offset <= 0 || offset > len(dst) || uint64(len(dst)+length) > n {
			return nil, errCorrupt("snappy-compressed block: bad copy")
		}
		// Byte by byte: a copy may overlap what it writes.
		for i := 0; i < length; i++ {
			dst = append(dst, dst[len(dst)-offset])
		}
	}
	if uint64(len(dst)) != n {
		return nil, errCorrupt("snappy-compressed block: short")
	}
	return dst, nil
}
