package resource

import (
	"sync"

	"mstream/tensor"
)

// TableKind is TF's type name of a lookup table resource
// (tensorflow::lookup::LookupInterface).
const TableKind = "N10tensorflow6lookup15LookupInterfaceE"

// Table is a lookup table of scalar keys (HashTableV2, MutableHashTableV2,
// MutableHashTableOfTensorsV2). A value is one element, or a tensor of
// ValueShape (MutableHashTableOfTensorsV2). Keys and values are kept as
// bytes (a string's, a number's in host order, a value tensor's elements
// packed as the kernels that read the table pack them), so one type
// serves every dtype pair and value shape. A HashTable is written once, by its
// initializer; a mutable one by every insert. Readers and writers take mu
// (a table's operations are short and whole: TF locks them the same way).
type Table struct {
	KeyType, ValueType tensor.DType
	// ValueShape is the shape of one value: [] but for a table of tensors.
	ValueShape tensor.Shape
	// Mutable says inserts are allowed (MutableHashTableV2); otherwise
	// the table is filled once by an initializer and Initialized is set.
	Mutable bool

	mu          sync.RWMutex
	m           map[string][]byte
	initialized bool
}

// NewTable returns an empty table whose values have shape vs.
func NewTable(k, v tensor.DType, vs tensor.Shape, mutable bool) *Table {
	return &Table{KeyType: k, ValueType: v, ValueShape: vs, Mutable: mutable, m: map[string][]byte{}}
}

// Kind implements Resource.
func (*Table) Kind() string { return TableKind }

// Initialized reports whether an initializer filled the table (always
// true for a mutable table).
func (t *Table) Initialized() bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.Mutable || t.initialized
}

// Size is the number of entries.
func (t *Table) Size() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.m)
}

// Find returns, for each key, its value and whether it was there.
func (t *Table) Find(keys [][]byte, f func(i int, v []byte, ok bool)) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	for i, k := range keys {
		v, ok := t.m[string(k)]
		f(i, v, ok)
	}
}

// Insert sets keys[i] to values[i]; with replace the table's old content
// goes first (LookupTableImportV2). init marks a once-only table filled.
func (t *Table) Insert(keys, values [][]byte, replace, init bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if replace {
		t.m = make(map[string][]byte, len(keys))
	}
	for i, k := range keys {
		t.m[string(k)] = values[i]
	}
	if init {
		t.initialized = true
	}
}

// Remove deletes keys (absent ones are no error).
func (t *Table) Remove(keys [][]byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, k := range keys {
		delete(t.m, string(k))
	}
}

// Snapshot returns the entries, in no particular order (TF's is its hash
// map's).
func (t *Table) Snapshot() (keys, values [][]byte) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	for k, v := range t.m {
		keys = append(keys, []byte(k))
		values = append(values, v)
	}
	return keys, values
}

// Initialize fills a once-only table. When an initializer filled it
// already, nothing changes and same reports whether the entry counts agree
// (TF's AreEntriesSame: a second, equal initialization succeeds).
func (t *Table) Initialize(keys, values [][]byte) (again, same bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.initialized {
		return true, len(t.m) == len(keys)
	}
	for i, k := range keys {
		t.m[string(k)] = values[i]
	}
	t.initialized = true
	return false, true
}
