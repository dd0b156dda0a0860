// Package ccache builds C shared libraries into a cache directory, one
// directory per key, as mpitrace builds what it compiles on first use
// with the user's compiler (the recorder, the MPI transport): a build
// runs in a temporary directory beside its entry and is renamed into
// place, so that processes building the same key at once (the ranks of
// one job) all end with one complete entry and none sees half of one.
package ccache

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Resolved is a compiler command as a cache key: its file, with links
// resolved, and its flags. mpicc, mpicc.openmpi and
// /usr/bin/mpicc.openmpi name one compiler and share one build.
func Resolved(cc []string) string {
	p, err := exec.LookPath(cc[0])
	if err == nil {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			p = r
		}
		if a, err := filepath.Abs(p); err == nil {
			p = a
		}
	} else {
		p = cc[0]
	}
	return strings.Join(append([]string{p}, cc[1:]...), " ")
}

// Identity is what a compiler (wrapper) says it runs: the underlying
// compiler and flags (`-show` for MPICH, `-showme` for Open MPI) and its
// version, so that another installation gets another cache entry.
func Identity(ctx context.Context, cc []string) string {
	var parts []string
	for _, flag := range []string{"-showme", "-show", "--version"} {
		out, err := exec.CommandContext(ctx, cc[0], append(append([]string{}, cc[1:]...), flag)...).Output()
		if err == nil {
			parts = append(parts, strings.TrimSpace(string(out)))
		}
	}
	return strings.Join(parts, "\n")
}

// NewBuild makes a temporary build directory for key in cache, holding
// files (name → content). what names the cache in errors.
func NewBuild(cache, key, what string, files map[string][]byte) (string, error) {
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", fmt.Errorf("creating the %s cache: %w (set MPITRACE_CACHE to a writable directory)", what, err)
	}
	tmp, err := os.MkdirTemp(cache, key+".tmp")
	if err != nil {
		return "", fmt.Errorf("creating the %s cache: %w (set MPITRACE_CACHE to a writable directory)", what, err)
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(tmp, name), b, 0o644); err != nil {
			os.RemoveAll(tmp)
			return "", fmt.Errorf("writing the %s sources: %w", what, err)
		}
	}
	return tmp, nil
}

// Install runs compiler cc with args in build directory tmp (NewBuild's)
// and installs tmp as dir, whose library is lib. A failed build's
// directory is kept as dir+".failed" with its build.log, and explain
// turns the compiler's output into the error. Another process that
// installed dir first wins; force replaces an old dir.
func Install(ctx context.Context, cc string, args []string, tmp, dir, lib, what string, force bool, explain func(out []byte, err error, log string) error) error {
	cmd := exec.CommandContext(ctx, cc, args...)
	cmd.Dir = tmp
	out, err := cmd.CombinedOutput()
	_ = os.WriteFile(filepath.Join(tmp, "build.log"), append([]byte(cc+" "+strings.Join(args, " ")+"\n"), out...), 0o644)
	if err != nil {
		failed := dir + ".failed"
		_ = os.RemoveAll(failed)
		if os.Rename(tmp, failed) != nil {
			failed = tmp
		}
		return explain(out, err, filepath.Join(failed, "build.log"))
	}
	if err := os.Rename(tmp, dir); err != nil {
		if force {
			_ = os.RemoveAll(dir)
			if err2 := os.Rename(tmp, dir); err2 == nil {
				return nil
			}
		}
		if _, err2 := os.Stat(lib); err2 == nil {
			return nil
		}
		return fmt.Errorf("installing the %s into %s: %w", what, dir, err)
	}
	return nil
}

// FirstError is the first line of compiler output that says "error", or
// err's text.
func FirstError(out []byte, err error) string {
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, "error") {
			return strings.TrimSpace(l)
		}
	}
	return err.Error()
}
