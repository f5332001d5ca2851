//go:build !windows

package live

import (
	"errors"
	"io"
	"os"
	"syscall"
)

// What a run asks of the machine it runs on, where Unix has it; Windows,
// which has no tracefs, only prints, plans and drives targets through
// --via (sys_windows.go).

func selfKill() { syscall.Kill(os.Getpid(), syscall.SIGKILL) }

// accessW checks with access(2) that this process may write to p.
func accessW(p string) error { return syscall.Access(p, 2 /* W_OK */) }

// processAlive reports whether process pid exists on this machine.
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// osPipe opens trace_pipe for blocking reads. Not through os.OpenFile:
// that registers the file with the runtime poller, and trace_pipe's poll
// only reports data once the buffer is buffer_percent full, so the last
// events would never be read.
func osPipe(p string) (io.ReadCloser, error) {
	fd, err := syscall.Open(p, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: p, Err: err}
	}
	return os.NewFile(uintptr(fd), p), nil
}

// rawOpen opens a CPU's trace_pipe_raw for reads that do not wait
// (EAGAIN when the buffer holds nothing).
func rawOpen(p string) (int, error) {
	return syscall.Open(p, syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
}

func rawRead(fd int, b []byte) (int, error) { return syscall.Read(fd, b) }

func rawClose(fd int) { syscall.Close(fd) }
