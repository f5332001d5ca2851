// Package vm boots real Debian kernels under qemu (TCG) with a busybox
// initramfs, runs a shell script in them and brings back the output, the
// exit status and, optionally, files.
//
// Kernels are fetched with apt-get from Debian's mirrors using a private
// sources list per suite (the host's /etc/apt is never touched) and cached
// under ~/.cache/sqlhist/kernels (see CacheRoot), shared by every clone.
// Host tools (qemu-system-x86, qemu-system-arm, busybox-static) are
// installed on demand by EnsureHostTools, and riscv64's qemu-system-misc
// by EnsureMachine the first time a riscv64 kernel boots.
//
// Tests that boot kernels run only when SQLHIST_E2E=1 is set; see
// e2e/README.md.
package vm
