/*
 * rename: a task renamed between its wakeup and its switch-in
 * (e2e/rename_test.go, docs/kernels.md).
 *
 *   rename N
 *
 * Thread A, named "a", blocks reading a pipe. N times: the main thread
 * writes a byte to that pipe (sched_waking of A: comm "a"), writes "x"
 * to /proc/self/task/A/comm while A waits to run, and blocks on a pipe
 * of its own, so that A is switched in named "x" (sched_switch's
 * next_comm "x"); A names itself "a" again, writes a byte back and
 * blocks. Both run SCHED_FIFO at one priority on one CPU: the thread woken
 * does not preempt its waker, so the rename always comes between.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static int ab[2], ba[2];
static volatile pid_t tid;

static void *a(void *arg)
{
	char c;
	(void)arg;
	prctl(PR_SET_NAME, "a");
	tid = syscall(SYS_gettid);
	while (read(ab[0], &c, 1) == 1) {
		prctl(PR_SET_NAME, "a");
		if (write(ba[1], &c, 1) != 1)
			break;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 100;
	struct sched_param sp = {.sched_priority = 10};
	if (sched_setscheduler(0, SCHED_FIFO, &sp)) {
		perror("sched_setscheduler");
		return 1;
	}
	if (pipe(ab) || pipe(ba)) {
		perror("pipe");
		return 1;
	}
	pthread_t th;
	if (pthread_create(&th, NULL, a, NULL)) {
		perror("pthread_create");
		return 1;
	}
	while (!tid)
		sched_yield();
	usleep(10000); /* A blocks in its read */
	char path[64], c = 0;
	snprintf(path, sizeof path, "/proc/self/task/%d/comm", (int)tid);
	for (long i = 0; i < n; i++) {
		if (write(ab[1], &c, 1) != 1)
			return 1;
		int fd = open(path, O_WRONLY);
		if (fd < 0 || write(fd, "x", 1) != 1) {
			perror(path);
			return 1;
		}
		close(fd);
		if (read(ba[0], &c, 1) != 1)
			return 1;
	}
	printf("renamed %ld\n", n);
	return 0;
}
