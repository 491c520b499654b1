package kernels

import (
	"sync"

	"mstream/status"
)

// Step is what lives for one step only (TF's per-step resource container):
// the temporary variables of TemporaryVariable, by name. The executor makes
// one per Run and hands it to every host kernel of that Run through
// Context.Step; it goes away with the step, so nothing a step leaves here
// outlives it (TF deletes its step container at the end of the step).
// The zero value is ready to use.
type Step struct {
	mu sync.Mutex
	m  map[string]any
}

// Create adds v under name; ALREADY_EXISTS when the step has one.
func (s *Step) Create(name string, v any) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.m[name]; ok {
		return status.Errorf(status.AlreadyExists, "Resource %s already exists in this step", name)
	}
	if s.m == nil {
		s.m = map[string]any{}
	}
	s.m[name] = v
	return nil
}

// Lookup returns what name holds, if anything.
func (s *Step) Lookup(name string) (any, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.m[name]
	return v, ok
}

// Delete removes name; NOT_FOUND when the step has none.
func (s *Step) Delete(name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.m[name]; !ok {
		return status.Errorf(status.NotFound, "Resource %s does not exist in this step", name)
	}
	delete(s.m, name)
	return nil
}

// Reset drops everything the step holds, for a step state that is reused
// by the next Run.
func (s *Step) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.m)
}
