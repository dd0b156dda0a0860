package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/mpitrace/mpitrace/analysis/callsite"
	"github.com/mpitrace/mpitrace/tracefmt"
)

// siteFlags are the flags of the commands that resolve call sites.
type siteFlags struct {
	Binaries []string // --binary: PATH, or RECORDED=PATH
	Sysroot  string   // --sysroot: where the recorded paths are
}

func addSiteFlags(f *pflag.FlagSet, o *siteFlags) {
	f.StringArrayVar(&o.Binaries, "binary", nil,
		"resolve call sites of the recorded binary with PATH's base name in `PATH` (or RECORDED=PATH for one recorded path); repeatable")
	f.StringVar(&o.Sysroot, "sysroot", "", "read the recorded binaries (and /usr/lib/debug) under `DIR`, as copied from the machine of the run")
}

// resolver returns a call-site resolver that reads the binaries --binary
// gives in place of the recorded ones.
func (o *siteFlags) resolver() (*callsite.Resolver, error) {
	r := callsite.NewResolver()
	if o.Sysroot != "" {
		if st, err := os.Stat(o.Sysroot); err != nil || !st.IsDir() {
			return nil, flagErrorf("--sysroot %s: not a directory", o.Sysroot)
		}
		r.Root = o.Sysroot
	}
	for _, b := range o.Binaries {
		recorded, local, ok := strings.Cut(b, "=")
		if !ok {
			recorded, local = filepath.Base(b), b
		}
		if recorded == "" || local == "" {
			return nil, flagErrorf("--binary %q: give PATH or RECORDED=PATH", b)
		}
		if _, err := os.Stat(local); err != nil {
			return nil, flagErrorf("--binary %s: %v", b, err)
		}
		if r.Paths == nil {
			r.Paths = map[string]string{}
		}
		r.Paths[recorded] = local
	}
	return r, nil
}

// siteTable returns the call sites of the given ranks' tables (nil tables
// are skipped), resolved through r.
func siteTable(r *callsite.Resolver, ranks map[int]*tracefmt.Sites) *callsite.Table {
	t := callsite.NewTable(r)
	for rank, s := range ranks {
		if s.Len() == 0 {
			continue
		}
		addrs := make(map[uint32]uint64, s.Len())
		for _, id := range s.IDs() {
			if a, ok := s.Addr(id); ok && id <= 1<<32-1 {
				addrs[uint32(id)] = a
			}
		}
		ms := s.Mappings()
		maps := make([]callsite.Mapping, len(ms))
		for i, m := range ms {
			maps[i] = callsite.Mapping(m)
		}
		t.SetRank(rank, maps, addrs)
	}
	return t
}

// reportSiteProblems prints each binary's problem once, as notes on
// stderr.
func reportSiteProblems(s *Streams, t *callsite.Table) {
	for _, p := range t.Problems() {
		fmt.Fprintf(s.Err, "mpitrace: note: %s\n", p)
	}
}
