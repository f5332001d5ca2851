/*
 * load: the fixed workload of the kernel cost benchmark (e2e/cost_test.go),
 * in C so that nothing but the workload runs: no runtime threads, timers
 * or garbage collector adding wakeups and system calls of their own (the
 * Go version made 44% more wakeups than its ping-pong, and more the slower
 * it ran).
 *
 *   load SYSCALLS WAKEUPS OPENS
 *
 * makes SYSCALLS getppid calls, WAKEUPS round trips of a byte between this
 * process and a child over two pipes (each one two wakeups and, on one
 * CPU, two context switches), and OPENS opens and closes of /dev/null, and
 * prints the nanoseconds (CLOCK_MONOTONIC) each part took:
 *
 *   syscalls N NS wakeups N NS opens N NS
 *
 * The child is forked before the clock starts and the parts are timed
 * apart, so each time holds its part's calls only. Both run SCHED_FIFO at
 * one priority: a task woken does not preempt its waker, which goes on to
 * block in its read, so that every message wakes a sleeping task — two
 * wakeups and two switches a round trip, however slow tracing makes them
 * (under the fair scheduler, the woken task preempted its waker now and
 * then, depending on the time each took, and the count of wakeups changed
 * with what was traced) — and nothing else runs during a part.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long long now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	long calls = 50000, wakeups = 2000, opens = 5000;
	if (argc > 3) {
		calls = atol(argv[1]);
		wakeups = atol(argv[2]);
		opens = atol(argv[3]);
	}
	struct sched_param sp = {.sched_priority = 10};
	if (sched_setscheduler(0, SCHED_FIFO, &sp)) {
		perror("sched_setscheduler");
		return 1;
	}
	long long t0 = now();
	for (long i = 0; i < calls; i++)
		syscall(SYS_getppid);
	long long t1 = now();

	int ab[2], ba[2];
	if (pipe(ab) || pipe(ba)) {
		perror("pipe");
		return 1;
	}
	pid_t child = fork();
	if (child < 0) {
		perror("fork");
		return 1;
	}
	if (child == 0) {
		char c;
		close(ab[1]);
		close(ba[0]);
		while (read(ab[0], &c, 1) == 1)
			if (write(ba[1], &c, 1) != 1)
				_exit(1);
		_exit(0);
	}
	close(ab[0]);
	close(ba[1]);
	char c = 0;
	/* One round trip first: the child is running and blocked in read. */
	if (write(ab[1], &c, 1) != 1 || read(ba[0], &c, 1) != 1) {
		perror("ping");
		return 1;
	}
	long long t2 = now();
	for (long i = 0; i < wakeups; i++) {
		if (write(ab[1], &c, 1) != 1 || read(ba[0], &c, 1) != 1) {
			perror("ping");
			return 1;
		}
	}
	long long t3 = now();
	close(ab[1]);
	waitpid(child, NULL, 0);

	long long t4 = now();
	for (long i = 0; i < opens; i++) {
		int fd = open("/dev/null", O_RDONLY);
		if (fd < 0) {
			perror("open");
			return 1;
		}
		close(fd);
	}
	long long t5 = now();
	printf("syscalls %ld %lld wakeups %ld %lld opens %ld %lld\n", calls, t1 - t0, wakeups, t3 - t2, opens, t5 - t4);
	return 0;
}
