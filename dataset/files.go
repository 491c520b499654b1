package dataset

import (
	"bufio"
	"compress/gzip"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"io/fs"
	"os"

	"mstream/hostmem"
	"mstream/status"
	"mstream/tensor"
)

// fileDS is TextLineDataset and TFRecordDataset: the lines or records of
// each file in turn, each a string scalar. compression is "", "GZIP" or
// "ZLIB".
type fileDS struct {
	files       []string
	compression string
	records     bool // TFRecord, else text lines
	lim         hostmem.Limit
}

func checkCompression(c string) error {
	switch c {
	case "", "GZIP", "ZLIB":
		return nil
	}
	return status.InvalidArg("Unsupported compression_type: %s.", c)
}

func (d *fileDS) Iterate() (Iterator, error) { return &fileIt{d: d}, nil }

type fileIt struct {
	d      *fileDS
	i      int // the next file
	name   string
	f      *os.File
	r      *bufio.Reader
	offset int64 // of the next record in the (uncompressed) stream
}

func (it *fileIt) open() error {
	it.name = it.d.files[it.i]
	f, err := os.Open(it.name)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return status.Errorf(status.NotFound, "%s; No such file or directory", it.name)
		}
		return status.Errorf(status.Unknown, "%s: %v", it.name, err)
	}
	var r io.Reader = f
	switch it.d.compression {
	case "GZIP":
		r, err = gzip.NewReader(f)
	case "ZLIB":
		r, err = zlib.NewReader(f)
	}
	if err != nil {
		f.Close()
		return status.Errorf(status.DataLoss, "%s: %s stream: %v", it.name, it.d.compression, err)
	}
	// A file that fails to open is tried again by the next call, as TF's
	// readers do; one that opened is done with once it ends or fails.
	it.i++
	it.f, it.r, it.offset = f, bufio.NewReaderSize(r, 256<<10), 0
	return nil
}

func (it *fileIt) closeFile() {
	if it.f != nil {
		it.f.Close()
		it.f, it.r = nil, nil
	}
}

func (it *fileIt) Next() ([]*tensor.Tensor, bool, error) {
	for {
		if it.f == nil {
			if it.i >= len(it.d.files) {
				return nil, true, nil
			}
			if err := it.open(); err != nil {
				return nil, false, err
			}
		}
		var b []byte
		var ok bool
		var err error
		if it.d.records {
			b, ok, err = it.record()
		} else {
			b, ok, err = it.line()
		}
		if err != nil {
			it.closeFile() // TF's reader does not go on past a bad record
			return nil, false, err
		}
		if !ok {
			it.closeFile()
			continue
		}
		t := tensor.New(tensor.String, tensor.Shape{})
		t.Strs[0] = b
		return []*tensor.Tensor{t}, false, nil
	}
}

// line is the next line without its "\n" (and a "\r" before it), as TF's
// InputBuffer::ReadLine.
func (it *fileIt) line() ([]byte, bool, error) {
	var line []byte
	for {
		chunk, err := it.r.ReadSlice('\n')
		if len(line)+len(chunk) > int(it.d.lim.Max()) {
			return nil, false, status.Errorf(status.ResourceExhausted, "%s: a line longer than the %d bytes allocator %s may give", it.name, it.d.lim.Max(), it.d.lim.Name())
		}
		line = append(line, chunk...)
		if err == bufio.ErrBufferFull {
			continue
		}
		if err == io.EOF {
			if len(line) == 0 {
				return nil, false, nil
			}
			break
		}
		if err != nil {
			return nil, false, status.Errorf(status.DataLoss, "%s: %v", it.name, err)
		}
		break
	}
	if n := len(line); n > 0 && line[n-1] == '\n' {
		line = line[:n-1]
		if n := len(line); n > 0 && line[n-1] == '\r' {
			line = line[:n-1]
		}
	}
	return line, true, nil
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// maskedCRC is TF's crc32c::Mask of the CRC32C of b.
func maskedCRC(b []byte) uint32 {
	c := crc32.Checksum(b, castagnoli)
	return ((c >> 15) | (c << 17)) + 0xa282ead8
}

// record reads one TFRecord: a little-endian uint64 length and the masked
// CRC32C of those 8 bytes, the data and its masked CRC32C. A checksum that
// does not match, or a file that ends inside a record, is DATA_LOSS naming
// the file and the record's offset.
func (it *fileIt) record() ([]byte, bool, error) {
	var hdr [12]byte
	n, err := io.ReadFull(it.r, hdr[:])
	if err == io.EOF {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, status.Errorf(status.DataLoss, "truncated record at %d in file %s (read %d of 12 header bytes)", it.offset, it.name, n)
	}
	if maskedCRC(hdr[:8]) != binary.LittleEndian.Uint32(hdr[8:]) {
		return nil, false, status.Errorf(status.DataLoss, "corrupted record at %d in file %s: the length's checksum does not match", it.offset, it.name)
	}
	length := binary.LittleEndian.Uint64(hdr[:8])
	if length > uint64(it.d.lim.Max()) {
		return nil, false, status.Errorf(status.ResourceExhausted, "record at %d in file %s: %d bytes are more than the %d bytes allocator %s may give", it.offset, it.name, length, it.d.lim.Max(), it.d.lim.Name())
	}
	data := make([]byte, length+4) //mstream:bounded checked against lim just above
	if n, err := io.ReadFull(it.r, data); err != nil {
		return nil, false, status.Errorf(status.DataLoss, "truncated record at %d in file %s (read %d of %d bytes)", it.offset, it.name, n, len(data))
	}
	if maskedCRC(data[:length]) != binary.LittleEndian.Uint32(data[length:]) {
		return nil, false, status.Errorf(status.DataLoss, "corrupted record at %d in file %s: the data's checksum does not match", it.offset, it.name)
	}
	it.offset += 12 + int64(length) + 4
	return data[:length:length], true, nil
}

func (it *fileIt) Close() { it.closeFile() }
