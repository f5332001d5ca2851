package main

import "os"

func main() {
	tuneGC(os.Getenv, false)
	os.Exit(run(os.Args[1:], osEnv()))
}
