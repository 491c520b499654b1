package graph

import (
	"encoding/base64"
	"encoding/binary"
	"sort"
	"strings"

	"google.golang.org/protobuf/proto"

	"mstream/proto/tfpb"
	"mstream/tensor"
)

// FunctionDefHash is TF's FunctionDefHash (framework/function.cc): the
// hash TF_GraphToFunction's append_hash_to_fn_name puts in a function's
// name. It must equal TF's bit for bit, so it follows TF's walk: the
// signature (OpDefHash), the set attrs, the body nodes by name
// (RepeatedNodeDefHash), then ret and control_ret by key, with TF's
// MurmurHash64A-style Hash64, its Hash64Combine and deterministic proto
// serialization.
func FunctionDefHash(fd *tfpb.FunctionDef) uint64 {
	h := opDefHash(fd.GetSignature())
	for _, k := range sortedKeys(fd.GetAttr()) {
		v := fd.GetAttr()[k]
		if v.GetValue() == nil {
			continue
		}
		h = hash64(k, h)
		h = hash64Combine(attrValueHash(v), h)
	}
	h = hash64Combine(nodeDefsHash(fd.GetNodeDef()), h)
	for _, m := range []map[string]string{fd.GetRet(), fd.GetControlRet()} {
		for _, k := range sortedKeys(m) {
			h = hash64(k, h)
			h = hash64(m[k], h)
		}
	}
	return h
}

// HashedFunctionName is fn with TF's hash suffix: "_" and the unpadded
// URL-safe base64 of the hash's 8 little-endian bytes, '-' and '_' then
// replaced by 'a' and 'A' (graph_to_functiondef.cc).
func HashedFunctionName(fn string, fd *tfpb.FunctionDef) string {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], FunctionDefHash(fd))
	enc := base64.RawURLEncoding.EncodeToString(b[:])
	enc = strings.NewReplacer("-", "a", "_", "A").Replace(enc)
	return fn + "_" + enc
}

// hashSeed is tsl::Hash64's default seed.
const hashSeed = 0xDECAFCAFFE

// hash64 is tsl::Hash64(data, n, seed).
func hash64(s string, seed uint64) uint64 {
	return hash64Bytes([]byte(s), seed)
}

func hash64Bytes(data []byte, seed uint64) uint64 {
	const m = 0xc6a4a7935bd1e995
	const r = 47
	n := len(data)
	h := seed ^ (uint64(n) * m)
	for len(data) >= 8 {
		k := binary.LittleEndian.Uint64(data)
		data = data[8:]
		k *= m
		k ^= k >> r
		k *= m
		h ^= k
		h *= m
	}
	if len(data) > 0 {
		for i := len(data) - 1; i >= 0; i-- {
			h ^= uint64(data[i]) << (8 * i)
		}
		h *= m
	}
	h ^= h >> r
	h *= m
	h ^= h >> r
	return h
}

func hash64Combine(a, b uint64) uint64 {
	return a ^ (b + 0x9e3779b97f4a7800 + (a << 10) + (a >> 4))
}

// protoHash is tsl::DeterministicProtoHash64.
func protoHash(m proto.Message, seed uint64) uint64 {
	b, _ := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	return hash64Bytes(b, seed)
}

// opDefHash is TF's OpDefHash: the attrs by name, the control outputs
// sorted, then the rest of the OpDef serialized.
func opDefHash(o *tfpb.OpDef) uint64 {
	attrs := append([]*tfpb.OpDef_AttrDef(nil), o.GetAttr()...)
	sort.SliceStable(attrs, func(i, j int) bool { return attrs[i].GetName() < attrs[j].GetName() })
	h := uint64(hashSeed)
	for _, a := range attrs {
		h = hash64(a.GetName(), h)
		h = hash64Combine(attrDefHash(a), h)
	}
	co := append([]string(nil), o.GetControlOutput()...)
	sort.Strings(co)
	for _, c := range co {
		h = hash64Combine(h, hash64(c, hashSeed))
	}
	rest := proto.Clone(o).(*tfpb.OpDef)
	rest.Attr = nil
	rest.ControlOutput = nil
	return protoHash(rest, h)
}

func attrDefHash(a *tfpb.OpDef_AttrDef) uint64 {
	h := hash64(a.GetName(), hashSeed)
	h = hash64(a.GetType(), h)
	h = hash64Combine(attrValueHash(orEmpty(a.GetDefaultValue())), h)
	h = hash64(a.GetDescription(), h)
	hasMin := uint64(0)
	if a.GetHasMinimum() {
		hasMin = 1
	}
	h = hash64Combine(hasMin, h)
	h = hash64Combine(uint64(a.GetMinimum()), h)
	return hash64Combine(attrValueHash(orEmpty(a.GetAllowedValues())), h)
}

func orEmpty(v *tfpb.AttrValue) *tfpb.AttrValue {
	if v == nil {
		return &tfpb.AttrValue{}
	}
	return v
}

// nodeDefsHash is TF's RepeatedNodeDefHash over NodeDefHash: nodes by
// name; per node its name, op, device, data inputs in order, control
// inputs sorted, attrs by name.
func nodeDefsHash(nds []*tfpb.NodeDef) uint64 {
	byName := map[string]*tfpb.NodeDef{}
	for _, nd := range nds {
		byName[nd.GetName()] = nd
	}
	h := uint64(hashSeed)
	for _, name := range sortedKeys(byName) {
		nd := byName[name]
		nh := hash64(nd.GetName(), hashSeed)
		nh = hash64(nd.GetOp(), nh)
		nh = hash64(nd.GetDevice(), nh)
		var ctrls []string
		for i, in := range nd.GetInput() {
			if strings.HasPrefix(in, "^") {
				ctrls = append(ctrls, nd.GetInput()[i:]...)
				break
			}
			nh = hash64(in, nh)
		}
		sort.Strings(ctrls)
		ctrls = slicesCompact(ctrls)
		for _, c := range ctrls {
			nh = hash64(c, nh)
		}
		for _, k := range sortedKeys(nd.GetAttr()) {
			nh = hash64(k, nh)
			nh = hash64Combine(attrValueHash(nd.GetAttr()[k]), nh)
		}
		h = hash64(name, h)
		h = hash64Combine(nh, h)
	}
	return h
}

// slicesCompact drops repeats from a sorted slice (TF keeps control
// inputs in a std::set).
func slicesCompact(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// attrValueHash is TF's AttrValueHash: a tensor by its canonical
// TensorProto (TensorProtoHash), a func by name and attrs, anything else
// by its serialization.
func attrValueHash(v *tfpb.AttrValue) uint64 {
	if t := v.GetTensor(); t != nil {
		return tensorProtoHash(t)
	}
	if f := v.GetFunc(); f != nil {
		h := hash64(f.GetName(), hashSeed)
		for _, k := range sortedKeys(f.GetAttr()) {
			h = hash64(k, h)
			h = hash64Combine(attrValueHash(f.GetAttr()[k]), h)
		}
		return h
	}
	return protoHash(v, hashSeed)
}

// tensorProtoHash is TF's TensorProtoHash: the tensor parsed and written
// back as AsProtoTensorContent writes it (tensor_content; strings as a
// varint length list then the bytes), or the proto itself when it does
// not parse.
func tensorProtoHash(p *tfpb.TensorProto) uint64 {
	t, err := tensor.FromProto(p)
	if err != nil || t.DType == tensor.Resource || t.DType == tensor.Variant {
		return protoHash(p, hashSeed)
	}
	c := &tfpb.TensorProto{Dtype: p.GetDtype(), TensorShape: tensor.ShapeToProto(tensor.KnownShape(t.Shape))}
	if t.DType == tensor.String {
		var b []byte
		for _, s := range t.Strs {
			b = binary.AppendUvarint(b, uint64(len(s)))
		}
		for _, s := range t.Strs {
			b = append(b, s...)
		}
		c.TensorContent = b
	} else if len(t.Buf) > 0 {
		c.TensorContent = t.Buf
	}
	return protoHash(c, hashSeed)
}
