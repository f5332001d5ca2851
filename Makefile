# Targets for the e2e harness (e2e/, tools/). Other targets (test, golden,
# fuzz, bench) belong to the compiler side.

GO ?= go

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
