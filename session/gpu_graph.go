package session

import "mstream/exec"

// openGraphs makes the session's CUDA graph cache when MSTREAM_CUDA_GRAPH
// is on (the default) and the session has a GPU; gpuGroups hands it to one-group GPU
// steps, which are replayed from captured graphs where they can be
// (exec.GraphCache says which).
func (st *state) openGraphs() {
	if !st.env.CUDAGraph || st.gpu < 0 {
		return
	}
	st.graphs = exec.NewGraphCache(func(format string, args ...any) { st.logf(0, format, args...) })
}

// closeGraphs destroys the graphs and frees what they hold, before the
// groups' allocators and streams close. The cache stays for Stats.
func (st *state) closeGraphs() {
	if st.graphs == nil {
		return
	}
	if err := st.graphs.Close(); err != nil {
		st.logf(1, "CUDA graphs: releasing them at session close: %v", err)
	}
}

// graphStats is the cache's counters, nil when graphs are off.
func (st *state) graphStats() *exec.GraphStats {
	if st.graphs == nil {
		return nil
	}
	gs := st.graphs.Stats()
	return &gs
}
