// Command sockcat joins its stdin and stdout to a unix socket: what it
// reads from stdin goes to the socket, what the socket says goes to
// stdout. It ends when the socket closes, or soon after stdin ends: it
// then shuts down its side of the socket (so that the far end reads all
// that was sent, then end of file) and waits at most 5 s for the far end
// to close, copying what it still says. The far end may be a serial line
// that never ends.
//
// Half-closing matters with qemu's socket chardev: on a full close qemu
// sees a hangup and drops what it had not yet handed to the guest's
// device (a 16550 takes 16 bytes at a time), while after a half close it
// reads everything, then closes.
//
// It is the kernel suite's --via command for guests whose shell is on a
// qemu channel (e2e/vm's StartVia):
//
//	sqlhist --via 'sockcat /tmp/sqlhist-via-123/via.sock' ...
//
// Usage: sockcat SOCKET
package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"time"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: sockcat SOCKET")
		os.Exit(2)
	}
	conn, err := net.Dial("unix", os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "sockcat:", err)
		os.Exit(1)
	}
	uc := conn.(*net.UnixConn)
	in := make(chan error, 1)
	out := make(chan error, 1)
	go func() {
		_, err := io.Copy(uc, os.Stdin)
		if err == nil {
			err = uc.CloseWrite()
		}
		in <- err
	}()
	go func() {
		_, err := io.Copy(os.Stdout, uc)
		out <- err
	}()
	select {
	case err = <-out:
	case err = <-in:
		if err == nil {
			select {
			case err = <-out:
			case <-time.After(5 * time.Second):
			}
		}
	}
	uc.Close()
	if err != nil {
		fmt.Fprintln(os.Stderr, "sockcat:", err)
		os.Exit(1)
	}
}
