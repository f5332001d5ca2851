/*
 * pace: wakeups at a pace (e2e/keepup_test.go), as in issue 41: N times
 * sched_yield() then a 100 µs nanosleep, each sleep ended by a timer
 * wakeup; named "pace". Prints the nanoseconds the N took.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <time.h>

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 20000;
	struct timespec t0, t1, d = {0, 100000};
	prctl(PR_SET_NAME, "pace");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (long i = 0; i < n; i++) {
		sched_yield();
		nanosleep(&d, NULL);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("paced %ld %lld\n", n, (long long)(t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec));
	return 0;
}
