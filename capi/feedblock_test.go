package main

import (
	"runtime"
	"testing"
	"weak"

	"mstream/graph"
	"mstream/session"
	"mstream/tensor"
)

// TestFeedBlockReusable: a Run's feed block goes back for the next Run
// when it is small, or when that Run filled at least half of it (large
// feeds Run after Run reuse their block: before, a block above 4 MiB was
// made and zeroed anew every Run, and the heap it grew was fresh pages);
// a large block a Run used little of is left to the collector, so that
// one large feed does not stay with a session fed small ones.
func TestFeedBlockReusable(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		capacity, used int
		want           bool
	}{
		{0, 0, true},
		{mib, 64, true},
		{maxFeedBlock, 0, true},
		{8 * mib, 8 * mib, true},    // a batch of 256 sequences, Run after Run
		{64 * mib, 33 * mib, true},  // more than half used
		{64 * mib, 32 * mib, true},  // half
		{64 * mib, 31 * mib, false}, // less than half
		{8 * mib, 64, false},        // large feeds once, then small ones
	} {
		b := &feedBlock{buf: make([]byte, 0, c.capacity), used: c.used}
		if got := b.reusable(); got != c.want {
			t.Errorf("block of %d bytes, %d used: reusable %v, want %v", c.capacity, c.used, got, c.want)
		}
	}
}

// TestDeletedSessionCollected: a session whose Run kept its feed block
// for the next Run is unreachable once deleted, at the first collection.
// With the blocks in a sync.Pool field of the session's sessionObj, the
// runtime's list of pools reached the session one collection longer, and with it its constants and allocator
// regions: a C client that made sessions one after another (import,
// session, three Runs, delete: /tmp/rv25a/c/sessleak.c) grew its live
// heap from cycle to cycle, RSS 117 -> 523 MB over 800 sessions.
func TestDeletedSessionCollected(t *testing.T) {
	gd, err := graph.ParseTextGraphDef([]byte(`node { name: 'x' op: 'Placeholder' attr { key: 'dtype' value { type: DT_FLOAT } } }
node { name: 'c' op: 'Const' attr { key: 'dtype' value { type: DT_FLOAT } }
  attr { key: 'value' value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 2 } } float_val: 0.5 float_val: -2 } } } }
node { name: 'y' op: 'Mul' input: 'x' input: 'c' attr { key: 'T' value { type: DT_FLOAT } } }`))
	if err != nil {
		t.Fatal(err)
	}
	g := graph.New()
	if _, err := g.Import(gd, nil); err != nil {
		t.Fatal(err)
	}
	sess, err := session.New(g, &session.Options{Env: map[string]string{}})
	if err != nil {
		t.Fatal(err)
	}
	so := &sessionObj{s: sess} // as msNewSession
	// A Run as msSessionRun makes it: the feed copied into a block, which
	// the session keeps once the Run has succeeded.
	blk := takeFeedBlock()
	x := tensor.FromF32(tensor.Shape{2}, []float32{3, 4})
	feeds := []session.Feed{{Output: graph.Output{Node: g.Lookup("x")}, Tensor: x}}
	out, _, err := sess.Run(nil, feeds, []graph.Output{{Node: g.Lookup("y")}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := out[0].F32(); got[0] != 1.5 || got[1] != -8 {
		t.Fatalf("y = %v, want [1.5 -8]", got)
	}
	keepFeedBlock(blk)
	gone := weak.Make(so.s)
	if err := so.s.Close(); err != nil { // as msDeleteSession
		t.Fatal(err)
	}
	so, sess, blk = nil, nil, nil
	runtime.GC()
	if gone.Value() != nil {
		t.Fatal("a deleted session is still reachable after a collection")
	}
}
