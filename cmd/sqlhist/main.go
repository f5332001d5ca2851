package main

import (
	"os"

	"github.com/sqlhist/sqlhist/cmd/sqlhist/internal/cli"
)

func main() { os.Exit(cli.Main(os.Args[1:])) }
