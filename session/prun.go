package session

import (
	"fmt"

	"mstream/graph"
	"mstream/status"
	"mstream/tensor"
)

// partialRun is the state of one PRunSetup handle. Each PRun call runs the
// part of the graph its fetches need, with every value fed so far; targets
// run with the call that completes the last fetch. The graphs mstream runs
// are stateless, so recomputing a shared prefix gives the same values TF
// would have kept.
type partialRun struct {
	feeds    map[graph.Output]bool
	fetches  map[graph.Output]bool
	targets  []*graph.Node
	fed      map[graph.Output]*tensor.Tensor
	fetched  map[graph.Output]bool
	finished bool
}

func (s *Session) prunSetup(feeds, fetches []graph.Output, targets []*graph.Node) (string, error) {
	// As a Run: the plan it caches must not outlive Close's closePlans.
	s.impl.runMu.RLock()
	defer s.impl.runMu.RUnlock()
	if err := s.checkOpen(); err != nil {
		return "", err
	}
	if err := s.checkNodes(feeds, fetches, targets); err != nil {
		return "", err
	}
	pr := &partialRun{
		feeds:   map[graph.Output]bool{},
		fetches: map[graph.Output]bool{},
		targets: targets,
		fed:     map[graph.Output]*tensor.Tensor{},
		fetched: map[graph.Output]bool{},
	}
	for _, f := range feeds {
		pr.feeds[f] = true
	}
	for _, f := range fetches {
		pr.fetches[f] = true
	}
	// Build the full plan once now so that errors (no kernel, a cycle)
	// surface at setup, as TF reports them.
	if _, err := s.planFor(feeds, fetches, targets); err != nil {
		return "", err
	}
	h := fmt.Sprintf("prun-%d", s.impl.prunSeq.Add(1))
	s.impl.prunMu.Lock()
	s.impl.pruns[h] = pr
	s.impl.prunMu.Unlock()
	return h, nil
}

func (s *Session) prun(handle string, feeds []Feed, fetches []graph.Output, targets []*graph.Node) ([]*tensor.Tensor, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	st := s.impl
	st.prunMu.Lock()
	pr := st.pruns[handle]
	if pr == nil {
		st.prunMu.Unlock()
		return nil, status.InvalidArg("partial run handle %q is not valid (never set up, or already finished)", handle)
	}
	for _, f := range feeds {
		switch {
		case !pr.feeds[f.Output]:
			st.prunMu.Unlock()
			return nil, status.InvalidArg("feed '%s' was not declared in the partial run setup", f.Output)
		case pr.fed[f.Output] != nil:
			st.prunMu.Unlock()
			return nil, status.InvalidArg("feed '%s' has already been fed in this partial run", f.Output)
		}
	}
	for _, f := range fetches {
		switch {
		case !pr.fetches[f]:
			st.prunMu.Unlock()
			return nil, status.InvalidArg("fetch '%s' was not declared in the partial run setup", f)
		case pr.fetched[f]:
			st.prunMu.Unlock()
			return nil, status.InvalidArg("fetch '%s' has already been fetched in this partial run", f)
		}
	}
	all := make([]Feed, 0, len(pr.fed)+len(feeds))
	for o, t := range pr.fed {
		all = append(all, Feed{o, t})
	}
	for _, f := range feeds {
		all = append(all, Feed{f.Output, f.Tensor.Clone()})
	}
	last := len(pr.fetched)+len(fetches) == len(pr.fetches)
	st.prunMu.Unlock()

	var runTargets []*graph.Node
	if last {
		runTargets = pr.targets
	}
	runTargets = append(runTargets, targets...)
	out, _, err := s.run(nil, all, fetches, runTargets, nil)
	if err != nil {
		return nil, err
	}
	st.prunMu.Lock()
	for _, f := range feeds {
		pr.fed[f.Output] = f.Tensor.Clone()
	}
	for _, f := range fetches {
		pr.fetched[f] = true
	}
	if last {
		delete(st.pruns, handle)
	}
	st.prunMu.Unlock()
	return out, nil
}
