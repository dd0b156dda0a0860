//go:build cgo

package cli

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/mpitrace/mpitrace/instrument"
)

func runInstrument(ctx context.Context, opts *instrumentOptions, s *Streams) error {
	cpp, ok := instrument.Lang(opts.File)
	if !ok {
		return flagErrorf("%s: not a C or C++ source (.c, .cc, .cpp, .cxx, .C)", opts.File)
	}
	var src []byte
	var err error
	if opts.Preprocess {
		cc := os.Getenv("CC")
		if cpp {
			cc = os.Getenv("CXX")
		}
		if cc == "" {
			cc = map[bool]string{false: "cc", true: "c++"}[cpp]
		}
		f := strings.Fields(cc)
		args := append(append(append(f[1:], opts.CPPFlags...), "-E"), opts.File)
		cmd := exec.CommandContext(ctx, f[0], args...)
		cmd.Stderr = s.Err
		src, err = cmd.Output()
		if err != nil {
			return fmt.Errorf("preprocessing %s with %s: %w", opts.File, f[0], err)
		}
	} else if src, err = os.ReadFile(opts.File); err != nil {
		return err
	}
	res := instrument.Source(src, instrument.Options{Path: opts.File, CPP: cpp, Chance: opts.Chance, Preprocessed: opts.Preprocess})
	for _, n := range res.Notes {
		fmt.Fprintln(s.Err, n)
	}
	if opts.Output == "" || opts.Output == "-" {
		_, err = s.Out.Write(res.Out)
		return err
	}
	return os.WriteFile(opts.Output, res.Out, 0o644)
}

func runCC(ctx context.Context, opts *ccOptions, s *Streams) error {
	code, err := instrument.CC(ctx, opts.Args, instrument.CCOptions{
		Chance: opts.Chance, Preprocess: opts.Preprocess, Stdin: s.In, Stdout: s.Out, Stderr: s.Err,
	})
	if err != nil {
		if code == 0 {
			code = ExitError
		}
		return &ExitCodeError{Code: code, Err: err}
	}
	if code != 0 {
		return &ExitCodeError{Code: code}
	}
	return nil
}

// cgoBuilt is true: this mpitrace can instrument sources.
const cgoBuilt = true
