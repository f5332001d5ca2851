// Package cli is the command sqlhist's plumbing: its flags and their
// checks, the man page and the shell completions, and the wiring of this
// machine (or a --via target, or a fleet of them) to the packages that do
// the work: live runs a plan on a target, results shows what a run read,
// exporter serves it to Prometheus. cmd/sqlhist's main calls [Main];
// nothing else imports this package.
package cli

import (
	"io"
	"os"

	"github.com/spf13/pflag"
)

// Main runs sqlhist with the arguments (without the program's name) on
// this machine and returns its exit status: 0 ok, 1 a bad query or a
// failed apply, 2 bad usage.
func Main(args []string) int {
	TuneGC(os.Getenv, false)
	stop := StartCPUProfile(os.Getenv)
	code := run(args, osEnv())
	stop()
	return code
}

// The entry points the command's tests drive: Run is sqlhist on e
// (a machine the tests fake), RunMerge `sqlhist merge`, OSEnv this
// machine, NewFlags and FlagDocs the flag set --help, the man page and
// the docs are made of, wrapped at HelpColumns.
type (
	Env         = env
	CommandLine = options
)

const (
	ExitOK      = exitOK
	ExitQuery   = exitQuery
	ExitUsage   = exitUsage
	HelpColumns = helpColumns
)

func Run(args []string, e Env) int      { return run(args, e) }
func RunMerge(args []string, e Env) int { return runMerge(args, e) }
func OSEnv() Env                        { return osEnv() }
func NewFlags(o *CommandLine, stderr io.Writer) *pflag.FlagSet {
	return newFlags(o, stderr)
}
func FlagDocs(fl *pflag.FlagSet) []Flag { return flagDocs(fl) }
