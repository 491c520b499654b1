package session

import (
	"testing"

	"mstream/proto/tfpb"
)

// TestLoopModeStats: MS_SessionStats counts a session's host steps by the
// loop mode they ran, every step once (a plan's gate runs loopsEager until
// its first probe, 1024 steps on); a session whose intra-op pool has one
// thread reports none.
func TestLoopModeStats(t *testing.T) {
	const runs = 20
	st := statsOf(t, loadModel(t), map[string]string{}, &tfpb.ConfigProto{IntraOpParallelismThreads: 2}, runs)
	lm := st.LoopModes
	if lm == nil || lm.Eager != runs || lm.Split != 0 || lm.Whole != 0 {
		t.Fatalf("intra_op_loop_modes after %d runs: %+v, want all %d eager", runs, lm, runs)
	}
	if st := statsOf(t, loadModel(t), map[string]string{}, &tfpb.ConfigProto{IntraOpParallelismThreads: 1}, runs); st.LoopModes != nil {
		t.Fatalf("intra_op_loop_modes with one intra-op thread: %+v, want none", st.LoopModes)
	}
}
