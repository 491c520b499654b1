package resource

import (
	"fmt"
	"hash/fnv"
	"sync"

	"mstream/status"
)

// DefaultContainer is the container of a resource whose op names none
// (TF's ResourceMgr default_container).
const DefaultContainer = "localhost"

// AnonymousName is TF's ResourceHandle::ANONYMOUS_NAME: a VarHandleOp with
// this shared_name makes a new variable on every call.
const AnonymousName = "cd2c89b7-88b7-44c8-ad83-06c2a9158347"

// Resource is anything a Manager holds.
type Resource interface {
	// Kind is TF's type name of the resource ("N10tensorflow3VarE"), part
	// of its key and of its handle.
	Kind() string
}

type key struct{ container, name, kind string }

// Manager holds one session's resources by (container, name, kind).
type Manager struct {
	// mu is read-locked by lookups: every variable read and update of
	// every step looks its variable up, from several lanes at once.
	mu sync.RWMutex
	m  map[key]Resource
	// containers lists every container a resource was ever made in: as
	// in TF, a container outlives its last resource.
	containers map[string]bool
	anon       int64 // names of anonymous resources
}

// NewManager returns an empty manager.
func NewManager() *Manager { return &Manager{m: map[key]Resource{}, containers: map[string]bool{}} }

func container(c string) string {
	if c == "" {
		return DefaultContainer
	}
	return c
}

// LookupOrCreate returns the resource at (container, name, kind), making it
// with create when there is none.
func (m *Manager) LookupOrCreate(c, name, kind string, create func() Resource) Resource {
	k := key{container(c), name, kind}
	m.mu.RLock()
	r, ok := m.m[k]
	m.mu.RUnlock()
	if ok {
		return r
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if r, ok := m.m[k]; ok {
		return r
	}
	r = create()
	m.m[k] = r
	m.containers[k.container] = true
	return r
}

// Create adds r at (container, name), failing with ALREADY_EXISTS as TF's
// ResourceMgr::Create does when the name is taken.
func (m *Manager) Create(c, name string, r Resource) error {
	k := key{container(c), name, r.Kind()}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.m[k]; ok {
		return status.Errorf(status.AlreadyExists, "Resource %s/%s/%s already exists", k.container, name, k.kind)
	}
	m.m[k] = r
	m.containers[k.container] = true
	return nil
}

// AnonymousName returns a name no other resource of m has (TF names
// anonymous resources by a counter).
func (m *Manager) AnonymousName(base string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.anon++
	return fmt.Sprintf("_AnonymousVar%d_%s", m.anon, base)
}

// Lookup returns the resource at (container, name, kind); NOT_FOUND with
// TF's ResourceMgr text when there is none.
func (m *Manager) Lookup(c, name, kind string) (Resource, error) {
	c = container(c)
	m.mu.RLock()
	defer m.mu.RUnlock()
	if r, ok := m.m[key{c, name, kind}]; ok {
		return r, nil
	}
	if !m.hasContainerLocked(c) {
		return nil, status.Errorf(status.NotFound, "Container %s does not exist. (Could not find resource: %s/%s)", c, c, name)
	}
	return nil, status.Errorf(status.NotFound, "Resource %s/%s/%s does not exist.", c, name, kind)
}

func (m *Manager) hasContainerLocked(c string) bool { return m.containers[c] }

// Delete removes the resource at (container, name, kind); NOT_FOUND as
// Lookup when there is none. A kernel still holding it keeps a working
// object; a later lookup by name finds nothing.
func (m *Manager) Delete(c, name, kind string) error {
	c = container(c)
	m.mu.Lock()
	defer m.mu.Unlock()
	k := key{c, name, kind}
	if _, ok := m.m[k]; !ok {
		if !m.hasContainerLocked(c) {
			return status.Errorf(status.NotFound, "Container %s does not exist.", c)
		}
		return status.Errorf(status.NotFound, "Resource %s/%s/%s does not exist.", c, name, kind)
	}
	delete(m.m, k)
	return nil
}

// Closer is a resource that holds more than memory (an iterator's
// prefetch goroutine, an open file): Close releases it.
type Closer interface {
	Close()
}

// Close empties the manager and closes every resource that is a Closer:
// the session that owned it is over, as TF's ResourceMgr dies with its
// session's devices.
func (m *Manager) Close() {
	m.mu.Lock()
	old := m.m
	m.m = map[key]Resource{}
	m.mu.Unlock()
	for _, r := range old {
		if c, ok := r.(Closer); ok {
			c.Close()
		}
	}
}

// Len is the number of resources held (tests).
func (m *Manager) Len() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.m)
}

// hashCode stands for TF's TypeIndex hash code of a resource kind in a
// handle: TF's is its compiler's typeid hash, which no client can rely on.
func hashCode(kind string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(kind))
	return h.Sum64()
}
