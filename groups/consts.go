package groups

import (
	"sync"

	"mstream/bfc"
	"mstream/tensor"
)

// Const is a constant materialised in device memory.
type Const struct {
	// Value views the device copy (on a host-addressable device) and is
	// what kernels read.
	Value *tensor.Tensor
	Addr  uint64
	Bytes int64
	// Alloc holds the copy until the Set closes.
	Alloc *bfc.Allocator
}

// ConstStore holds the constants of one group, or of one device when
// Shared (TF_SEGMENT_OWN_CONST). A constant is looked up on every step
// that reads it, from every launching goroutine: a constant already
// there is read without a lock (sync.Map's read path), the lock orders
// only the first loads.
type ConstStore struct {
	Name   string
	Shared bool

	m     sync.Map // key -> *Const
	mu    sync.Mutex
	n     int
	bytes int64
}

// Get returns the constant for key, calling make to materialise it the
// first time. make runs under the store's lock, so each constant is
// materialised once however many runs ask at once; a failed make is not
// remembered.
func (c *ConstStore) Get(key any, make func() (*Const, error)) (*Const, error) {
	if k, ok := c.m.Load(key); ok {
		return k.(*Const), nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if k, ok := c.m.Load(key); ok {
		return k.(*Const), nil
	}
	k, err := make()
	if err != nil {
		return nil, err
	}
	c.m.Store(key, k)
	c.n++
	c.bytes += k.Bytes
	return k, nil
}

// Stats returns the number of constants and their bytes.
func (c *ConstStore) Stats() (count int, bytes int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n, c.bytes
}
