// Command goprobe exercises what the Go runtime and sqlhist ask of a
// kernel: threads and futexes (goroutines on every CPU), the epoll poller
// and its eventfd (pipes with deadlines, a TCP connection over the
// loopback), timers and tickers, signals sent to itself, running a child
// process, reading /proc. The built-kernel boot test runs it in the guest;
// it prints one line per check and exits 1 if one failed.
package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
)

func main() {
	failed := false
	check := func(name string, err error) {
		if err != nil {
			fmt.Printf("goprobe: %s: FAILED: %v\n", name, err)
			failed = true
			return
		}
		fmt.Printf("goprobe: %s: ok\n", name)
	}
	check("goroutines", goroutines())
	check("pipe deadline", pipeDeadline())
	check("tcp loopback", tcpLoopback())
	check("ticker", ticker())
	check("signal", selfSignal())
	check("exec", execChild())
	check("proc", readProc())
	if failed {
		os.Exit(1)
	}
}

func goroutines() error {
	var wg sync.WaitGroup
	var mu sync.Mutex
	sum := 0
	for i := 0; i < 4*runtime.NumCPU(); i++ {
		wg.Add(1)
		go func(n int) {
			defer wg.Done()
			x := 0
			for j := 0; j < 200000; j++ {
				x += j % (n + 1)
			}
			mu.Lock()
			sum += x % 7
			mu.Unlock()
		}(i)
	}
	wg.Wait()
	_ = sum
	return nil
}

func pipeDeadline() error {
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer r.Close()
	defer w.Close()
	r.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	start := time.Now()
	_, err = r.Read(make([]byte, 1))
	if !os.IsTimeout(err) {
		return fmt.Errorf("read from an empty pipe: %v, want a timeout", err)
	}
	if d := time.Since(start); d < 40*time.Millisecond || d > 5*time.Second {
		return fmt.Errorf("the deadline fired after %v", d)
	}
	go func() { time.Sleep(10 * time.Millisecond); w.Write([]byte("x")) }()
	r.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := r.Read(make([]byte, 1)); err != nil {
		return err
	}
	return nil
}

func tcpLoopback() error {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer l.Close()
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		io.Copy(c, c)
	}()
	c, err := net.DialTimeout("tcp", l.Addr().String(), 5*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte("ping")); err != nil {
		return err
	}
	b := make([]byte, 4)
	if _, err := io.ReadFull(c, b); err != nil {
		return err
	}
	if string(b) != "ping" {
		return fmt.Errorf("echoed %q", b)
	}
	return nil
}

func ticker() error {
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	start := time.Now()
	for i := 0; i < 10; i++ {
		<-t.C
	}
	if d := time.Since(start); d < 40*time.Millisecond {
		return fmt.Errorf("10 ticks of 5ms in %v", d)
	}
	return nil
}

func selfSignal() error {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGUSR1)
	defer signal.Stop(c)
	if err := syscall.Kill(os.Getpid(), syscall.SIGUSR1); err != nil {
		return err
	}
	select {
	case <-c:
		return nil
	case <-time.After(5 * time.Second):
		return fmt.Errorf("SIGUSR1 not delivered")
	}
}

func execChild() error {
	out, err := exec.Command("/bin/sh", "-c", "echo child $((6*7))").Output()
	if err != nil {
		return err
	}
	if strings.TrimSpace(string(out)) != "child 42" {
		return fmt.Errorf("child printed %q", out)
	}
	return nil
}

func readProc() error {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return err
	}
	if !strings.Contains(string(b), "Threads:") {
		return fmt.Errorf("/proc/self/status has no Threads line")
	}
	return nil
}
