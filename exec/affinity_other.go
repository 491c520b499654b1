//go:build !linux

package exec

import "time"

// workerThread: a worker owns its thread on Linux only
// (affinity_linux.go).
type workerThread struct {
	can, owned bool
	ranFrom    time.Time
}

func newWorkerThread(int) workerThread              { return workerThread{} }
func (w *workerThread) own()                        {}
func (w *workerThread) release()                    {}
func (w *workerThread) moves(int32, time.Time) bool { return false }
func (w *workerThread) overdue(time.Time) bool      { return false }
func (w *workerThread) keepOff(int32, time.Time)    {}
