//go:build libfuzzer

package main

import (
	"os"
	"runtime/pprof"
	"time"
)

// In the fuzz harness's build (the libfuzzer tag, test/fuzz/run.sh),
// MSTREAM_FUZZ_HEAP_PROFILE=path writes the Go heap profile to path every
// 5 s, so a run whose RSS grows can be read with
// `go tool pprof -sample_index=inuse_space -top build/fuzz/graph_fuzz_cov path`.
// The profile is as of the last collection the run made itself: forcing
// one here would change what a leak that lasts a collection cycle keeps
// (a sync.Pool in each exec.Plan kept every session of a cycle alive, and
// showed only between the run's own collections).
func init() {
	path := os.Getenv("MSTREAM_FUZZ_HEAP_PROFILE")
	if path == "" {
		return
	}
	go func() {
		for {
			time.Sleep(5 * time.Second)
			f, err := os.Create(path)
			if err != nil {
				return
			}
			_ = pprof.WriteHeapProfile(f)
			f.Close()
		}
	}()
}
