package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/mpitrace/mpitrace/analysis/callsite"
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

// reportSiteProblems prints each binary's problem once, as notes on
// stderr.
func reportSiteProblems(s *Streams, t *callsite.Table) {
	for _, p := range t.Problems() {
		fmt.Fprintf(s.Err, "mpitrace: note: %s\n", p)
	}
}
