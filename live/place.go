package live

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/sqlhist/sqlhist/source"
	"github.com/sqlhist/sqlhist/tracefs"
)

// Place is where a command compiles for and writes to: the choices of
// the event catalog and of the target's tracefs (sqlhist's -t,
// --formats, --kernel and --arch, and what --via found).
type Place struct {
	Root    string // -t: the tracefs on the target, in printed paths and for -e, -r
	Formats string // --formats DIR: a tracefs or a copy of one
	Kernel  string // --kernel VERSION: an embedded catalog
	Arch    string // --arch
	// Machine marks Formats as the target's own tracefs (-e, -r, or a
	// printing --via run): its release and machine are the target's.
	Machine bool
	// Via is the --via command of the target once reached ("" for this
	// machine).
	Via string
}

// ForWrite makes the target's tracefs the place, before anything is
// written (what is the flag that writes: -e, -r or --cleanup): the -t
// directory, or (unless explicit, -t given) where the target's
// /proc/mounts says tracefs is mounted; the catalog is then that
// tracefs, the kernel that will run the commands. A tracefs that is not
// mounted, cannot be read or (unless readOnly) cannot be written is an
// error saying which and what to do.
func (p *Place) ForWrite(h Host, what string, explicit, readOnly bool) error {
	if p.Formats != "" || p.Kernel != "" || p.Arch != "" {
		return source.Usagef("%s compiles against the tracefs it writes to: drop --formats, --kernel and --arch (they choose what a printed script is compiled for)", what)
	}
	var mounts []byte
	if h.Mounts != nil {
		mounts, _ = h.Mounts()
	}
	root, err := Find(p.Root, !explicit, string(mounts), h.Dir)
	if err == nil && h.Writable != nil && !readOnly {
		err = Writable(root, h.Writable)
	}
	if err != nil {
		return p.onTarget(err)
	}
	p.Root, p.Formats, p.Machine = root, root, true
	return nil
}

// onTarget says that err is the --via target's.
func (p *Place) onTarget(err error) error {
	if p.Via == "" {
		return err
	}
	return fmt.Errorf("on the target (--via %s): %w", p.Via, err)
}

// FindVia looks for the --via target's tracefs (at -t, or unless
// explicit where its /proc/mounts says), and when printing (no -e, -r
// or --cleanup) with no catalog chosen makes it the catalog: the formats
// are the target's, as this machine's are without --via. A target with
// no readable tracefs is refused then, not printed for with an embedded
// catalog that may not be its kernel.
func (p *Place) FindVia(h Host, explicit, printing bool) error {
	var mounts []byte
	if !explicit {
		mounts, _ = h.Mounts()
	}
	p.Via = h.Via
	root, err := Find(p.Root, !explicit, string(mounts), h.Dir)
	if err != nil {
		if printing && p.Formats == "" && p.Kernel == "" {
			return fmt.Errorf("%w\nhint: to print without the target's tracefs, name its kernel with --kernel VERSION (embedded: %s) or read a copy of its tracefs with --formats DIR", p.onTarget(err), tracefs.EmbeddedSummary())
		}
		return nil // -e, -r and --cleanup say so
	}
	p.Root = root
	if printing && p.Formats == "" && p.Kernel == "" {
		p.Formats, p.Machine = root, true
	}
	return nil
}

// Catalog opens the event catalog the place chooses: --formats, --kernel,
// the -t directory when it holds events/, else the newest embedded
// catalog, which is then named on log (a printed script's target is
// never chosen in silence).
func (p *Place) Catalog(h Host, log io.Writer) (*tracefs.Catalog, error) {
	if p.Formats != "" && p.Kernel != "" {
		return nil, source.Usagef("--formats and --kernel both choose the event catalog: give one")
	}
	src := CatalogSource{Formats: p.Formats, Machine: p.Machine, Kernel: p.Kernel,
		Arch: p.Arch, Root: p.Root, Dir: h.Dir, FormatsDir: h.HostDir, Uname: h.Uname}
	if h.CatalogDir != nil && (p.Machine || p.Formats == "" && p.Kernel == "") {
		src.Dir = h.CatalogDir
	}
	cat, err := OpenCatalog(src)
	if err != nil {
		return nil, &source.UsageError{Msg: err.Error()}
	}
	if p.Formats == "" && p.Kernel == "" && !HasEvents(src.Dir, p.Root) && log != nil {
		why := "not mounted there"
		var mounts []byte
		if h.Mounts != nil {
			mounts, _ = h.Mounts()
		}
		if _, err := Find(p.Root, false, string(mounts), h.Dir); err != nil && strings.Contains(err.Error(), "permission denied") {
			why = "not readable by this user"
		}
		fmt.Fprintf(log, "sqlhist: no tracefs at %s (%s): compiling for the embedded catalog of %s; "+
			"name the target's kernel with --kernel VERSION (embedded: %s), read its formats with --formats DIR, or reach it with --via COMMAND\n",
			p.Root, why, p.TargetName(cat), tracefs.EmbeddedSummary())
	}
	return cat, nil
}

// TargetName names the kernel and machine a catalog describes: "Linux
// 6.1.0-18-amd64 x86_64".
func (p *Place) TargetName(cat *tracefs.Catalog) string {
	s := "Linux " + cat.Features().Kernel
	if cat.Features().Kernel == "" {
		s = "an unknown kernel"
	}
	if a, _ := cat.Arch(); a != nil {
		s += " " + a.Name
	}
	return s
}

// CatalogName says where the event formats came from.
func (p *Place) CatalogName() string {
	switch {
	case p.Formats != "" && p.Machine && p.Via != "":
		return "tracefs " + p.Formats + " through --via " + p.Via
	case p.Formats != "" && p.Machine:
		return "tracefs " + p.Formats
	case p.Formats != "":
		return "--formats " + p.Formats
	case p.Kernel != "":
		return "embedded --kernel " + p.Kernel
	}
	return "embedded (default)"
}

// OtherTargetHint says how to print for another kernel when the catalog
// is this machine's tracefs, read only because no flag chose one: the
// machine may not be the target (a build host whose kernel has no hist
// triggers). Empty when writes (-e, -r: they need this machine's kernel).
func (p *Place) OtherTargetHint(h Host, writes bool) string {
	if writes || p.Machine || p.Formats != "" || p.Kernel != "" || !HasEvents(h.Dir, p.Root) {
		return ""
	}
	return fmt.Sprintf("the event formats came from this machine's tracefs (%s), read because neither --kernel nor --formats was given; "+
		"to print for another machine, name its kernel with --kernel VERSION (embedded: %s) or read a copy of its tracefs with --formats DIR",
		p.Root, tracefs.EmbeddedSummary())
}

// ReadSQL reads the query: the arguments joined by spaces, or file
// ("-" for stdin, read with readFile otherwise). No SQL at all is a usage
// error, which says -f - when stdin is a pipe or a file.
func ReadSQL(args []string, file string, stdin io.Reader, readFile func(string) ([]byte, error)) (*source.Source, error) {
	switch {
	case file != "" && len(args) > 0:
		return nil, source.Usagef("give the SQL either as arguments or with -f, not both")
	case file == "-":
		b, err := io.ReadAll(stdin)
		if err != nil {
			return nil, source.Usagef("reading stdin: %v", err)
		}
		return source.NewSource("<stdin>", string(b)), nil
	case file != "":
		b, err := readFile(file)
		if err != nil {
			return nil, err
		}
		return source.NewSource(file, string(b)), nil
	case len(args) == 0:
		if f, ok := stdin.(*os.File); ok {
			if st, err := f.Stat(); err == nil && (st.Mode()&os.ModeNamedPipe != 0 || st.Mode().IsRegular()) {
				return nil, source.Usagef("no SQL given; to read it from standard input (a pipe or a file here), give -f -")
			}
		}
		return nil, source.Usagef("no SQL given")
	}
	return source.NewSource("<args>", strings.Join(args, " ")), nil
}
