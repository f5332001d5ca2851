package main

import (
	"os"

	"github.com/sqlhist/sqlhist/live"
)

func main() {
	live.TuneGC(os.Getenv, false)
	stop := startProfile()
	code := run(os.Args[1:], osEnv())
	stop()
	os.Exit(code)
}
