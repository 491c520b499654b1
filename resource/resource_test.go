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

// TestUpdateAllHammer has writers update two variables together, named in
// both orders and once twice, while readers check that the two always
// move together: no deadlock, no lost update, no torn pair.
func TestUpdateAllHammer(t *testing.T) {
	a, b := NewVar(tensor.Float, "a"), NewVar(tensor.Float, "b")
	zero := func() *tensor.Tensor { return tensor.New(tensor.Float, tensor.Shape{}) }
	a.Update(func(*tensor.Tensor) (*tensor.Tensor, error) { return zero(), nil })
	b.Update(func(*tensor.Tensor) (*tensor.Tensor, error) { return zero(), nil })
	inc := func(x *tensor.Tensor) *tensor.Tensor {
		y := zero()
		y.F32()[0] = x.F32()[0] + 1
		return y
	}
	const writers, steps = 8, 200
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		vs := [][]*Var{{a, b}, {b, a}, {a, b, a}}[w%3]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < steps; i++ {
				_, err := UpdateAll(vs, func(old []*tensor.Tensor) ([]*tensor.Tensor, error) {
					if old[0].F32()[0] != old[1].F32()[0] {
						t.Errorf("torn pair under the locks: %v %v", old[0].F32()[0], old[1].F32()[0])
					}
					nv := []*tensor.Tensor{inc(old[0]), inc(old[1])}
					if len(old) == 3 {
						nv = append(nv, nv[0])
					}
					return nv, nil
				})
				if err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	if x, y := a.Value().F32()[0], b.Value().F32()[0]; x != writers*steps || y != writers*steps {
		t.Errorf("a=%v b=%v after %d updates", x, y, writers*steps)
	}
}

type closing struct{ closed *int }

func (closing) Kind() string { return "closing" }
func (c closing) Close()     { *c.closed++ }

// TestManagerClose: Close empties the manager and closes each Closer once.
func TestManagerClose(t *testing.T) {
	m := NewManager()
	n := 0
	m.Create("", "a", closing{&n})
	m.Create("", "b", closing{&n})
	m.Create("", "v", NewVar(tensor.Float, "v"))
	m.Close()
	if n != 2 || m.Len() != 0 {
		t.Errorf("closed %d, %d left", n, m.Len())
	}
}
