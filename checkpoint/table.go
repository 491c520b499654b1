package checkpoint

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"sort"
)

// The .index file is a LevelDB-format table (TF's tsl/lib/io/table) with
// no compression, no filter block and an empty meta-index block:
//
//	data block*  meta-index block  index block  footer
//
// A block is its entries (shared key prefix length, unshared length, value
// length as varints, then the unshared key bytes and the value), the
// restart offsets as little-endian uint32s and their count, followed by a
// 5-byte trailer: the compression type and the masked CRC32C of contents
// and type. The index block maps a separator key >= every key of a data
// block to that block's handle (varint offset, varint size). The footer is
// the meta-index and index handles padded to 40 bytes, then the magic.

const (
	tableMagic       = 0xdb4775248b80fb57
	footerLen        = 48
	blockTrailerLen  = 5
	maxHandleLen     = 20 // two varint64s
	defaultBlockSize = 262144
	restartInterval  = 16
	noCompression    = 0
	snappyCompressed = 1
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

const crcMaskDelta = 0xa282ead8

// maskCRC is LevelDB's masking of a stored CRC, so that a CRC of data that
// itself holds CRCs is not degenerate.
func maskCRC(c uint32) uint32 { return ((c >> 15) | (c << 17)) + crcMaskDelta }

func unmaskCRC(m uint32) uint32 {
	r := m - crcMaskDelta
	return (r >> 17) | (r << 15)
}

func crc32c(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

func crcExtend(c uint32, b []byte) uint32 { return crc32.Update(c, castagnoli, b) }

// errCorrupt is a table-level corruption; the bundle layer adds the file
// name and the DATA_LOSS code.
type errCorrupt string

func (e errCorrupt) Error() string { return string(e) }

// blockBuilder lays out one block as TF's BlockBuilder does.
type blockBuilder struct {
	interval int
	buf      []byte
	restarts []uint32
	counter  int
	lastKey  []byte
}

func newBlockBuilder(interval int) *blockBuilder {
	return &blockBuilder{interval: interval, restarts: []uint32{0}}
}

func (b *blockBuilder) empty() bool { return len(b.buf) == 0 }

func (b *blockBuilder) sizeEstimate() int { return len(b.buf) + 4*len(b.restarts) + 4 }

func (b *blockBuilder) add(key, value []byte) {
	shared := 0
	if b.counter < b.interval {
		for shared < len(key) && shared < len(b.lastKey) && key[shared] == b.lastKey[shared] {
			shared++
		}
	} else {
		b.restarts = append(b.restarts, uint32(len(b.buf)))
		b.counter = 0
	}
	b.buf = binary.AppendUvarint(b.buf, uint64(shared))
	b.buf = binary.AppendUvarint(b.buf, uint64(len(key)-shared))
	b.buf = binary.AppendUvarint(b.buf, uint64(len(value)))
	b.buf = append(b.buf, key[shared:]...)
	b.buf = append(b.buf, value...)
	b.lastKey = append(b.lastKey[:0], key...)
	b.counter++
}

func (b *blockBuilder) finish() []byte {
	out := b.buf
	for _, r := range b.restarts {
		out = binary.LittleEndian.AppendUint32(out, r)
	}
	out = binary.LittleEndian.AppendUint32(out, uint32(len(b.restarts)))
	b.buf, b.restarts, b.counter, b.lastKey = nil, []uint32{0}, 0, nil
	return out
}

// buildTable lays out sorted key/value pairs as TF's TableBuilder does
// with its default options (256 KiB blocks, a restart every 16 keys), so
// that the bytes equal those TF writes for the same entries.
func buildTable(keys [][]byte, values [][]byte) []byte {
	var out []byte
	data := newBlockBuilder(restartInterval)
	index := newBlockBuilder(1)
	var lastKey []byte
	pending := false
	var pendingHandle []byte
	writeBlock := func(b *blockBuilder) []byte {
		contents := b.finish()
		h := binary.AppendUvarint(nil, uint64(len(out)))
		h = binary.AppendUvarint(h, uint64(len(contents)))
		out = append(out, contents...)
		crc := crcExtend(crc32c(contents), []byte{noCompression})
		out = append(out, noCompression)
		out = binary.LittleEndian.AppendUint32(out, maskCRC(crc))
		return h
	}
	flush := func() {
		if data.empty() {
			return
		}
		pendingHandle = writeBlock(data)
		pending = true
	}
	for i, k := range keys {
		v := values[i]
		if i > 0 && len(k)+len(v) >= 2*defaultBlockSize {
			flush()
		}
		if pending {
			index.add(shortestSeparator(lastKey, k), pendingHandle)
			pending = false
		}
		lastKey = append(lastKey[:0], k...)
		data.add(k, v)
		if data.sizeEstimate() >= defaultBlockSize {
			flush()
		}
	}
	flush()
	metaHandle := writeBlock(newBlockBuilder(restartInterval))
	if pending {
		index.add(shortSuccessor(lastKey), pendingHandle)
	}
	indexHandle := writeBlock(index)
	footer := append(append([]byte{}, metaHandle...), indexHandle...)
	footer = append(footer, make([]byte, 2*maxHandleLen-len(footer))...) //mstream:bounded constants
	footer = binary.LittleEndian.AppendUint64(footer, tableMagic)
	return append(out, footer...)
}

// shortestSeparator is TF's FindShortestSeparator: a short key in
// [start, limit).
func shortestSeparator(start, limit []byte) []byte {
	s := append([]byte{}, start...)
	n := min(len(s), len(limit))
	i := 0
	for i < n && s[i] == limit[i] {
		i++
	}
	if i < n {
		if d := s[i]; d < 0xff && int(d)+1 < int(limit[i]) {
			s[i]++
			s = s[:i+1]
		}
	}
	return s
}

// shortSuccessor is TF's FindShortSuccessor: a short key >= key.
func shortSuccessor(key []byte) []byte {
	s := append([]byte{}, key...)
	for i, c := range s {
		if c != 0xff {
			s[i] = c + 1
			return s[:i+1]
		}
	}
	return s
}

type blockHandle struct{ off, size uint64 }

func decodeHandle(b []byte) (blockHandle, []byte, error) {
	off, n := binary.Uvarint(b)
	if n <= 0 {
		return blockHandle{}, nil, errCorrupt("bad block handle")
	}
	size, m := binary.Uvarint(b[n:])
	if m <= 0 {
		return blockHandle{}, nil, errCorrupt("bad block handle")
	}
	return blockHandle{off, size}, b[n+m:], nil
}

// readBlock checks a block's trailer and returns its contents.
func readBlock(file []byte, h blockHandle) ([]byte, error) {
	if h.off > uint64(len(file)) || h.size > uint64(len(file))-h.off || uint64(len(file))-h.off-h.size < blockTrailerLen {
		return nil, errCorrupt("truncated block read")
	}
	b := file[h.off : h.off+h.size+blockTrailerLen]
	n := int(h.size)
	if unmaskCRC(binary.LittleEndian.Uint32(b[n+1:])) != crc32c(b[:n+1]) {
		return nil, errCorrupt("block checksum mismatch")
	}
	switch b[n] {
	case noCompression:
		return b[:n], nil
	case snappyCompressed:
		// TF writes its bundles uncompressed now; older writers
		// compressed (TF's test data OptimizerSlotVariableModule).
		return unsnappy(b[:n])
	}
	return nil, errCorrupt("bad block type")
}

// blockEntries decodes every key/value of a block, checking every length
// against the block's bounds.
func blockEntries(b []byte) (keys, values [][]byte, err error) {
	if len(b) < 4 {
		return nil, nil, errCorrupt("bad block contents")
	}
	nr := uint64(binary.LittleEndian.Uint32(b[len(b)-4:]))
	if nr > uint64(len(b)-4)/4 {
		return nil, nil, errCorrupt("bad block contents")
	}
	end := len(b) - 4 - 4*int(nr)
	var last []byte
	for p := 0; p < end; {
		var v [3]uint64
		for i := range v {
			x, n := binary.Uvarint(b[p:end])
			if n <= 0 {
				return nil, nil, errCorrupt("bad entry in block")
			}
			v[i] = x
			p += n
		}
		shared, unshared, vlen := v[0], v[1], v[2]
		if shared > uint64(len(last)) || unshared > uint64(end-p) || vlen > uint64(end-p)-unshared {
			return nil, nil, errCorrupt("bad entry in block")
		}
		key := append(append([]byte{}, last[:shared]...), b[p:p+int(unshared)]...)
		p += int(unshared)
		keys = append(keys, key)
		values = append(values, b[p:p+int(vlen)])
		p += int(vlen)
		last = key
	}
	return keys, values, nil
}

// table is a decoded .index table: every key in order and its value.
type table struct {
	keys   []string
	values [][]byte
}

// parseTable decodes a whole table. Keys must be strictly increasing
// across blocks, and every block must sit before its index entry's key.
func parseTable(file []byte) (*table, error) {
	if len(file) < footerLen {
		return nil, errCorrupt("file is too short to be an sstable")
	}
	foot := file[len(file)-footerLen:]
	if binary.LittleEndian.Uint64(foot[footerLen-8:]) != tableMagic {
		return nil, errCorrupt("not an sstable (bad magic number)")
	}
	_, rest, err := decodeHandle(foot[:footerLen-8])
	if err != nil {
		return nil, err
	}
	ih, _, err := decodeHandle(rest)
	if err != nil {
		return nil, err
	}
	ib, err := readBlock(file, ih)
	if err != nil {
		return nil, err
	}
	ikeys, ivals, err := blockEntries(ib)
	if err != nil {
		return nil, err
	}
	t := &table{}
	for i, hv := range ivals {
		h, _, err := decodeHandle(hv)
		if err != nil {
			return nil, err
		}
		db, err := readBlock(file, h)
		if err != nil {
			return nil, err
		}
		ks, vs, err := blockEntries(db)
		if err != nil {
			return nil, err
		}
		for j, k := range ks {
			if n := len(t.keys); n > 0 && t.keys[n-1] >= string(k) {
				return nil, errCorrupt("keys out of order")
			}
			if bytes.Compare(k, ikeys[i]) > 0 {
				return nil, errCorrupt("key beyond its index entry")
			}
			t.keys = append(t.keys, string(k))
			t.values = append(t.values, vs[j])
		}
	}
	return t, nil
}

// get returns the value of key.
func (t *table) get(key string) ([]byte, bool) {
	i := sort.SearchStrings(t.keys, key)
	if i < len(t.keys) && t.keys[i] == key {
		return t.values[i], true
	}
	return nil, false
}
