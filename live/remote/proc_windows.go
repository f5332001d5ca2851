package remote

import "os/exec"

// Windows has no process groups as Unix has: the transport's command
// runs as a child, and killGroup kills that process (its own children
// end with their pipes).
func ownGroup(*exec.Cmd) {}

func killGroup(cmd *exec.Cmd) { cmd.Process.Kill() }
