package main

import "os"

func main() {
	tuneGC(os.Getenv)
	os.Exit(run(os.Args[1:], osEnv()))
}
