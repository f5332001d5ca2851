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
 *   load SYSCALLS WAKEUPS OPENS TRACER [ARGS...]
 *
 * first starts TRACER, a program that reads the events in this machine
 * (sqlhist -r --engine stream), with its stdout on this one's stderr, and
 * waits for the first line of its stderr, which says that it reads (then
 * copied to this one's stderr too). After the last part it sends the
 * tracer's process group SIGINT (as Ctrl-C does: the tracer may be a shell
 * script, the awk engine's), waits for it to exit and prints two more
 * figures:
 *
 *   … stop CPU WALL
 *
 * the CPU time the tracer took from the signal to its exit (with its
 * children's, which it waited for: a script's awk) — reading and
 * computing what it had not read yet, printing, removing its setup — and
 * the nanoseconds that took. The tracer runs in the fair class: on one
 * CPU the SCHED_FIFO parts keep it from running until they are over, so
 * all its reading and computing is counted in CPU. WALL also counts the
 * time the machine was idle meanwhile (waiting for RCU grace periods as
 * the tracer's setup is removed).
 *
 * With LOAD_READY_SYSCALL=NR in the environment, the tracer is taken as
 * reading once it sleeps in system call NR (/proc/PID/syscall), not at a
 * line of its stderr: a libbpf-tools tool, attached when it first sleeps
 * in clock_nanosleep, whose banner is buffered in its stdout. Its stop is
 * then measured as sqlhist's: from the SIGINT to its exit.
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
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
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

/* copy writes what fd has left to this process's stderr. */
static void copy(int fd)
{
	char buf[4096];
	ssize_t n;
	while ((n = read(fd, buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
		if (n > 0 && write(2, buf, n) != n)
			return;
}

/* tracer starts argv[0] with its stdout on stderr and waits for the first
 * line of its stderr; it returns the tracer's pid, and *errfd, the rest of
 * its stderr. */
static pid_t tracer(char **argv, int *errfd)
{
	int p[2];
	if (pipe(p)) {
		perror("pipe");
		exit(1);
	}
	pid_t pid = fork();
	if (pid < 0) {
		perror("fork");
		exit(1);
	}
	if (pid == 0) {
		/* A process group of its own, signalled as Ctrl-C signals
		 * one: a shell script's awk gets the SIGINT too. */
		setpgid(0, 0);
		close(p[0]);
		if (dup2(2, 1) < 0 || dup2(p[1], 2) < 0)
			_exit(1);
		close(p[1]);
		execv(argv[0], argv);
		perror(argv[0]);
		_exit(127);
	}
	setpgid(pid, pid);
	close(p[1]);
	const char *nr = getenv("LOAD_READY_SYSCALL");
	if (nr && *nr) {
		char path[64], buf[64];
		snprintf(path, sizeof path, "/proc/%d/syscall", (int)pid);
		for (int i = 0; i < 1200; i++) {
			FILE *f = fopen(path, "r");
			if (f) {
				int got = fscanf(f, "%63s", buf);
				fclose(f);
				if (got == 1 && strcmp(buf, nr) == 0) {
					*errfd = p[0];
					return pid;
				}
			}
			struct timespec ts = {0, 100000000};
			nanosleep(&ts, NULL);
		}
		fprintf(stderr, "load: %s never slept in system call %s\n", argv[0], nr);
		exit(1);
	}
	char c;
	ssize_t n;
	while ((n = read(p[0], &c, 1)) == 1 || (n < 0 && errno == EINTR)) {
		if (n == 1 && write(2, &c, 1) != 1)
			break;
		if (n == 1 && c == '\n') {
			*errfd = p[0];
			return pid;
		}
	}
	fprintf(stderr, "load: %s ended before it said it reads\n", argv[0]);
	exit(1);
}

/* cpu is the CPU time of the process pid so far, in ns. */
static long long cpu(pid_t pid)
{
	clockid_t id;
	struct timespec ts;
	if (clock_getcpuclockid(pid, &id) || clock_gettime(id, &ts)) {
		perror("the tracer's CPU clock");
		exit(1);
	}
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	long calls = 50000, wakeups = 2000, opens = 5000;
	pid_t tpid = 0;
	int terr = -1;
	/* Started before this process turns SCHED_FIFO: the tracer stays in
	 * the fair class. */
	if (argc > 4)
		tpid = tracer(argv + 4, &terr);
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
	printf("syscalls %ld %lld wakeups %ld %lld opens %ld %lld", calls, t1 - t0, wakeups, t3 - t2, opens, t5 - t4);
	if (tpid > 0) {
		long long c0 = cpu(tpid);
		if (kill(-tpid, SIGINT)) {
			perror("kill");
			return 1;
		}
		int status;
		struct rusage ru;
		while (wait4(tpid, &status, 0, &ru) < 0) {
			if (errno != EINTR) {
				perror("wait4");
				return 1;
			}
		}
		long long t6 = now();
		long long c1 = (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000LL +
			       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000LL;
		copy(terr);
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
			fprintf(stderr, "load: the tracer ended with status %#x\n", status);
			return 1;
		}
		printf(" stop %lld %lld", c1 - c0, t6 - t5);
	}
	printf("\n");
	return 0;
}
