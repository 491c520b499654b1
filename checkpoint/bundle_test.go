package checkpoint

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"mstream/status"
	"mstream/tensor"
)

// tfPython is build/venv's python when TensorFlow installed there
// (scripts/setup.sh marks it with .tf-ok); otherwise the test is skipped,
// as every TF-backed suite is on a machine without TensorFlow.
func tfPython(t testing.TB) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "build", "venv", ".tf-ok")); err != nil {
		t.Skip("skipped: no TensorFlow (build/venv/.tf-ok missing; scripts/setup.sh makes it)")
	}
	return filepath.Join(root, "build", "venv", "bin", "python")
}

// runTF runs testdata/tf_bundle.py and decodes its JSON output.
func runTF(t testing.TB, out any, args ...string) {
	t.Helper()
	py := tfPython(t)
	cmd := exec.Command(py, append([]string{"testdata/tf_bundle.py"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("tf_bundle.py %v: %v\n%s", args, err, stderr.String())
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("tf_bundle.py %v: %v", args, err)
	}
}

// jsonTensor is a tensor as tf_bundle.py prints it: raw little-endian
// bytes, or one base64 string per element.
type jsonTensor struct {
	DType int32           `json:"dtype"`
	Shape []int64         `json:"shape"`
	Data  json.RawMessage `json:"data"`
}

func (j jsonTensor) tensor(t testing.TB) *tensor.Tensor {
	t.Helper()
	out := tensor.New(tensor.DType(j.DType), tensor.Shape(j.Shape))
	if out.DType == tensor.String {
		var strs []string
		if err := json.Unmarshal(j.Data, &strs); err != nil {
			t.Fatal(err)
		}
		for i, s := range strs {
			out.Strs[i], _ = base64.StdEncoding.DecodeString(s)
		}
		return out
	}
	var s string
	if err := json.Unmarshal(j.Data, &s); err != nil {
		t.Fatal(err)
	}
	b, _ := base64.StdEncoding.DecodeString(s)
	copy(out.Buf, b)
	if len(b) != len(out.Buf) {
		t.Fatalf("%v%v: %d bytes from TF", out.DType, out.Shape, len(b))
	}
	return out
}

func sameTensor(a, b *tensor.Tensor) bool {
	if a.DType != b.DType || !a.Shape.Equal(b.Shape) {
		return false
	}
	if a.DType == tensor.String {
		for i := range a.Strs {
			if !bytes.Equal(a.Strs[i], b.Strs[i]) {
				return false
			}
		}
		return len(a.Strs) == len(b.Strs)
	}
	return bytes.Equal(a.Buf, b.Buf)
}

type tfWrite struct {
	Order []string                         `json:"order"`
	Cases map[string]jsonTensor            `json:"cases"`
	Read  map[string]map[string]jsonTensor `json:"read"`
}

var (
	tfOnce sync.Once
	tfDir  string
	tfOut  tfWrite
)

// tfCheckpoints has real TF write its checkpoints once per test binary.
func tfCheckpoints(t *testing.T) (string, *tfWrite) {
	tfPython(t)
	tfOnce.Do(func() {
		d, err := os.MkdirTemp("", "ckpt-tf")
		if err != nil {
			t.Fatal(err)
		}
		tfDir = d
		runTF(t, &tfOut, "write", d)
	})
	if tfOut.Read == nil {
		t.Fatal("TF's checkpoints were not written")
	}
	return tfDir, &tfOut
}

// TestReadTFCheckpoints reads every checkpoint TF wrote (SaveV2 over
// every dtype and edge shape, sliced saves, a merge of two saves,
// tf.train.Checkpoint, a sharded v1 Saver of a partitioned variable) and
// compares each tensor with what TF itself reads back from the same files.
func TestReadTFCheckpoints(t *testing.T) {
	dir, w := tfCheckpoints(t)
	n := 0
	for prefix, want := range w.Read {
		r, err := Open(filepath.Join(dir, prefix))
		if err != nil {
			t.Fatalf("%s: %v", prefix, err)
		}
		keys := r.Keys()
		var wantKeys []string
		for k := range want {
			wantKeys = append(wantKeys, k)
		}
		sort.Strings(wantKeys)
		if strings.Join(keys, ",") != strings.Join(wantKeys, ",") {
			t.Errorf("%s: keys %q, TF lists %q", prefix, keys, wantKeys)
		}
		for k, jt := range want {
			got, err := r.Lookup(k)
			if err != nil {
				t.Errorf("%s: %s: %v", prefix, k, err)
				continue
			}
			if wt := jt.tensor(t); !sameTensor(got, wt) {
				t.Errorf("%s: %s: got %v, TF reads %v", prefix, k, got, wt)
			}
			n++
		}
		r.Close()
	}
	if len(w.Cases) < 90 || n < len(w.Cases)+4 {
		t.Fatalf("only %d tensors read (%d cases)", n, len(w.Cases))
	}
	t.Logf("%d tensors of %d TF checkpoints read equal to TF's reading", n, len(w.Read))
}

// TestWriteLikeTF writes TF's cases in TF's order and compares the files
// byte for byte with those tf.raw_ops.SaveV2 wrote.
func TestWriteLikeTF(t *testing.T) {
	dir, w := tfCheckpoints(t)
	prefix := filepath.Join(t.TempDir(), "ms")
	wr, err := NewWriter(prefix)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range w.Order {
		if err := wr.Add(k, w.Cases[k].tensor(t)); err != nil {
			t.Fatal(err)
		}
	}
	if err := wr.Finish(); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{".index", ".data-00000-of-00001"} {
		a, _ := os.ReadFile(filepath.Join(dir, "tf") + f)
		b, err := os.ReadFile(prefix + f)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) || len(a) == 0 {
			t.Errorf("%s: mstream wrote %d bytes, TF %d, not the same", f, len(b), len(a))
		}
	}
	left, _ := filepath.Glob(prefix + "*tempstate*")
	if len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// TestTFReadsMstreamCheckpoints has TF read (tf.train.load_checkpoint and
// RestoreV2) what mstream wrote: every case, a sliced save, and two
// bundles merged by Merge.
func TestTFReadsMstreamCheckpoints(t *testing.T) {
	_, w := tfCheckpoints(t)
	dir := t.TempDir()
	wr, err := NewWriter(filepath.Join(dir, "all"))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range w.Order {
		if err := wr.Add(k, w.Cases[k].tensor(t)); err != nil {
			t.Fatal(err)
		}
	}
	if err := wr.Finish(); err != nil {
		t.Fatal(err)
	}
	// A 4x3 tensor saved as rows [0,1) and [1,4), and a 2x2 one by
	// columns. (TF cannot read back a string tensor saved in slices.)
	full := tensor.New(tensor.Int32, tensor.Shape{4, 3})
	for i := range full.I32() {
		full.I32()[i] = int32(i*7 - 20)
	}
	words := tensor.FromI64(tensor.Shape{2, 2}, []int64{1 << 40, 0, -5, 9})
	wr, err = NewWriter(filepath.Join(dir, "sliced"))
	if err != nil {
		t.Fatal(err)
	}
	must(t, wr.AddSlice("m", full.Shape, Slice{{0, 1}, {0, FullExtent}}, tensor.FromI32(tensor.Shape{1, 3}, full.I32()[:3])))
	must(t, wr.AddSlice("m", full.Shape, Slice{{1, 3}, {0, FullExtent}}, tensor.FromI32(tensor.Shape{3, 3}, full.I32()[3:])))
	must(t, wr.AddSlice("w", words.Shape, Slice{{0, FullExtent}, {1, 1}}, tensor.FromI64(tensor.Shape{2, 1}, []int64{0, 9})))
	must(t, wr.AddSlice("w", words.Shape, Slice{{0, FullExtent}, {0, 1}}, tensor.FromI64(tensor.Shape{2, 1}, []int64{1 << 40, -5})))
	must(t, wr.Finish())
	// Two bundles merged.
	tmp := filepath.Join(dir, "tmp")
	for i, k := range []string{"a", "b"} {
		wr, err := NewWriter(filepath.Join(tmp, "part-"+k))
		if err != nil {
			t.Fatal(err)
		}
		must(t, wr.Add("x/"+k, tensor.FromF64(tensor.Shape{2}, []float64{float64(i) + .5, -3})))
		must(t, wr.Finish())
	}
	must(t, Merge([]string{filepath.Join(tmp, "part-a"), filepath.Join(tmp, "part-b")}, filepath.Join(dir, "merged"), false))

	var got map[string]map[string]jsonTensor
	runTF(t, &got, "read", filepath.Join(dir, "all"), filepath.Join(dir, "sliced"), filepath.Join(dir, "merged"))
	all := got[filepath.Join(dir, "all")]
	if len(all) != len(w.Cases) {
		t.Errorf("TF reads %d tensors, mstream wrote %d", len(all), len(w.Cases))
	}
	for k, jt := range all {
		if want := w.Cases[k].tensor(t); !sameTensor(jt.tensor(t), want) {
			t.Errorf("%s: TF reads %v, mstream wrote %v", k, jt.tensor(t), want)
		}
	}
	sl := got[filepath.Join(dir, "sliced")]
	if g := sl["m"].tensor(t); !sameTensor(g, full) {
		t.Errorf("sliced m: TF reads %v %v", g, g.I32())
	}
	if g := sl["w"].tensor(t); !sameTensor(g, words) {
		t.Errorf("sliced w: TF reads %v", g.I64())
	}
	mg := got[filepath.Join(dir, "merged")]
	if len(mg) != 2 || !sameTensor(mg["x/b"].tensor(t), tensor.FromF64(tensor.Shape{2}, []float64{1.5, -3})) {
		t.Errorf("merged: TF reads %v", mg)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestSliceRestore reads slices of TF's sliced and whole tensors, checking
// them against the same region of the whole tensor as TF reads it.
func TestSliceRestore(t *testing.T) {
	dir, w := tfCheckpoints(t)
	r, err := Open(filepath.Join(dir, "sliced"))
	must(t, err)
	defer r.Close()
	p := w.Read["sliced"]["p"].tensor(t) // 5x3 float32
	for _, spec := range []string{"5 3 1,3:-", "5 3 -:1,2", "5 3 4,1:2,1", "5 3 -:-", "5 3 0,5:0,3"} {
		_, s, shape, err := ParseShapeAndSlice(spec)
		must(t, err)
		got, err := r.LookupSlice("p", s)
		if err != nil {
			t.Errorf("%s: %v", spec, err)
			continue
		}
		lo, _ := s.bounds(p.Shape)
		want := tensor.New(p.DType, shape)
		copyRegion(want, lo, p, []int64{0, 0})
		if !sameTensor(got, want) {
			t.Errorf("%s: got %v, want %v", spec, got.F32(), want.F32())
		}
	}
	if _, err := r.LookupSlice("p", Slice{{0, 1}}); status.CodeOf(err) != status.Internal {
		t.Errorf("rank mismatch: %v", err)
	}
}

// TestErrors checks the codes of a missing checkpoint, a missing key, a
// missing data shard and a duplicate key.
func TestErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(filepath.Join(dir, "none")); status.CodeOf(err) != status.NotFound || !strings.Contains(err.Error(), "none.index") {
		t.Errorf("missing index: %v", err)
	}
	w, err := NewWriter(filepath.Join(dir, "c"))
	must(t, err)
	must(t, w.Add("a", tensor.FromI64(tensor.Shape{2}, []int64{1, 2})))
	if err := w.Add("a", tensor.ScalarF32(1)); status.CodeOf(err) != status.InvalidArgument {
		t.Errorf("duplicate key: %v", err)
	}
	w.Abort()
	if left, _ := filepath.Glob(filepath.Join(dir, "c*")); len(left) != 0 {
		t.Errorf("Abort left %v", left)
	}
	w, err = NewWriter(filepath.Join(dir, "c"))
	must(t, err)
	must(t, w.Add("a", tensor.FromI64(tensor.Shape{2}, []int64{1, 2})))
	must(t, w.Finish())
	r, err := Open(filepath.Join(dir, "c"))
	must(t, err)
	if _, err := r.Lookup("b"); status.CodeOf(err) != status.NotFound || !strings.Contains(err.Error(), "b") {
		t.Errorf("missing key: %v", err)
	}
	r.Close()
	os.Remove(DataFilename(filepath.Join(dir, "c"), 0, 1))
	r, err = Open(filepath.Join(dir, "c"))
	must(t, err)
	if _, err := r.Lookup("a"); status.CodeOf(err) != status.NotFound || !strings.Contains(err.Error(), "c.data-00000-of-00001") {
		t.Errorf("missing shard: %v", err)
	}
	if err := Merge([]string{filepath.Join(dir, "nope")}, filepath.Join(dir, "m"), false); status.CodeOf(err) != status.InvalidArgument {
		t.Errorf("merge of a missing prefix: %v", err)
	}
}

// readAll opens prefix and reads every tensor, returning the first error.
func readAll(prefix string) error {
	r, err := Open(prefix)
	if err != nil {
		return err
	}
	defer r.Close()
	for _, k := range r.Keys() {
		if _, err := r.Lookup(k); err != nil {
			return err
		}
	}
	return nil
}

// TestCorruptFiles truncates TF's files and flips bytes in them: every
// damaged file must read as DATA_LOSS naming the file (or, for a byte that
// only changes a value the format does not check, such as padding, read
// without error), never panic.
func TestCorruptFiles(t *testing.T) {
	src, _ := tfCheckpoints(t)
	for _, prefix := range []string{"tf", "sliced", "merged"} {
		files, _ := filepath.Glob(filepath.Join(src, prefix) + ".*")
		for _, f := range files {
			orig, err := os.ReadFile(f)
			must(t, err)
			base := filepath.Base(f)
			damage := func(name string, b []byte, mustFail bool) {
				dir := t.TempDir()
				for _, g := range files {
					data, _ := os.ReadFile(g)
					if g == f {
						data = b
					}
					must(t, os.WriteFile(filepath.Join(dir, filepath.Base(g)), data, 0o644))
				}
				err := readAll(filepath.Join(dir, prefix))
				if err == nil {
					if mustFail {
						t.Errorf("%s %s: read without error", base, name)
					}
					return
				}
				if status.CodeOf(err) != status.DataLoss || !strings.Contains(err.Error(), base) {
					t.Errorf("%s %s: %v (code %v)", base, name, err, status.CodeOf(err))
				}
			}
			// Every byte of every file is read, so any cut fails.
			for _, n := range []int{0, 1, len(orig) / 2, len(orig) - 1} {
				damage("truncated to "+strconv.Itoa(n), orig[:n], true)
			}
			for i := 0; i < len(orig); i += max(1, len(orig)/97) {
				b := append([]byte{}, orig...)
				b[i] ^= 0x5a
				// Every byte of a data file is under a CRC; in the index,
				// the footer's handles and padding are not, nor is the
				// meta-index block, which neither TF nor mstream reads.
				unread := false
				if strings.HasSuffix(base, ".index") {
					meta, _, err := decodeHandle(orig[len(orig)-footerLen:])
					must(t, err)
					unread = i >= len(orig)-footerLen && i < len(orig)-8 ||
						uint64(i) >= meta.off && uint64(i) < meta.off+meta.size+blockTrailerLen
				}
				damage("byte "+strconv.Itoa(i)+" flipped", b, !unread)
			}
			if strings.HasSuffix(base, ".index") {
				b := append([]byte{}, orig...)
				b[len(b)-1] ^= 1
				damage("bad magic", b, true)
			}
		}
	}
}

// FuzzReader feeds arbitrary index and data files to the reader, seeded
// with TF's own: it must return an error or tensors, never panic or hang.
func FuzzReader(f *testing.F) {
	if dir, err := filepath.Glob("testdata/fuzzseed/*.index"); err == nil {
		for _, idx := range dir {
			a, _ := os.ReadFile(idx)
			b, _ := os.ReadFile(strings.TrimSuffix(idx, ".index") + ".data-00000-of-00001")
			f.Add(a, b)
		}
	}
	f.Fuzz(func(t *testing.T, index, data []byte) {
		dir := t.TempDir()
		prefix := filepath.Join(dir, "f")
		os.WriteFile(IndexFilename(prefix), index, 0o644)
		os.WriteFile(DataFilename(prefix, 0, 1), data, 0o644)
		err := readAll(prefix)
		if err != nil {
			if c := status.CodeOf(err); c == status.Unknown || c == status.Internal {
				t.Fatalf("code %v: %v", c, err)
			}
		}
	})
}
