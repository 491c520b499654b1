package checkpoint

import (
	"bufio"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"

	"google.golang.org/protobuf/proto"

	"mstream/hostmem"
	"mstream/proto/tfpb"
	"mstream/status"
	"mstream/tensor"
)

// The bundle format's version, as TF 2.15 writes and accepts it.
const (
	bundleVersion     = 1
	bundleMinProducer = 0
	bundleMinConsumer = 0
)

// IndexFilename is the .index file of a checkpoint prefix.
func IndexFilename(prefix string) string { return prefix + ".index" }

// DataFilename is data shard id of n of a checkpoint prefix.
func DataFilename(prefix string, id, n int) string {
	return fmt.Sprintf("%s.data-%05d-of-%05d", prefix, id, n)
}

// ioError gives an OS error TF's code (a missing file NOT_FOUND, a denied
// one PERMISSION_DENIED) and names the path.
func ioError(err error, what, path string) error {
	code := status.Unknown
	switch {
	case errors.Is(err, fs.ErrNotExist):
		code = status.NotFound
	case errors.Is(err, fs.ErrPermission):
		code = status.PermissionDenied
	case errors.Is(err, fs.ErrExist):
		code = status.AlreadyExists
	}
	if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
		err = pe.Err
	} else if le := (*os.LinkError)(nil); errors.As(err, &le) {
		err = le.Err
	}
	return status.Errorf(code, "%s %s: %v", what, path, err)
}

// corrupt is the DATA_LOSS error for a file that does not parse.
func corrupt(path string, format string, args ...any) error {
	return status.Errorf(status.DataLoss, "checkpoint file %s is corrupt or truncated: %s", path, fmt.Sprintf(format, args...))
}

// Writer writes one bundle with a single data shard, as TF's BundleWriter
// does. Data goes to a temporary file beside the final one; Finish renames
// it, then writes the index to another temporary file and renames that, so
// a failed or abandoned save never leaves a half-written file under the
// final names (an older checkpoint there survives until the renames).
type Writer struct {
	prefix   string
	dataTmp  string
	f        *os.File
	w        *bufio.Writer
	size     int64
	entries  map[string]*tfpb.BundleEntryProto
	err      error
	finished bool
}

// NewWriter starts a bundle at prefix, creating prefix's directory (one
// level, as TF does) when missing.
func NewWriter(prefix string) (*Writer, error) {
	if dir := filepath.Dir(prefix); dir != "" {
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, ioError(err, "cannot create checkpoint directory", dir)
		}
	}
	w := &Writer{prefix: prefix, entries: map[string]*tfpb.BundleEntryProto{}}
	w.dataTmp = DataFilename(prefix, 0, 1) + ".tempstate" + randomSuffix()
	f, err := os.OpenFile(w.dataTmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, ioError(err, "cannot create checkpoint data file", w.dataTmp)
	}
	w.f, w.w = f, bufio.NewWriterSize(f, 8<<20)
	return w, nil
}

func randomSuffix() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Add appends a whole tensor under key.
func (w *Writer) Add(key string, t *tensor.Tensor) error {
	if w.err != nil {
		return w.err
	}
	if key == "" {
		w.err = status.Errorf(status.InvalidArgument, "checkpoint %s: the empty key is the bundle header's", w.prefix)
		return w.err
	}
	if _, dup := w.entries[key]; dup {
		w.err = status.Errorf(status.InvalidArgument, "Adding duplicate key: %s", key)
		return w.err
	}
	e, err := w.write(t)
	if err != nil {
		w.err = err
		return err
	}
	w.entries[key] = e
	return nil
}

// AddSlice appends the slice of a partitioned tensor: key's entry records
// the full shape and the slice, and the values go under the slice's own
// key (TF's EncodeTensorNameSlice). A slice that covers the whole tensor
// is stored as a plain Add.
func (w *Writer) AddSlice(key string, full tensor.Shape, s Slice, t *tensor.Tensor) error {
	if w.err != nil {
		return w.err
	}
	if s.covers(full) {
		return w.Add(key, t)
	}
	fe := w.entries[key]
	if fe == nil {
		fe = &tfpb.BundleEntryProto{}
		w.entries[key] = fe
	} else if fe.Dtype != tfpb.DataType(t.DType) || len(fe.Slices) == 0 || !tensor.ShapeFromProto(fe.Shape).Compatible(full) {
		w.err = status.Errorf(status.InvalidArgument, "checkpoint %s: slice %s of %s does not match its earlier entry", w.prefix, s, key)
		return w.err
	}
	fe.Dtype = tfpb.DataType(t.DType)
	fe.Shape = tensor.ShapeToProto(tensor.KnownShape(full))
	fe.Slices = append(fe.Slices, s.toProto())
	return w.Add(sliceKey(key, s), t)
}

// write appends t's bytes to the data file and returns its entry.
func (w *Writer) write(t *tensor.Tensor) (*tfpb.BundleEntryProto, error) {
	if err := t.Check(); err != nil {
		return nil, status.Errorf(status.InvalidArgument, "checkpoint %s: %v", w.prefix, err)
	}
	e := &tfpb.BundleEntryProto{
		Dtype:  tfpb.DataType(t.DType),
		Shape:  tensor.ShapeToProto(tensor.KnownShape(t.Shape)),
		Offset: w.size,
	}
	var crc uint32
	var n int64
	switch {
	case t.DType == tensor.String:
		// [varint64 length]* [masked crc of the lengths] [bytes]*; the
		// crc covers each length as a little-endian uint32 (uint64 past
		// 4 GiB), the stored length checksum, then the bytes.
		var lens []byte
		var le [8]byte
		for _, s := range t.Strs {
			lens = binary.AppendUvarint(lens, uint64(len(s)))
			if uint64(len(s)) <= 0xffffffff {
				binary.LittleEndian.PutUint32(le[:], uint32(len(s)))
				crc = crcExtend(crc, le[:4])
			} else {
				binary.LittleEndian.PutUint64(le[:], uint64(len(s)))
				crc = crcExtend(crc, le[:8])
			}
		}
		binary.LittleEndian.PutUint32(le[:], maskCRC(crc))
		lens = append(lens, le[:4]...)
		crc = crcExtend(crc, le[:4])
		w.w.Write(lens)
		n = int64(len(lens))
		for _, s := range t.Strs {
			w.w.Write(s)
			crc = crcExtend(crc, s)
			n += int64(len(s))
		}
	case t.DType.Fixed():
		w.w.Write(t.Buf)
		crc = crc32c(t.Buf)
		n = int64(len(t.Buf))
	default:
		return nil, status.Errorf(status.Unimplemented, "checkpoint %s: saving %v tensors is not supported", w.prefix, t.DType)
	}
	e.Size = n
	e.Crc32C = maskCRC(crc)
	w.size += n
	return e, nil
}

// Finish completes the bundle: flushes and renames the data file, then
// writes the index. After Finish the Writer is spent.
func (w *Writer) Finish() error {
	if w.finished {
		return status.Errorf(status.Internal, "checkpoint %s: writer already finished", w.prefix)
	}
	w.finished = true
	err := w.err
	if err == nil {
		if err = w.w.Flush(); err != nil {
			err = ioError(err, "cannot write checkpoint data file", w.dataTmp)
		}
	}
	if cerr := w.f.Close(); err == nil && cerr != nil {
		err = ioError(cerr, "cannot write checkpoint data file", w.dataTmp)
	}
	if err == nil {
		if rerr := os.Rename(w.dataTmp, DataFilename(w.prefix, 0, 1)); rerr != nil {
			err = ioError(rerr, "cannot rename checkpoint data file", w.dataTmp)
		}
	}
	if err != nil {
		os.Remove(w.dataTmp)
		return err
	}
	header := &tfpb.BundleHeaderProto{
		NumShards:  1,
		Endianness: tfpb.BundleHeaderProto_LITTLE,
		Version:    &tfpb.VersionDef{Producer: bundleVersion, MinConsumer: bundleMinConsumer},
	}
	return writeIndex(IndexFilename(w.prefix), header, w.entries)
}

// Abort drops an unfinished bundle and its temporary file.
func (w *Writer) Abort() {
	if w.finished {
		return
	}
	w.finished = true
	w.f.Close()
	os.Remove(w.dataTmp)
}

// writeIndex writes the header and the entries, sorted by key, as the
// .index table at path, through a temporary file and a rename.
func writeIndex(path string, header *tfpb.BundleHeaderProto, entries map[string]*tfpb.BundleEntryProto) error {
	names := make([]string, 0, len(entries))
	for k := range entries {
		names = append(names, k)
	}
	sort.Strings(names)
	keys := [][]byte{{}}
	hb, err := proto.Marshal(header)
	if err != nil {
		return status.Errorf(status.Internal, "checkpoint index %s: %v", path, err)
	}
	values := [][]byte{hb}
	for _, k := range names {
		b, err := proto.Marshal(entries[k])
		if err != nil {
			return status.Errorf(status.Internal, "checkpoint index %s: entry %s: %v", path, k, err)
		}
		keys = append(keys, []byte(k))
		values = append(values, b)
	}
	tmp := path + ".tempstate" + randomSuffix()
	if err := os.WriteFile(tmp, buildTable(keys, values), 0o644); err != nil {
		os.Remove(tmp)
		return ioError(err, "cannot write checkpoint index", tmp)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return ioError(err, "cannot rename checkpoint index", tmp)
	}
	return nil
}

// Reader reads a bundle. It holds the decoded index and opens data shards
// on first use; Close releases them. A Reader is not safe for concurrent
// use.
type Reader struct {
	prefix    string
	index     string
	tab       *table
	numShards int32
	shards    map[int32]*os.File
}

// Open reads and checks prefix's .index file: NOT_FOUND naming it when it
// is missing, DATA_LOSS naming it when it does not parse.
func Open(prefix string) (*Reader, error) {
	path := IndexFilename(prefix)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, ioError(err, "cannot read checkpoint index", path)
	}
	tab, err := parseTable(b)
	if err != nil {
		return nil, corrupt(path, "%v", err)
	}
	hv, ok := tab.get("")
	if !ok {
		return nil, corrupt(path, "failed to seek to header entry")
	}
	var h tfpb.BundleHeaderProto
	if err := proto.Unmarshal(hv, &h); err != nil {
		return nil, corrupt(path, "unable to parse header")
	}
	if h.Endianness != tfpb.BundleHeaderProto_LITTLE {
		return nil, status.Errorf(status.Unimplemented, "checkpoint %s is big-endian; only little-endian bundles are read", path)
	}
	v := h.GetVersion()
	switch {
	case v.GetProducer() < bundleMinProducer:
		return nil, status.Errorf(status.InvalidArgument, "checkpoint %s: producer version %d below min producer %d supported by TensorFlow 2.15", path, v.GetProducer(), bundleMinProducer)
	case v.GetMinConsumer() > bundleVersion:
		return nil, status.Errorf(status.InvalidArgument, "checkpoint %s: min consumer version %d above current version %d for TensorFlow 2.15", path, v.GetMinConsumer(), bundleVersion)
	}
	for _, bad := range v.GetBadConsumers() {
		if bad == bundleVersion {
			return nil, status.Errorf(status.InvalidArgument, "checkpoint %s disallows consumer version %d", path, bad)
		}
	}
	if h.NumShards <= 0 {
		return nil, corrupt(path, "header has %d shards", h.NumShards)
	}
	return &Reader{prefix: prefix, index: path, tab: tab, numShards: h.NumShards, shards: map[int32]*os.File{}}, nil
}

// Close closes the data shards.
func (r *Reader) Close() {
	for _, f := range r.shards {
		f.Close()
	}
	r.shards = nil
}

// Keys lists the tensor keys of the bundle in order. The entries of
// stored slices are left out: their keys are OrderedCode, which starts
// with a 0 byte no tensor name starts with.
func (r *Reader) Keys() []string {
	var out []string
	for _, k := range r.tab.keys {
		if k != "" && k[0] != 0 {
			out = append(out, k)
		}
	}
	return out
}

// Entry returns key's BundleEntryProto: NOT_FOUND when the bundle lacks
// it, DATA_LOSS when it does not parse or holds an invalid shape.
func (r *Reader) Entry(key string) (*tfpb.BundleEntryProto, error) {
	v, ok := r.tab.get(key)
	if !ok || key == "" {
		return nil, status.Errorf(status.NotFound, "Key %s not found in checkpoint %s", key, r.prefix)
	}
	var e tfpb.BundleEntryProto
	if err := proto.Unmarshal(v, &e); err != nil {
		return nil, corrupt(r.index, "entry for key %s not parseable", key)
	}
	if _, err := entryShape(&e); err != nil {
		return nil, corrupt(r.index, "invalid tensor shape of key %s: %v", key, err)
	}
	return &e, nil
}

func entryShape(e *tfpb.BundleEntryProto) (tensor.Shape, error) {
	if e.GetShape().GetUnknownRank() {
		return nil, fmt.Errorf("unknown rank")
	}
	var s tensor.Shape
	for _, d := range e.GetShape().GetDim() {
		s = append(s, d.GetSize())
	}
	return s, s.Validate()
}

// Lookup reads the whole tensor stored under key, assembling it from its
// slices when it was saved partitioned.
func (r *Reader) Lookup(key string) (*tensor.Tensor, error) {
	e, err := r.Entry(key)
	if err != nil {
		return nil, err
	}
	if len(e.Slices) == 0 {
		return r.value(key, e)
	}
	shape, _ := entryShape(e)
	return r.slice(key, e, FullSlice(len(shape)))
}

// LookupSlice reads the slice s of the tensor stored under key.
func (r *Reader) LookupSlice(key string, s Slice) (*tensor.Tensor, error) {
	e, err := r.Entry(key)
	if err != nil {
		return nil, err
	}
	return r.slice(key, e, s)
}

// shard opens data shard id.
func (r *Reader) shard(id int32) (*os.File, error) {
	if f := r.shards[id]; f != nil {
		return f, nil
	}
	path := DataFilename(r.prefix, int(id), int(r.numShards))
	f, err := os.Open(path)
	if err != nil {
		return nil, ioError(err, "cannot open checkpoint data file", path)
	}
	r.shards[id] = f
	return f, nil
}

// value reads the tensor of a whole (unsliced) entry, checking its size
// against its dtype and shape and its bytes against the stored CRC32C.
func (r *Reader) value(key string, e *tfpb.BundleEntryProto) (*tensor.Tensor, error) {
	shape, _ := entryShape(e)
	dt := tensor.DType(e.Dtype)
	n := shape.NumElements()
	if dt != tensor.String && (!dt.Valid() || !dt.Fixed()) {
		return nil, status.Errorf(status.Unimplemented, "checkpoint %s: key %s holds a %v tensor, which mstream cannot restore", r.prefix, key, dt)
	}
	if dt.Fixed() && (n > math.MaxInt64/int64(dt.Size()) || e.Size != n*int64(dt.Size())) {
		return nil, corrupt(r.index, "invalid size in bundle entry: key %s; stored size %d; expected size %d", key, e.Size, n*int64(dt.Size()))
	}
	if dt == tensor.String && e.Size < n+4 {
		return nil, corrupt(r.index, "invalid size in bundle entry: key %s; stored size %d; expected size is at least %d", key, e.Size, n+4)
	}
	if e.ShardId < 0 || e.ShardId >= r.numShards {
		return nil, corrupt(r.index, "key %s names shard %d of %d", key, e.ShardId, r.numShards)
	}
	f, err := r.shard(e.ShardId)
	if err != nil {
		return nil, err
	}
	path := f.Name()
	st, err := f.Stat()
	if err != nil {
		return nil, ioError(err, "cannot stat checkpoint data file", path)
	}
	if e.Offset < 0 || e.Size < 0 || e.Offset > st.Size() || e.Size > st.Size()-e.Offset {
		return nil, corrupt(path, "key %s: bytes [%d, %d+%d) lie beyond the file's %d bytes", key, e.Offset, e.Offset, e.Size, st.Size())
	}
	// A file may be larger than memory: the size is checked as every
	// allocation sized by data is.
	if err := (hostmem.Limit{}).Check(e.Size, 1, func() string { return fmt.Sprintf("tensor %s of %s", key, path) }); err != nil {
		return nil, err
	}
	var buf []byte
	if dt.Fixed() {
		buf = hostmem.Alloc(int(e.Size)) //mstream:bounded Check above
	} else {
		buf = make([]byte, e.Size)
	}
	if _, err := f.ReadAt(buf, e.Offset); err != nil && !(errors.Is(err, io.EOF) && e.Size == 0) {
		return nil, ioError(err, "cannot read checkpoint data file", path)
	}
	t := &tensor.Tensor{DType: dt, Shape: shape}
	var crc uint32
	if dt.Fixed() {
		t.Buf = buf
		crc = crc32c(buf)
	} else {
		if t.Strs, crc, err = decodeStrings(buf, n); err != nil {
			return nil, corrupt(path, "key %s: %v", key, err)
		}
	}
	if want := unmaskCRC(e.Crc32C); want != crc {
		return nil, corrupt(path, "key %s (shard %d, %d bytes): checksum does not match: stored %08d vs. calculated on the restored bytes %d", key, e.ShardId, e.Size, want, crc)
	}
	return t, nil
}

// decodeStrings parses a string tensor's bytes and returns its elements
// and the CRC32C TF computes over them.
func decodeStrings(b []byte, n int64) ([][]byte, uint32, error) {
	lens := make([]uint64, 0, min(n, int64(len(b))))
	var crc uint32
	var le [8]byte
	p := 0
	for i := int64(0); i < n; i++ {
		l, k := binary.Uvarint(b[p:])
		if k <= 0 {
			return nil, 0, fmt.Errorf("bad string length %d", i)
		}
		p += k
		lens = append(lens, l)
		if l <= 0xffffffff {
			binary.LittleEndian.PutUint32(le[:], uint32(l))
			crc = crcExtend(crc, le[:4])
		} else {
			binary.LittleEndian.PutUint64(le[:], l)
			crc = crcExtend(crc, le[:8])
		}
	}
	if len(b)-p < 4 {
		return nil, 0, fmt.Errorf("string lengths longer than the entry")
	}
	stored := binary.LittleEndian.Uint32(b[p:])
	if unmaskCRC(stored) != crc {
		return nil, 0, fmt.Errorf("the length checksum does not match: expected %08d but actual is %08d", unmaskCRC(stored), crc)
	}
	crc = crcExtend(crc, b[p:p+4])
	p += 4
	strs := make([][]byte, n)
	for i, l := range lens {
		if l > uint64(len(b)-p) {
			return nil, 0, fmt.Errorf("string %d of %d bytes runs past the entry", i, l)
		}
		strs[i] = append([]byte{}, b[p:p+int(l)]...)
		crc = crcExtend(crc, strs[i])
		p += int(l)
	}
	if p != len(b) {
		return nil, 0, fmt.Errorf("%d bytes left after the strings", len(b)-p)
	}
	return strs, crc, nil
}

// slice reads the slice want of the tensor whose full entry is e, from the
// slices the bundle stores for it (or from its whole value).
func (r *Reader) slice(key string, e *tfpb.BundleEntryProto, want Slice) (*tensor.Tensor, error) {
	full, _ := entryShape(e)
	outShape, err := want.Shape(full)
	if err != nil {
		return nil, err
	}
	dt := tensor.DType(e.Dtype)
	var stored []Slice
	for _, p := range e.Slices {
		s := sliceFromProto(p)
		if _, err := s.Shape(full); err != nil {
			return nil, corrupt(r.index, "key %s: stored slice %s: %v", key, s, err)
		}
		stored = append(stored, s)
	}
	if len(stored) == 0 {
		stored = []Slice{FullSlice(len(full))}
	}
	wlo, whi := want.bounds(full)
	var cover int64
	for i, s := range stored {
		lo, hi := s.bounds(full)
		cover += overlap(lo, hi, wlo, whi)
		for _, o := range stored[:i] {
			olo, ohi := o.bounds(full)
			if overlap(lo, hi, olo, ohi) > 0 {
				return nil, corrupt(r.index, "key %s: stored slices %s and %s overlap", key, o, s)
			}
		}
	}
	if cover != outShape.NumElements() {
		return nil, status.Errorf(status.InvalidArgument, "Does not have sufficient slices for partitioned tensor %s to restore in slice_spec: %s", key, want)
	}
	if outShape.NumElements() == 0 {
		return tensor.New(dt, outShape), nil //mstream:bounded no elements
	}
	// Read every part before allocating the output: the parts' sizes are
	// bounded by the files, the shape in the index is not.
	type part struct {
		t  *tensor.Tensor
		lo []int64
	}
	var parts []part
	for _, s := range stored {
		lo, hi := s.bounds(full)
		if overlap(lo, hi, wlo, whi) == 0 {
			continue
		}
		var pt *tensor.Tensor
		if len(e.Slices) == 0 {
			pt, err = r.value(key, e)
		} else {
			sk := sliceKey(key, s)
			se, err2 := r.Entry(sk)
			if err2 != nil {
				if status.CodeOf(err2) == status.NotFound {
					return nil, corrupt(r.index, "key %s: stored slice %s has no entry", key, s)
				}
				return nil, err2
			}
			if tensor.DType(se.Dtype) != dt {
				return nil, corrupt(r.index, "key %s: slice %s is %v, not %v", key, s, tensor.DType(se.Dtype), dt)
			}
			pt, err = r.value(key+" slice "+s.String(), se)
		}
		if err != nil {
			return nil, err
		}
		if ps, _ := s.Shape(full); !pt.Shape.Equal(ps) {
			return nil, corrupt(r.index, "key %s: slice %s holds shape %v", key, s, pt.Shape)
		}
		if overlap(lo, hi, wlo, whi) == outShape.NumElements() && pt.NumElements() == outShape.NumElements() {
			return pt.Reshaped(outShape), nil
		}
		parts = append(parts, part{pt, lo})
	}
	if !sliceCopyTypes[dt] {
		// TF copies between slices only for these dtypes.
		return nil, status.Errorf(status.InvalidArgument, "Dtype %v not supported.", dt)
	}
	out := tensor.New(dt, outShape) //mstream:bounded the parts read cover every element
	for _, p := range parts {
		copyRegion(out, wlo, p.t, p.lo)
	}
	return out, nil
}

// sliceCopyTypes are the dtypes TF's BundleReader assembles from slices
// (its GetSliceValue); a string or half tensor reads only as the very slice
// it was stored as.
var sliceCopyTypes = map[tensor.DType]bool{
	tensor.Float: true, tensor.Double: true, tensor.Int32: true, tensor.Uint8: true,
	tensor.Int16: true, tensor.Int8: true, tensor.Complex64: true, tensor.Complex128: true,
	tensor.Int64: true, tensor.Bool: true, tensor.Qint32: true, tensor.Quint8: true,
	tensor.Qint8: true, tensor.Bfloat16: true, tensor.Int4: true, tensor.Uint4: true,
}

// overlap is the element count of the intersection of [alo, ahi) and
// [blo, bhi).
func overlap(alo, ahi, blo, bhi []int64) int64 {
	n := int64(1)
	for d := range alo {
		l, h := max(alo[d], blo[d]), min(ahi[d], bhi[d])
		if h <= l {
			return 0
		}
		n *= h - l
	}
	return n
}

// copyRegion copies the intersection of src (whose element 0 sits at
// full-tensor coordinates srcAt) into dst (at dstAt).
func copyRegion(dst *tensor.Tensor, dstAt []int64, src *tensor.Tensor, srcAt []int64) {
	rank := len(dst.Shape)
	if rank == 0 {
		if dst.DType == tensor.String {
			dst.Strs[0] = src.Strs[0]
		} else {
			copy(dst.Buf, src.Buf)
		}
		return
	}
	lo, hi := make([]int64, rank), make([]int64, rank)
	for d := 0; d < rank; d++ {
		lo[d] = max(dstAt[d], srcAt[d])
		hi[d] = min(dstAt[d]+dst.Shape[d], srcAt[d]+src.Shape[d])
		if hi[d] <= lo[d] {
			return
		}
	}
	esz := int64(dst.DType.Size())
	run := hi[rank-1] - lo[rank-1]
	idx := append([]int64{}, lo...)
	for {
		var di, si int64
		for d := 0; d < rank; d++ {
			di = di*dst.Shape[d] + idx[d] - dstAt[d]
			si = si*src.Shape[d] + idx[d] - srcAt[d]
		}
		if dst.DType == tensor.String {
			copy(dst.Strs[di:di+run], src.Strs[si:si+run])
		} else {
			copy(dst.Buf[di*esz:(di+run)*esz], src.Buf[si*esz:(si+run)*esz])
		}
		d := rank - 2
		for ; d >= 0; d-- {
			idx[d]++
			if idx[d] < hi[d] {
				break
			}
			idx[d] = lo[d]
		}
		if d < 0 {
			return
		}
	}
}

// Merge merges the bundles at prefixes into one at merged, as TF's
// MergeBundles does: their data shards are renamed to merged's shard
// names, one index lists every entry, and the inputs' index files are
// removed. A missing input is INVALID_ARGUMENT unless allowMissing.
func Merge(prefixes []string, merged string, allowMissing bool) error {
	if dir := filepath.Dir(merged); dir != "" {
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return ioError(err, "cannot create checkpoint directory", dir)
		}
	}
	var header *tfpb.BundleHeaderProto
	entries := map[string]*tfpb.BundleEntryProto{}
	shardIDs := map[string]int32{}
	var shardOrder []string
	var numShards int32
	found := false
	for _, p := range prefixes {
		if _, err := os.Stat(IndexFilename(p)); err != nil {
			if allowMissing {
				continue
			}
			return status.Errorf(status.InvalidArgument, "allow_missing_files was set to false and %s did not exist.", p)
		}
		found = true
		r, err := Open(p)
		if err != nil {
			return err
		}
		hv, _ := r.tab.get("")
		var h tfpb.BundleHeaderProto
		proto.Unmarshal(hv, &h)
		numShards += h.NumShards
		if header == nil {
			header = &tfpb.BundleHeaderProto{Endianness: h.Endianness, Version: h.Version}
		} else if !proto.Equal(header.Version, h.Version) {
			return status.Errorf(status.InvalidArgument, "Merging bundles with different format versions: %s", p)
		}
		for i, k := range r.tab.keys {
			if k == "" {
				continue
			}
			old := entries[k]
			if old != nil && len(old.Slices) == 0 {
				return status.Errorf(status.InvalidArgument, "Duplicate tensor keyed by %s encountered, when merging prefix: %s", k, p)
			}
			var e tfpb.BundleEntryProto
			if err := proto.Unmarshal(r.tab.values[i], &e); err != nil {
				return corrupt(r.index, "entry for key %s not parseable", k)
			}
			if old != nil {
				if len(e.Slices) == 0 {
					return status.Errorf(status.Internal, "Duplicate tensor keyed by %s; attempting to merge in a non-slice bundle entry", k)
				}
				if old.Dtype != e.Dtype || !proto.Equal(old.Shape, e.Shape) {
					return corrupt(r.index, "slices of %s disagree on dtype or shape", k)
				}
				old.Slices = append(old.Slices, e.Slices...)
				continue
			}
			if len(e.Slices) == 0 {
				if e.ShardId < 0 || e.ShardId >= h.NumShards {
					return corrupt(r.index, "key %s names shard %d of %d", k, e.ShardId, h.NumShards)
				}
				name := DataFilename(p, int(e.ShardId), int(h.NumShards))
				id, ok := shardIDs[name]
				if !ok {
					id = int32(len(shardIDs))
					shardIDs[name] = id
					shardOrder = append(shardOrder, name)
				}
				e.ShardId = id
			}
			entries[k] = &e
		}
		r.Close()
	}
	if !found {
		return status.Errorf(status.InvalidArgument, "At least one prefix checkpoint file must exist, but none existed.")
	}
	for _, name := range shardOrder {
		dst := DataFilename(merged, int(shardIDs[name]), len(shardIDs))
		if err := os.Rename(name, dst); err != nil {
			return ioError(err, "cannot rename checkpoint data file", name)
		}
	}
	header.NumShards = numShards
	if err := writeIndex(IndexFilename(merged), header, entries); err != nil {
		return err
	}
	for _, p := range prefixes {
		if IndexFilename(p) != IndexFilename(merged) {
			os.Remove(IndexFilename(p))
		}
	}
	return nil
}
