package cpu

import (
	"bufio"
	"encoding/binary"
	"math"
	"os"
	"strconv"
	"strings"

	"mstream/graph"
	"mstream/kernels"
	"mstream/resource"
	"mstream/status"
	"mstream/tensor"
)

// Lookup tables of scalar keys over resource.Table: HashTableV2 (filled
// once by InitializeTableV2 or InitializeTableFromTextFileV2),
// MutableHashTableV2 and MutableHashTableOfTensorsV2, whose values are
// vectors of the value_shape attr. A value is stored as one byte string
// (row): a number's bytes or a vector's, packed; a string, or a vector of
// strings each prefixed by its uvarint length. Host-only, as TF's.

func init() {
	reg("HashTableV2", nil, nil, stateful(func(n *graph.Node, b kernels.Binding) (kernels.Kernel, error) { return tableOp(n, b, false) }))
	reg("MutableHashTableV2", nil, nil, stateful(func(n *graph.Node, b kernels.Binding) (kernels.Kernel, error) { return tableOp(n, b, true) }))
	reg("MutableHashTableOfTensorsV2", nil, nil, stateful(func(n *graph.Node, b kernels.Binding) (kernels.Kernel, error) { return tableOp(n, b, true) }))
	reg("LookupTableFindV2", nil, nil, stateful(func(n *graph.Node, b kernels.Binding) (kernels.Kernel, error) {
		return kernels.KernelFunc(func(ctx *kernels.Context) error { return tableFind(ctx, b.Resources) }), nil
	}))
	reg("LookupTableSizeV2", nil, nil, stateful(func(n *graph.Node, b kernels.Binding) (kernels.Kernel, error) {
		return kernels.KernelFunc(func(ctx *kernels.Context) error {
			t, err := lookupTable(ctx, b.Resources)
			if err != nil {
				return err
			}
			out := tensor.New(tensor.Int64, tensor.Shape{})
			out.I64()[0] = int64(t.Size())
			ctx.SetOutput(0, out)
			return nil
		}), nil
	}))
	for op, replace := range map[string]bool{"LookupTableInsertV2": false, "LookupTableImportV2": true} {
		reg(op, nil, nil, stateful(func(n *graph.Node, b kernels.Binding) (kernels.Kernel, error) {
			return kernels.KernelFunc(func(ctx *kernels.Context) error { return tableInsert(ctx, b.Resources, replace) }), nil
		}))
	}
	reg("LookupTableRemoveV2", nil, nil, stateful(func(n *graph.Node, b kernels.Binding) (kernels.Kernel, error) {
		return kernels.KernelFunc(func(ctx *kernels.Context) error {
			t, err := lookupTable(ctx, b.Resources)
			if err != nil {
				return err
			}
			if err := checkTypes(ctx, t, ctx.Input(1), nil); err != nil {
				return err
			}
			if !t.Mutable {
				return ctx.Errorf(status.Unimplemented, "Remove not supported by InitializableLookupTable implementations")
			}
			t.Remove(elems(ctx.Input(1)))
			return nil
		}), nil
	}))
	reg("LookupTableExportV2", nil, nil, stateful(func(n *graph.Node, b kernels.Binding) (kernels.Kernel, error) {
		return kernels.KernelFunc(func(ctx *kernels.Context) error { return tableExport(ctx, b.Resources) }), nil
	}))
	reg("InitializeTableV2", nil, nil, stateful(func(n *graph.Node, b kernels.Binding) (kernels.Kernel, error) {
		return kernels.KernelFunc(func(ctx *kernels.Context) error { return tableInit(ctx, b.Resources) }), nil
	}))
	reg("InitializeTableFromTextFileV2", nil, nil, stateful(func(n *graph.Node, b kernels.Binding) (kernels.Kernel, error) {
		return kernels.KernelFunc(func(ctx *kernels.Context) error { return tableInitFromFile(ctx, b.Resources) }), nil
	}))
}

// tableOp outputs the handle of its table, making it on first use:
// (container, shared_name), the node's name when shared_name is empty
// (TF names an unshared table per kernel; a session here has one kernel
// per node and plan, so the node name keeps it one table across plans).
func tableOp(n *graph.Node, b kernels.Binding, mutable bool) (kernels.Kernel, error) {
	name := attrString(n, "shared_name", "")
	if name == "" {
		name = n.Name
	}
	kt, vt := attrType(n, "key_dtype"), attrType(n, "value_dtype")
	vs := tensor.Shape{}
	if a := n.Attrs["value_shape"]; a != nil {
		ps := tensor.ShapeFromProto(a.GetShape())
		if !ps.FullyDefined() || len(ps.Dims) != 1 {
			return nil, status.InvalidArg("Default value must be a vector, got shape %v", ps)
		}
		vs = ps.Dims
	}
	h := resource.Handle{Container: attrString(n, "container", ""), Name: name, Kind: resource.TableKind}
	ht := h.Tensor()
	return kernels.KernelFunc(func(ctx *kernels.Context) error {
		r := b.Resources.LookupOrCreate(h.Container, h.Name, resource.TableKind, func() resource.Resource {
			return resource.NewTable(kt, vt, vs, mutable)
		})
		if t := r.(*resource.Table); t.KeyType != kt || t.ValueType != vt || t.Mutable != mutable || !t.ValueShape.Equal(vs) {
			return ctx.Errorf(status.InvalidArgument, "table %s exists with key %v and value %v%v", name, t.KeyType, t.ValueType, t.ValueShape)
		}
		ctx.SetOutput(0, ht)
		return nil
	}), nil
}

func lookupTable(ctx *kernels.Context, rm *resource.Manager) (*resource.Table, error) {
	h, err := handleOf(ctx, 0)
	if err != nil {
		return nil, err
	}
	r, err := rm.Lookup(h.Container, h.Name, resource.TableKind)
	if err != nil {
		return nil, ctx.Errorf(status.CodeOf(err), "%v", err)
	}
	return r.(*resource.Table), nil
}

// elems are the elements of t as bytes (a string's, or a number's).
func elems(t *tensor.Tensor) [][]byte { return rows(t, t.NumElements(), 1) }

// rows splits t into n rows of width elements, each packed into one byte
// string as the table stores a value: a single string as its bytes,
// several each after its uvarint length, numbers as their bytes.
func rows(t *tensor.Tensor, n, width int64) [][]byte {
	out := make([][]byte, n)
	w := int(width)
	if t.DType.InStrs() {
		for i := range out {
			if w == 1 {
				out[i] = append([]byte(nil), t.Strs[i]...)
				continue
			}
			var b []byte
			for _, s := range t.Strs[i*w : (i+1)*w] {
				b = binary.AppendUvarint(b, uint64(len(s)))
				b = append(b, s...)
			}
			out[i] = b
		}
		return out
	}
	rs := w * t.DType.Size()
	for i := range out {
		out[i] = append([]byte(nil), t.Buf[i*rs:(i+1)*rs]...)
	}
	return out
}

// setRow writes row i of width elements of t from its packed bytes v.
func setRow(t *tensor.Tensor, i int, width int64, v []byte) {
	w := int(width)
	if t.DType.InStrs() {
		if w == 1 {
			t.Strs[i] = v
			return
		}
		for j := range w {
			n, k := binary.Uvarint(v)
			t.Strs[i*w+j] = v[k : k+int(n)]
			v = v[k+int(n):]
		}
		return
	}
	rs := w * t.DType.Size()
	copy(t.Buf[i*rs:(i+1)*rs], v)
}

func setElem(t *tensor.Tensor, i int, v []byte) { setRow(t, i, 1, v) }

// checkTypes is TF's CheckKeyAndValueTypes; with values it also checks
// their shape as CheckKeyAndValueTensorsHelper does (the keys' shape and
// then the value shape).
func checkTypes(ctx *kernels.Context, t *resource.Table, keys, values *tensor.Tensor) error {
	if keys.DType != t.KeyType {
		return ctx.Errorf(status.InvalidArgument, "Key must be type %v but got %v", t.KeyType, keys.DType)
	}
	if values != nil && values.DType != t.ValueType {
		return ctx.Errorf(status.InvalidArgument, "Value must be type %v but got %v", t.ValueType, values.DType)
	}
	return nil
}

func checkValues(ctx *kernels.Context, t *resource.Table, keys, values *tensor.Tensor) error {
	if err := checkTypes(ctx, t, keys, values); err != nil {
		return err
	}
	want := append(keys.Shape.Clone(), t.ValueShape...)
	if !values.Shape.Equal(want) {
		return ctx.Errorf(status.InvalidArgument, "Expected shape %v for value, got %v", want, values.Shape)
	}
	return nil
}

func tableFind(ctx *kernels.Context, rm *resource.Manager) error {
	t, err := lookupTable(ctx, rm)
	if err != nil {
		return err
	}
	keys, def := ctx.Input(1), ctx.Input(2)
	if err := checkTypes(ctx, t, keys, def); err != nil {
		return err
	}
	if !t.Initialized() {
		return ctx.Errorf(status.FailedPrecondition, "Table not initialized.")
	}
	full := append(keys.Shape.Clone(), t.ValueShape...)
	if !def.Shape.Equal(t.ValueShape) && !def.Shape.Equal(full) {
		return ctx.Errorf(status.InvalidArgument, "Expected shape %v or %v for default value, got %v", t.ValueShape, full, def.Shape)
	}
	out, err := ctx.Allocate(0, full)
	if err != nil {
		return err
	}
	width := t.ValueShape.NumElements()
	// TF's is_full_size_default: a default per key when the default has
	// as many elements as the output.
	perKey := def.NumElements() == out.NumElements()
	nd := int64(1)
	if perKey {
		nd = keys.NumElements()
	}
	defs := rows(def, nd, width)
	t.Find(elems(keys), func(i int, v []byte, ok bool) {
		if !ok {
			v = defs[0]
			if perKey {
				v = defs[i]
			}
		}
		setRow(out, i, width, v)
	})
	return nil
}

func tableInsert(ctx *kernels.Context, rm *resource.Manager, replace bool) error {
	t, err := lookupTable(ctx, rm)
	if err != nil {
		return err
	}
	keys, values := ctx.Input(1), ctx.Input(2)
	if err := checkValues(ctx, t, keys, values); err != nil {
		return err
	}
	if !t.Mutable {
		if _, same := t.Initialize(elems(keys), elems(values)); !same {
			return ctx.Errorf(status.FailedPrecondition, "Table was already initialized with different data.")
		}
		return nil
	}
	t.Insert(elems(keys), rows(values, keys.NumElements(), t.ValueShape.NumElements()), replace, false)
	return nil
}

func tableExport(ctx *kernels.Context, rm *resource.Manager) error {
	t, err := lookupTable(ctx, rm)
	if err != nil {
		return err
	}
	if !t.Initialized() {
		return ctx.Errorf(status.Aborted, "HashTable is not initialized.")
	}
	ks, vs := t.Snapshot()
	ko, err := ctx.Allocate(0, tensor.Shape{int64(len(ks))})
	if err != nil {
		return err
	}
	vo, err := ctx.Allocate(1, append(tensor.Shape{int64(len(vs))}, t.ValueShape...))
	if err != nil {
		return err
	}
	width := t.ValueShape.NumElements()
	for i := range ks {
		setElem(ko, i, ks[i])
		setRow(vo, i, width, vs[i])
	}
	return nil
}

func tableInit(ctx *kernels.Context, rm *resource.Manager) error {
	t, err := lookupTable(ctx, rm)
	if err != nil {
		return err
	}
	keys, values := ctx.Input(1), ctx.Input(2)
	if err := checkTypes(ctx, t, keys, values); err != nil {
		return err
	}
	if len(keys.Shape) != 1 {
		return ctx.Errorf(status.InvalidArgument, "Keys must be a vector, but received shape%v", keys.Shape)
	}
	if len(values.Shape) != 1 {
		return ctx.Errorf(status.InvalidArgument, "Values must be a vector, but received shape%v", values.Shape)
	}
	if keys.NumElements() != values.NumElements() {
		return ctx.Errorf(status.InvalidArgument, "Keys and values must have the same size %d vs %d.", keys.NumElements(), values.NumElements())
	}
	if _, same := t.Initialize(elems(keys), elems(values)); !same {
		return ctx.Errorf(status.FailedPrecondition, "Table was already initialized with different data.")
	}
	return nil
}

// Special columns of InitializeTableFromTextFileV2 (TF's
// lookup::TextFileIndex).
const (
	wholeLine  = -2
	lineNumber = -1
)

func tableInitFromFile(ctx *kernels.Context, rm *resource.Manager) error {
	t, err := lookupTable(ctx, rm)
	if err != nil {
		return err
	}
	n := ctx.Node
	keyIdx, valIdx := attrInt(n, "key_index", 0), attrInt(n, "value_index", 0)
	vocab, offset := attrInt(n, "vocab_size", -1), attrInt(n, "offset", 0)
	delim := attrString(n, "delimiter", "\t")
	if ctx.Input(1).NumElements() != 1 {
		return ctx.Errorf(status.InvalidArgument, "filename should be a single string, but got %v", ctx.Input(1).Shape)
	}
	fname := string(ctx.Input(1).Strs[0])
	f, err := os.Open(fname)
	if err != nil {
		return ctx.Errorf(status.NotFound, "%s; No such file or directory", fname)
	}
	defer f.Close()
	var keys, values [][]byte
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, math.MaxInt32)
	line := int64(0)
	for sc.Scan() && (vocab < 0 || line < vocab) {
		text := strings.TrimSuffix(sc.Text(), "\r")
		cols := strings.Split(text, delim)
		k, err := column(text, cols, keyIdx, line, offset, t.KeyType)
		if err != nil {
			return ctx.Errorf(status.InvalidArgument, "%s:%d: key: %v", fname, line+1, err)
		}
		v, err := column(text, cols, valIdx, line, offset, t.ValueType)
		if err != nil {
			return ctx.Errorf(status.InvalidArgument, "%s:%d: value: %v", fname, line+1, err)
		}
		keys, values = append(keys, k), append(values, v)
		line++
	}
	if err := sc.Err(); err != nil {
		return ctx.Errorf(status.DataLoss, "reading %s: %v", fname, err)
	}
	if vocab >= 0 && line < vocab {
		return ctx.Errorf(status.InvalidArgument, "Invalid vocab_size in %s: expected %d but got %d", fname, vocab, line)
	}
	// A table filled already (by this file, another run) stays as it is.
	t.Initialize(keys, values)
	return nil
}

// column is field idx of a vocabulary line as the bytes of dtype dt.
func column(text string, cols []string, idx, line, offset int64, dt tensor.DType) ([]byte, error) {
	var s string
	switch {
	case idx == lineNumber:
		return numBytes(dt, float64(line+offset), line+offset)
	case idx == wholeLine:
		s = text
	case idx >= 0 && idx < int64(len(cols)):
		s = cols[idx]
	default:
		return nil, status.InvalidArg("Invalid number of columns in line %d: expected at least %d, got %d", line+1, idx+1, len(cols))
	}
	if dt == tensor.String {
		return []byte(s), nil
	}
	if dt == tensor.Float || dt == tensor.Double {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, status.InvalidArg("Field %s is not a valid %v", s, dt)
		}
		return numBytes(dt, f, 0)
	}
	i, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return nil, status.InvalidArg("Field %s is not a valid %v", s, dt)
	}
	return numBytes(dt, 0, i)
}

func numBytes(dt tensor.DType, f float64, i int64) ([]byte, error) {
	switch dt {
	case tensor.Int64:
		return binary.LittleEndian.AppendUint64(nil, uint64(i)), nil
	case tensor.Int32:
		return binary.LittleEndian.AppendUint32(nil, uint32(int32(i))), nil
	case tensor.Float:
		if f == 0 {
			f = float64(i)
		}
		return binary.LittleEndian.AppendUint32(nil, math.Float32bits(float32(f))), nil
	case tensor.Double:
		if f == 0 {
			f = float64(i)
		}
		return binary.LittleEndian.AppendUint64(nil, math.Float64bits(f)), nil
	case tensor.String:
		return []byte(strconv.FormatInt(i, 10)), nil
	}
	return nil, status.InvalidArg("dtype %v is not supported in a text-file table", dt)
}
