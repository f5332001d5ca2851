// Package emit turns a [planner.Plan] into typed tracefs commands — each a
// file and one line to append to it, with the line that undoes it — and
// renders them: as a POSIX shell script of "echo '…' >> PATH" lines, or
// as teardown commands in the order the kernel requires.
//
// Applying a plan walks the same [Command] values that printing renders,
// so what is printed is exactly what is written.
//
// Its API is internal to sqlhist and not stable.
package emit
