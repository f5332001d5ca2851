package main

import "github.com/sqlhist/sqlhist/cmd/sqlhist/internal/cli"

// The command's code is in package cli; its tests, here, name it as they
// did when it was this package's.
type (
	env     = cli.Env
	options = cli.CommandLine
)

const (
	exitOK      = cli.ExitOK
	exitQuery   = cli.ExitQuery
	exitUsage   = cli.ExitUsage
	helpColumns = cli.HelpColumns
)

var (
	run      = cli.Run
	runMerge = cli.RunMerge
	osEnv    = cli.OSEnv
	newFlags = cli.NewFlags
	flagDocs = cli.FlagDocs
)
