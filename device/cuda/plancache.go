package cuda

import "container/list"

// maxLtPlans bounds a stream's cuBLASLt plans (a plan is a few hundred
// bytes of descriptors in cuBLASLt's memory): a workload of a few dozen
// GEMM shapes keeps them all, and one whose shapes churn (a dynamic batch
// dimension) evicts the least recently used instead of growing.
const maxLtPlans = 256

// planCache is a bounded least-recently-used map; evict is called with
// each value it drops (and with every value at clear). It is not safe for
// concurrent use: its owner's lock guards it (Stream.mu for cuBLASLt
// plans).
type planCache[K comparable, V any] struct {
	max   int
	m     map[K]*list.Element
	order list.List // of planEntry, most recently used first
	evict func(V)
}

type planEntry[K comparable, V any] struct {
	k K
	v V
}

func newPlanCache[K comparable, V any](max int, evict func(V)) *planCache[K, V] {
	return &planCache[K, V]{max: max, m: map[K]*list.Element{}, evict: evict}
}

// get returns k's value and marks it the most recently used.
func (c *planCache[K, V]) get(k K) (V, bool) {
	e, ok := c.m[k]
	if !ok {
		var zero V
		return zero, false
	}
	c.order.MoveToFront(e)
	return e.Value.(planEntry[K, V]).v, true
}

// put adds k (which must be absent), evicting the least recently used
// entries past the bound.
func (c *planCache[K, V]) put(k K, v V) {
	c.m[k] = c.order.PushFront(planEntry[K, V]{k, v})
	for c.order.Len() > c.max {
		e := c.order.Back()
		pe := c.order.Remove(e).(planEntry[K, V])
		delete(c.m, pe.k)
		c.evict(pe.v)
	}
}

// len is the number of entries held.
func (c *planCache[K, V]) len() int { return c.order.Len() }

// clear evicts every entry.
func (c *planCache[K, V]) clear() {
	for e := c.order.Front(); e != nil; e = e.Next() {
		c.evict(e.Value.(planEntry[K, V]).v)
	}
	c.m = map[K]*list.Element{}
	c.order.Init()
}
