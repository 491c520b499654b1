package exec

// cpuRelax is one PAUSE: a spinning thread's hint to the core that it
// waits, so that it takes less from a thread sharing the core (an SMT
// sibling: a VM's two vCPUs may be one core's two threads) and leaves
// the spin without the pipeline's flush on a memory-order violation.
// About 25 ns on this project's AMD EPYC build machine.
func cpuRelax()

func cpuidLeaf7ECX() uint32
func rdpid() uint32
