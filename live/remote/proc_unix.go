//go:build !windows

package remote

import (
	"os/exec"
	"syscall"
)

// ownGroup starts the transport's command in a process group of its own,
// so that killGroup ends whatever it started (an ssh and its children)
// and the terminal's Ctrl-C reaches sqlhist alone.
func ownGroup(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

// killGroup kills the transport's process group.
func killGroup(cmd *exec.Cmd) { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
