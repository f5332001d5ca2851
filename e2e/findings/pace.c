/*
 * pace: events at a set rate, for the stream engine's rates
 * (stream-rate.sh, FINDINGS.md "The stream engine: cost and rates").
 *
 *   pace syscalls RATE SECONDS [PROCS]
 *   pace wakeups RATE SECONDS [PROCS]
 *
 * makes RATE getppid calls a second, or RATE wakeups a second (round
 * trips of a byte between a process and its child over two pipes: two
 * wakeups each), for SECONDS, in PROCS processes (default 1) sharing the
 * rate. Each process works in ticks of 10 ms: a tick's share of the
 * calls, then a sleep to the next tick (none when it is behind, so the
 * rate it reaches is what the machine allows). One process is pace
 * itself (sqlhist -p can name it). At the end each prints
 *
 *   pace KIND rate R did N in S s: A/s
 *
 * with A what it reached. Built statically with the host's gcc:
 * gcc -O2 -static -o pace e2e/findings/pace.c
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define TICK 10000000LL /* ns */

static long long now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void sleep_until(long long t)
{
	struct timespec ts = {.tv_sec = t / 1000000000LL, .tv_nsec = t % 1000000000LL};
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL))
		;
}

/* run makes rate events a second of kind for secs seconds. */
static void run(const char *kind, double rate, double secs)
{
	int wake = strcmp(kind, "wakeups") == 0;
	int ab[2], ba[2];
	pid_t child = -1;
	if (wake) {
		if (pipe(ab) || pipe(ba)) {
			perror("pipe");
			exit(1);
		}
		child = fork();
		if (child < 0) {
			perror("fork");
			exit(1);
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
	}
	/* A tick's share, with the fraction carried to the next. */
	double per = rate * TICK / 1e9 / (wake ? 2 : 1), owed = 0;
	long long start = now(), end = start + (long long)(secs * 1e9), next = start;
	long done = 0;
	char c = 0;
	while (now() < end) {
		owed += per;
		long n = (long)owed;
		owed -= n;
		long i;
		for (i = 0; i < n; i++) {
			/* A tick's share may take longer than the run. */
			if ((i & 1023) == 1023 && now() >= end)
				break;
			if (!wake) {
				syscall(SYS_getppid);
				continue;
			}
			if (write(ab[1], &c, 1) != 1 || read(ba[0], &c, 1) != 1) {
				perror("ping");
				exit(1);
			}
		}
		done += wake ? 2 * i : i;
		next += TICK;
		if (next > now())
			sleep_until(next);
	}
	double took = (now() - start) / 1e9;
	if (wake) {
		close(ab[1]);
		waitpid(child, NULL, 0);
	}
	printf("pace %s rate %.0f did %ld in %.2f s: %.0f/s\n", kind, rate, done, took, done / took);
}

int main(int argc, char **argv)
{
	if (argc < 4 || (strcmp(argv[1], "syscalls") && strcmp(argv[1], "wakeups"))) {
		fprintf(stderr, "usage: pace syscalls|wakeups RATE SECONDS [PROCS]\n");
		return 2;
	}
	double rate = atof(argv[2]), secs = atof(argv[3]);
	int procs = argc > 4 ? atoi(argv[4]) : 1;
	if (procs <= 1) {
		/* In this process: sqlhist -p can name it. */
		run(argv[1], rate, secs);
		return 0;
	}
	for (int i = 0; i < procs; i++) {
		pid_t p = fork();
		if (p < 0) {
			perror("fork");
			return 1;
		}
		if (p == 0) {
			run(argv[1], rate / procs, secs);
			fflush(stdout);
			_exit(0);
		}
	}
	while (wait(NULL) > 0)
		;
	return 0;
}
