/* corelat: the round trip of a cache line between CPUs 0 and 1, in ns.
 *
 * Two threads, pinned one to each CPU, hand a counter back and forth
 * (each waits for the other's increment, then increments it) ROUNDS
 * times; the time over ROUNDS is one round trip. vs_tf.sh reads it
 * before and after each side's run: on the 2-vCPU build VM it is 50-70 ns
 * while the hypervisor keeps the vCPUs near each other and 300-350 ns while
 * it keeps them far apart, which changes what a second thread is worth
 * (exec/gate.go). Prints 0 on a machine with one CPU. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#define ROUNDS 100000

static _Atomic long turn __attribute__((aligned(128)));

static int pin(int cpu) {
	cpu_set_t s;
	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	return pthread_setaffinity_np(pthread_self(), sizeof s, &s);
}

static void *other(void *arg) {
	(void)arg;
	pin(1);
	for (long i = 0; i < ROUNDS; i++) {
		while (atomic_load_explicit(&turn, memory_order_acquire) != 2 * i + 1)
			;
		atomic_store_explicit(&turn, 2 * i + 2, memory_order_release);
	}
	return 0;
}

int main(void) {
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2 || pin(0) != 0) {
		printf("0\n");
		return 0;
	}
	pthread_t t;
	if (pthread_create(&t, 0, other, 0) != 0) {
		printf("0\n");
		return 0;
	}
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (long i = 0; i < ROUNDS; i++) {
		atomic_store_explicit(&turn, 2 * i + 1, memory_order_release);
		while (atomic_load_explicit(&turn, memory_order_acquire) != 2 * i + 2)
			;
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	pthread_join(t, 0);
	printf("%.0f\n", ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / ROUNDS);
	return 0;
}
