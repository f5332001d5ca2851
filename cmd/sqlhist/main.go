package main

import (
	"os"

	"github.com/sqlhist/sqlhist/live"
)

func main() {
	live.TuneGC(os.Getenv, false)
	os.Exit(run(os.Args[1:], osEnv()))
}
