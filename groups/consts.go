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
// Shared (TF_SEGMENT_OWN_CONST).
type ConstStore struct {
	Name   string
	Shared bool

	mu    sync.Mutex
	m     map[any]*Const
	bytes int64
}

// Get returns the constant for key, calling make to materialise it the
// first time. make runs under the store's lock, so each constant is
// materialised once however many runs ask at once; a failed make is not
// remembered.
func (c *ConstStore) Get(key any, make func() (*Const, error)) (*Const, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if k := c.m[key]; k != nil {
		return k, nil
	}
	k, err := make()
	if err != nil {
		return nil, err
	}
	if c.m == nil {
		c.m = map[any]*Const{}
	}
	c.m[key] = k
	c.bytes += k.Bytes
	return k, nil
}

// Stats returns the number of constants and their bytes.
func (c *ConstStore) Stats() (count int, bytes int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m), c.bytes
}
