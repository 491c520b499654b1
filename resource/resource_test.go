package resource

import (
	"strings"
	"sync"
	"testing"

	"mstream/status"
	"mstream/tensor"
)

// TestNames checks TF's ResourceMgr rules: the default container, one
// resource per (container, name, kind), TF's NOT_FOUND texts, and a
// container that outlives its last resource.
func TestNames(t *testing.T) {
	m := NewManager()
	if _, err := m.Lookup("", "v", VarKind); status.CodeOf(err) != status.NotFound || !strings.Contains(err.Error(), "Container localhost does not exist") {
		t.Errorf("lookup in an empty manager: %v", err)
	}
	a := m.LookupOrCreate("", "v", VarKind, func() Resource { return NewVar(tensor.Float, "v") })
	b := m.LookupOrCreate(DefaultContainer, "v", VarKind, func() Resource { return NewVar(tensor.Float, "v") })
	if a != b {
		t.Error("the empty container is not localhost")
	}
	if c := m.LookupOrCreate("", "v", LegacyVarKind, func() Resource { return NewLegacyVar(tensor.Float, "v") }); c == a {
		t.Error("a ref variable and a resource variable of one name are one resource")
	}
	if err := m.Create("", "v", NewVar(tensor.Float, "v")); status.CodeOf(err) != status.AlreadyExists {
		t.Errorf("create over an existing name: %v", err)
	}
	if err := m.Delete("", "v", VarKind); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Lookup("", "v", VarKind); !strings.Contains(err.Error(), "Resource localhost/v/N10tensorflow3VarE does not exist.") {
		t.Errorf("lookup after delete: %v", err)
	}
	if err := m.Delete("", "v", VarKind); status.CodeOf(err) != status.NotFound {
		t.Errorf("second delete: %v", err)
	}
	if m.AnonymousName("x") == m.AnonymousName("x") {
		t.Error("anonymous names repeat")
	}
}

// TestHandleRoundTrip: a handle survives its ResourceHandleProto bytes.
func TestHandleRoundTrip(t *testing.T) {
	h := Handle{Container: "c", Name: "n", Kind: VarKind, DType: tensor.Double, Shape: tensor.KnownShape(tensor.Shape{2, 3})}
	got, err := FromTensor(h.Tensor())
	if err != nil {
		t.Fatal(err)
	}
	if got.Container != "c" || got.Name != "n" || got.Kind != VarKind || got.DType != tensor.Double || !got.Shape.Known {
		t.Errorf("round trip: %+v", got)
	}
	if _, err := FromTensor(tensor.FromStrings(nil, []string{"x"})); status.CodeOf(err) != status.InvalidArgument {
		t.Errorf("a string tensor as a handle: %v", err)
	}
}

// TestUpdatesSerialise: concurrent read-modify-writes lose no update and
// readers only ever see published values (run with -race).
func TestUpdatesSerialise(t *testing.T) {
	v := NewVar(tensor.Int64, "v")
	v.Update(func(*tensor.Tensor) (*tensor.Tensor, error) {
		return tensor.FromI64(tensor.Shape{4}, make([]int64, 4)), nil
	})
	var wg sync.WaitGroup
	const writers, adds = 8, 200
	for w := 0; w < writers; w++ {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := 0; i < adds; i++ {
				v.Update(func(old *tensor.Tensor) (*tensor.Tensor, error) {
					n := tensor.New(tensor.Int64, old.Shape)
					for j, x := range old.I64() {
						n.I64()[j] = x + 1
					}
					return n, nil
				})
			}
		}()
		go func() {
			defer wg.Done()
			for i := 0; i < adds; i++ {
				x := v.Value().I64()
				if x[0] != x[3] {
					t.Errorf("torn value %v", x)
					return
				}
			}
		}()
	}
	wg.Wait()
	if got := v.Value().I64()[2]; got != writers*adds {
		t.Errorf("after %d adds: %d", writers*adds, got)
	}
}
