// Package e2e runs sqlhist's golden queries in real Linux kernels booted
// under qemu (see the vm package and README.md). The tests run only with
// SQLHIST_E2E=1: they download Debian kernels on first use.
package e2e
