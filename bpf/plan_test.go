package bpf_test

import (
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/tools/txtar"

	"github.com/sqlhist/sqlhist/bpf"
	"github.com/sqlhist/sqlhist/emit"
	"github.com/sqlhist/sqlhist/live"
	"github.com/sqlhist/sqlhist/planner"
	"github.com/sqlhist/sqlhist/source"
	"github.com/sqlhist/sqlhist/stream"
	"github.com/sqlhist/sqlhist/tracefs"
)

// planned compiles a query as -r plans it for the stream engine (every
// hist feature, whatever the kernel has) on the catalog: its triggers in
// the order a run writes them, and its synthetic events.
func planned(t *testing.T, sql string, cat *tracefs.Catalog) ([]*planner.Hist, []*planner.Synth, []*planner.Probe, error) {
	t.Helper()
	plan, diags := live.Compile(source.NewSource("q.sql", sql), cat, live.Prepare(planner.Options{Stream: true}, 7))
	if plan == nil {
		return nil, nil, nil, errors.New(diags.Error())
	}
	var probes []*planner.Probe
	for _, u := range plan.Units {
		probes = append(probes, u.Probes...)
	}
	var hists []*planner.Hist
	var synths []*planner.Synth
	for _, c := range emit.RunCommands(plan, emit.Options{}, emit.RunOptions{Instance: "sqlhist_7"}) {
		if c.Hist != nil {
			hists = append(hists, c.Hist)
		}
		if c.Synth != nil {
			synths = append(synths, c.Synth)
		}
	}
	return hists, synths, probes, nil
}

func loadable() string {
	if os.Geteuid() != 0 {
		return "not root"
	}
	if err := rlimit.RemoveMemlock(); err != nil {
		return err.Error()
	}
	p, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.TracePoint, License: "GPL",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()}})
	if err != nil {
		return err.Error()
	}
	p.Close()
	return ""
}

// TestQueries compiles every query of testdata/queries that the planner
// takes on the 6.1 catalog into BPF: each is compiled or refused with an
// *bpf.Error, and every compiled one is taken by the running kernel's verifier.
// -v lists what is refused and why. Each is loaded a second time with
// its synthetic events sent out (Options.OnSynth).
func TestQueries(t *testing.T) {
	fsys, err := tracefs.Embedded("6.1")
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob("../testdata/queries/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no queries: %v", err)
	}
	why := loadable()
	if why != "" {
		t.Logf("the compiled programs are not loaded: %s", why)
	}
	var compiled, loaded int
	refused := map[string][]string{}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".txtar")
		ar, err := txtar.ParseFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var sql string
		for _, fl := range ar.Files {
			if fl.Name == "query.sql" {
				sql = string(fl.Data)
			}
		}
		if sql == "" {
			continue
		}
		cat := tracefs.Open(fsys)
		hists, synths, probes, err := planned(t, sql, cat)
		if err != nil {
			continue // the planner's refusal: not the engine's
		}
		arch, _ := cat.Arch()
		e, err := bpf.New(bpf.FromHists(hists), synths, cat.Event, bpf.Options{Probes: probes, Arch: arch})
		if err != nil {
			var be *bpf.Error
			if !errors.As(err, &be) {
				t.Errorf("%s: refused without a *bpf.Error: %v", name, err)
				continue
			}
			if be.Reason == "" || be.Event == "" {
				t.Errorf("%s: a refusal without its event or reason: %v", name, err)
			}
			refused[be.Reason] = append(refused[be.Reason], name+" ("+be.What+")")
			continue
		}
		compiled++
		if why != "" {
			continue
		}
		if err := e.Load(); err != nil {
			var be *bpf.Error
			if errors.As(err, &be) && be.Probe != nil && strings.Contains(be.Reason, "PMU") {
				// This kernel has not got the probe's PMU.
				t.Logf("%s: not loaded: %v", name, err)
				continue
			}
			t.Errorf("%s: compiled, and the verifier refuses it: %v", name, err)
			continue
		}
		loaded++
		e.Stop()
		// With its synthetic events sent out too (--events).
		e, err = bpf.New(bpf.FromHists(hists), synths, cat.Event, bpf.Options{Probes: probes, Arch: arch, OnSynth: func(*stream.Event) {}})
		if err != nil {
			t.Errorf("%s: compiled, and not with OnSynth: %v", name, err)
			continue
		}
		if err := e.Load(); err != nil {
			t.Errorf("%s: with OnSynth, the verifier refuses it: %v", name, err)
			continue
		}
		e.Stop()
	}
	reasons := make([]string, 0, len(refused))
	for r := range refused {
		reasons = append(reasons, r)
	}
	sort.Strings(reasons)
	for _, r := range reasons {
		t.Logf("refused (%d): %s: %s", len(refused[r]), r, strings.Join(refused[r], ", "))
	}
	t.Logf("%d queries compiled, %d loaded into this kernel's verifier", compiled, loaded)
	if compiled == 0 {
		t.Error("no query compiled")
	}
}
