package main

import (
	"os"

	"github.com/sqlhist/sqlhist/cmd/sqlhist/internal/cli"
	// Huge pages off; its init runs early, as it needs only syscall.
	_ "github.com/sqlhist/sqlhist/internal/nohugepages"
)

func main() { os.Exit(cli.Main(os.Args[1:])) }
