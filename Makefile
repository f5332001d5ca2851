GO ?= go

.PHONY: build test unit kernels golden fuzz bench dist install

# The heap without transparent huge pages from its first page
# (internal/nohugepages.LinkFlag, which a test holds this line to).
LDFLAGS ?= -X=runtime.godebugDefault=disablethp=1

build:
	CGO_ENABLED=0 $(GO) build -ldflags='$(LDFLAGS)' -o sqlhist ./cmd/sqlhist

# What CI runs: the unit, golden and fuzz tests and, at the same time,
# every golden case in real kernels under qemu. The two share the
# machine: the unit tests leave about half of two cores idle (the
# restarting-line tests mostly wait on their lines), and the kernels'
# guests wait on their workloads' sleeps and the kernels' RCU. The shells
# and tools (apt-get) are installed first, so that the two never run
# apt-get at once; the fuzz targets run one worker each (the same
# time, half the CPU: the guests keep the other core). make unit's
# output is kept in a file and printed
# whole when both have ended, after the kernels' summary; then every
# failed test's own output again (tools/testlog), so that the end of the
# log says why; the recipe fails when either did.
test: test-shells
	@ulog=$$(mktemp "$${TMPDIR:-/tmp}/sqlhist-unit.XXXXXX"); \
	start=$$(date +%s); \
	{ TESTLOG_SAVE="$$ulog.failed" $(MAKE) --no-print-directory unit FUZZFLAGS=-parallel=1 > "$$ulog" 2>&1; echo "$$? $$(( $$(date +%s) - start ))" > "$$ulog.rc"; } & \
	upid=$$!; \
	echo "make unit runs beside make kernels; its output follows the kernels'"; \
	TESTLOG_SAVE="$$ulog.kfailed" $(MAKE) --no-print-directory kernels; krc=$$?; kend=$$(( $$(date +%s) - start )); \
	wait $$upid; \
	read urc usec < "$$ulog.rc"; \
	echo "=== make unit (beside make kernels): exit $$urc after $${usec}s"; \
	cat "$$ulog"; \
	for f in "$$ulog.kfailed" "$$ulog.failed"; do [ -s "$$f" ] && { echo "=== again, from make $$( [ "$$f" = "$$ulog.failed" ] && echo unit || echo kernels ):"; cat "$$f"; }; done; \
	rm -f "$$ulog" "$$ulog.rc" "$$ulog.failed" "$$ulog.kfailed"; \
	echo "=== make unit: exit $$urc after $${usec}s; make kernels: exit $$krc after $${kend}s"; \
	[ "$$urc" = 0 ] && [ "$$krc" = 0 ]

# The fast part: the shells of emit's script tests (installed when
# missing), vet, every unit and golden test once in random order, and
# short fuzz runs of the parser, the whole command, shell quoting and
# the readers of hist and trace output, of saved -o json results (and
# their heatmaps) and of what the awk engine's program prints on a target: 15 s for the two
# query targets, 5-6 s for each reader (their corpora run whole first;
# `make fuzz` is the long run). Each
# fuzz run goes through tools/fuzzcheck, which fails it when its execs counter stops for 6 s or
# a worker outlives it; each target bounds one input to a second
# (internal/fuzzguard) and crashes, saving the input, past that.
FUZZCHECK = $(GO) run ./tools/fuzzcheck $(FUZZFLAGS)

unit: test-shells
	$(GO) vet ./...
	GO=$(GO) TESTLOG_QUIET=1 tools/testlog/run.sh -shuffle=on -count=1 ./...
	$(FUZZCHECK) -time 15s ./compiler FuzzParse
	$(FUZZCHECK) -time 15s ./cmd/sqlhist FuzzCompile
	$(FUZZCHECK) -time 6s ./emit FuzzQuote
	$(FUZZCHECK) -time 6s ./tracefs FuzzParseHist
	$(FUZZCHECK) -time 6s ./tracefs FuzzParseTraceLine
	$(FUZZCHECK) -time 6s ./tracefs FuzzDecodePage
	$(FUZZCHECK) -time 6s ./live/remote FuzzAnswer
	$(FUZZCHECK) -time 5s ./live/remote FuzzListing
	$(FUZZCHECK) -time 5s ./live/remote FuzzParseOD
	$(FUZZCHECK) -time 6s ./results FuzzReadJSONReport
	$(FUZZCHECK) -time 6s ./live FuzzReadAwkOutput
	$(FUZZCHECK) -time 5s ./results FuzzHeatmap
	$(FUZZCHECK) -time 5s ./bpf FuzzReadMaps

# The shells printed scripts are run under by emit's unit tests (dash,
# mksh, busybox, bash --posix), the awks of the awk engine's tests,
# chromium and prometheus (the heatmap's and the dashboard's tests) and
# the tmux that --live's test draws in: installed with apt-get when
# missing (as root or with passwordless sudo; under CI=true a failure
# stops make).
.PHONY: test-shells
test-shells:
	$(GO) run ./tools/test-shells

# Static, reproducible binaries for linux/amd64, arm64, arm (GOARM=7) and
# riscv64 in dist/, with SHA256SUMS; each is checked to be a static ELF of
# its machine and to print what the amd64 build prints for every golden
# query (foreign ones under qemu-user, installed when missing).
dist:
	$(GO) run ./tools/dist -out dist -install-qemu

# Rewrite the want/ sections of testdata/queries/*.txtar.
golden:
	$(GO) test ./cmd/sqlhist -run 'TestGolden|TestPaperKernels' -update

# Rewrite the flag blocks of the README and docs/ (between the markers
# "<!-- sqlhist flags: … -->" and "<!-- end of sqlhist flags -->") from
# the flag set, as --help prints it; TestDocFlagBlocks fails until then.
.PHONY: docs-flags
docs-flags:
	$(GO) test ./cmd/sqlhist -run TestDocFlagBlocks -update

# Five minutes of each of the two query fuzz targets, two workers each.
fuzz:
	$(FUZZCHECK) -time 5m -parallel 2 ./compiler FuzzParse
	$(FUZZCHECK) -time 5m -parallel 2 ./cmd/sqlhist FuzzCompile

# Figures, not assertions: compile time against a full catalog and a
# two-event directory, and the worst inputs found for the parser and the
# whole compile (each should stay well under 100 ms), the stream
# engine's work for one wakeup of the wakeup JOIN, and a stream run that
# reads 4000 wakeups from ring-buffer pages (live).
bench:
	$(GO) test ./compiler ./planner ./cmd/sqlhist ./stream -run '^$$' -bench . -benchmem
	$(GO) test ./live -run '^$$' -bench StreamWakeups -benchmem

# Refresh cmd/sqlhist/default.pgo: the CPU profile go build optimizes the
# command with (profile-guided optimization: the hot calls inlined), of
# the stream engine reading wakeups from a perf ring (live) and of a
# compile. Run it after changing those paths; docs/cost.md says what it
# is worth.
.PHONY: pgo
pgo:
	$(GO) test ./live -run '^$$' -bench '^BenchmarkStream(Keepup|Perf)$$' -benchtime 4000000x -count 4 -cpuprofile /tmp/sqlhist-pgo-stream.pprof
	$(GO) test ./cmd/sqlhist -run '^$$' -bench '^BenchmarkCompileTwoEvents$$' -benchtime 2s -cpuprofile /tmp/sqlhist-pgo-compile.pprof
	$(GO) tool pprof -proto /tmp/sqlhist-pgo-stream.pprof /tmp/sqlhist-pgo-compile.pprof > cmd/sqlhist/default.pgo

# Targets for the e2e harness (e2e/, tools/).

.PHONY: catalog e2e-tools e2e

# Boot each Debian kernel under qemu and write tracefs/catalogs/linux-<k>.zip.
# Installs qemu/busybox-static and downloads kernels on first use.
catalog:
	$(GO) run ./tools/capture-catalog

# Install the host tools the harness needs (qemu-system-x86, busybox-static).
e2e-tools:
	$(GO) run ./tools/e2e-tools

# Boot tests of the harness itself (downloads ~100 MB of kernels once).
e2e:
	SQLHIST_E2E=1 $(GO) test ./e2e/...

# Build the kernels the harness makes from Debian's source packages
# (6.1-boot, 5.10-hist: e2e/vm/kconfig/tiny.fragment) unless cached, and
# boot each with a bootconfig: tracefs, hist triggers, initcall events,
# probes, busybox and Go workloads. Installs the build tools on first use.
.PHONY: built-kernels
built-kernels:
	SQLHIST_E2E=1 SQLHIST_E2E_BUILD=1 $(GO) test ./e2e/vm -run TestBuiltKernels -count=1 -v -timeout 100m

# The kernel suite (TestKernels): every golden case in Debian's x86-64 6.1,
# 6.12 and 7.2, arm64 6.1, 6.12 and 7.2, armhf 6.1 and the 5.10.262 built
# with hist triggers (5.10-hist) under qemu, with -e and --run in the same
# boot; the refusal on Debian's 5.10 and boot-time tracing in the built
# 6.1. Three guests run at once on two cores (one more than the CPUs;
# SQLHIST_E2E_GUESTS=N sets it), the longest jobs first; a kernel build
# counts as two guests. The table at the end gives each kernel's fetch,
# boot and phases. Installs qemu (x86 and arm), busybox-static and the
# build tools, downloads the kernels and builds the two built ones (about
# 13 min of both cores) on first use, into ~/.cache/sqlhist (or
# $$SQLHIST_CACHE_DIR), shared by every clone. SQLHIST_KERNELS=6.1 narrows it.
kernels:
	SQLHIST_E2E=1 GO=$(GO) tools/testlog/run.sh ./e2e -run 'TestKernels' -count=1 -timeout 85m

# The harness's cache: its size, and emptying it (the next make kernels
# downloads and builds again).
.PHONY: cache-size cache-clean
cache-size:
	@$(GO) run ./tools/e2e-cache size

cache-clean:
	@$(GO) run ./tools/e2e-cache clean

# The --metrics soak (not in CI): -r --metrics of the wakeup JOIN and a
# syscall count for 10 minutes (SQLHIST_SOAK=5m shortens it) under a busy
# workload, inside a 6.1 guest (read with busybox wget) and through --via
# into another, at once: resident memory flat after the first minute,
# counters only growing, no event lost the kernel did not report,
# tracefs as before. Prints the samples.
.PHONY: soak
soak:
	SQLHIST_E2E=1 SQLHIST_SOAK=$${SQLHIST_SOAK:-1} $(GO) test ./e2e -run 'TestSoak' -count=1 -v -timeout 40m

# What --via costs (figures, not assertions): -r -d 5 of the wakeup JOIN in
# a 6.1 guest against the same run through its serial line (wall time,
# bytes, requests), then a fleet of 8 guests against one.
.PHONY: bench-via
bench-via:
	SQLHIST_E2E=1 SQLHIST_VIA_BENCH=1 $(GO) test ./e2e -run TestViaBench -count=1 -v -timeout 30m

# What tracing costs the kernel, against BPF: in one boot of 6.1 (or
# $$SQLHIST_KERNELS, x86-64) with one vCPU and instruction-counted time
# (qemu -icount shift=0: a guest ns is an instruction), a C workload
# (e2e/testdata/cload) makes system calls, wakeups and opens bare and
# under each shape (sqlhist's lowerings, libtracefs's, libbpf-tools'
# runqlat, syscount and funclatency, and sqlhist -r --engine stream in the
# guest, whose CPU time to its exit after the workload is counted) in 5
# interleaved rounds. Prints a table with a breakdown of the wakeup JOIN's
# cost, then one line a shape:
# cost SHAPE overhead_ns=N spread=P% vs_bare=R (N: guest ns per system
# call, wakeup or call; P: the range of the rounds over their median);
# a stream line adds fixed_ns=F per_event_ns=E: F of N is what stopping
# sqlhist costs however many events it read (a run over no workload), E
# the rest. The awk rows run the printed awk script under the guest's
# busybox awk and under this host's mawk (test-shells installs it).
.PHONY: bench-kernel
bench-kernel: test-shells
	@log=$$(mktemp); SQLHIST_E2E=1 SQLHIST_BENCH_KERNEL=1 $(GO) test ./e2e -run TestKernelCost -count=1 -v -timeout 40m > $$log 2>&1; rc=$$?; \
	cat $$log; echo; grep '^cost ' $$log; rm -f $$log; exit $$rc

# A run's own time in a 6.1 guest with a busy loop beside (SQLHIST_KERNELS
# for others): -r -d 1 of the wakeup JOIN with each engine (auto, bpf,
# kernel, stream), -e and --teardown -e, five rounds interleaved, the
# medians and ranges by the guest's clock (RUNTIME_BIN: another static
# build's, to compare; RUNTIME_BASE: an older build beside it;
# RUNTIME_BUSY=host puts the busy loop on this machine beside qemu, none
# leaves it out). Figures, not assertions.
.PHONY: bench-run
bench-run:
	SQLHIST_E2E=1 SQLHIST_BENCH_RUN=1 $(GO) test ./e2e -run TestRunTime -count=1 -v -timeout 30m

# Install sqlhist, its man page sqlhist(1) and its bash, zsh and fish
# completions under $(PREFIX) (default /usr/local; DESTDIR for packaging).
# All three are made by the binary itself, from the flags --help lists.
PREFIX ?= /usr/local
.PHONY: install
install: build
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1 \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions \
		$(DESTDIR)$(PREFIX)/share/zsh/site-functions \
		$(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d
	install -m 755 sqlhist $(DESTDIR)$(PREFIX)/bin/sqlhist
	./sqlhist man > $(DESTDIR)$(PREFIX)/share/man/man1/sqlhist.1
	./sqlhist completion bash > $(DESTDIR)$(PREFIX)/share/bash-completion/completions/sqlhist
	./sqlhist completion zsh > $(DESTDIR)$(PREFIX)/share/zsh/site-functions/_sqlhist
	./sqlhist completion fish > $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/sqlhist.fish
