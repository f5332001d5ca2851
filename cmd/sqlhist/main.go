package main

import (
	"os"

	"github.com/sqlhist/sqlhist/live"
)

func main() {
	live.TuneGC(os.Getenv, false)
	stop := live.StartCPUProfile(os.Getenv)
	code := run(os.Args[1:], osEnv())
	stop()
	os.Exit(code)
}
