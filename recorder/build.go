package recorder

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"github.com/mpitrace/mpitrace/internal/ccache"
	"github.com/mpitrace/mpitrace/recorder/wrap"
)

//go:embed c/mpit_core.h c/mpit_core.c c/mpit_loops.c c/mpit_kokkos.c c/mpit.h c/mpit_events.h c/mpit_runtime.c c/mpitrace.w c/mpitrace.h c/mpitrace.f90
var sources embed.FS

// Version is the recorder's version, written into every log header.
const Version = "0.1.0"

// LibraryName is the file name of the built recorder.
const LibraryName = "libmpitrace.so"

// BuildOptions says which MPI to build the recorder for and where.
type BuildOptions struct {
	// MPICC is the MPI's C compiler wrapper, possibly with flags
	// ("mpicc", "mpicc.mpich", "mpicc -DX"). Default "mpicc".
	MPICC string
	// CacheDir holds built libraries; default CacheDir().
	CacheDir string
	// Force rebuilds even when the cache has the library.
	Force bool
	// Log receives progress lines (nil: none).
	Log io.Writer
}

// Library is a built recorder.
type Library struct {
	Path   string // the shared library
	Dir    string // its cache directory (also holds the generated wrappers and build log)
	Key    string // cache key: hash of the MPI header, compiler and sources
	MPICC  string
	Cached bool // true when the library came from the cache
	// Functions is the number of MPI functions the recorder wraps.
	Functions int
	// Names are the names of those functions, sorted (the names
	// MPITRACE_INCLUDE and MPITRACE_EXCLUDE choose from).
	Names []string
}

// CacheDir returns the default cache directory: $MPITRACE_CACHE, else
// the user cache directory's mpitrace/recorder.
func CacheDir() string {
	if d := os.Getenv("MPITRACE_CACHE"); d != "" {
		return d
	}
	d, err := os.UserCacheDir()
	if err != nil {
		d = os.TempDir()
	}
	return filepath.Join(d, "mpitrace", "recorder")
}

// SourceHash returns a hash of the embedded recorder sources.
func SourceHash() string {
	h := sha256.New()
	names, _ := fs.Glob(sources, "c/*")
	sort.Strings(names)
	for _, n := range names {
		b, _ := sources.ReadFile(n)
		fmt.Fprintf(h, "%s %d\n", n, len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Build returns the recorder library for the MPI of opts.MPICC, building it
// into the cache when it is not there yet.
func Build(ctx context.Context, opts BuildOptions) (*Library, error) {
	if opts.MPICC == "" {
		opts.MPICC = "mpicc"
	}
	if opts.CacheDir == "" {
		opts.CacheDir = CacheDir()
	}
	cc := strings.Fields(opts.MPICC)
	if len(cc) == 0 {
		return nil, fmt.Errorf("--mpicc is empty: name the MPI's C compiler wrapper, e.g. mpicc")
	}
	if _, err := exec.LookPath(cc[0]); err != nil {
		return nil, fmt.Errorf("MPI compiler wrapper %q not found on PATH: install the MPI's development package (e.g. libopenmpi-dev or libmpich-dev) or pass --mpicc", cc[0])
	}
	header, err := wrap.Preprocess(ctx, opts.MPICC, nil)
	if err != nil {
		return nil, err
	}
	funcs, err := wrap.ParseHeaderExcluding(header, recorderExclusions())
	if err != nil {
		return nil, fmt.Errorf("reading the declarations of %s's mpi.h: %w", cc[0], err)
	}
	// The wrappers are generated first (it takes milliseconds): the cache
	// key covers them, so a change of the generator rebuilds the recorder.
	tmpl, _ := sources.ReadFile("c/mpitrace.w")
	var gen bytes.Buffer
	err = wrap.Generate(&gen, funcs, []wrap.Input{{Name: "mpitrace.w", Text: string(tmpl)}}, wrapOptions)
	if err != nil {
		return nil, fmt.Errorf("internal error: generating the recorder's wrappers: %w", err)
	}
	show := ccache.Identity(ctx, cc)
	h := sha256.New()
	fmt.Fprintf(h, "mpitrace recorder %s\ncompiler %s\nshow %s\nsources %s\n", Version, ccache.Resolved(cc), show, SourceHash())
	// Line markers name the preprocessor's temporary input file: leave
	// them out so the key depends on the header's content only.
	for _, line := range strings.Split(header, "\n") {
		if !strings.HasPrefix(line, "#") {
			h.Write([]byte(line))
			h.Write([]byte{'\n'})
		}
	}
	fmt.Fprintf(h, "wrappers %d\n", gen.Len())
	h.Write(gen.Bytes())
	key := hex.EncodeToString(h.Sum(nil))[:20]
	dir := filepath.Join(opts.CacheDir, key)
	names := make([]string, len(funcs))
	for i, f := range funcs {
		names[i] = f.Name
	}
	sort.Strings(names)
	lib := &Library{Path: filepath.Join(dir, LibraryName), Dir: dir, Key: key, MPICC: opts.MPICC, Functions: len(funcs), Names: names}
	if !opts.Force {
		if st, err := os.Stat(lib.Path); err == nil && st.Mode().IsRegular() {
			lib.Cached = true
			return lib, nil
		}
	}
	if opts.Log != nil {
		fmt.Fprintf(opts.Log, "mpitrace: building the recorder for %s (%d MPI functions) in %s\n", opts.MPICC, len(funcs), dir)
	}
	tmp, err := buildDir(opts.CacheDir, key)
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	if err := os.WriteFile(filepath.Join(tmp, "mpit_wrappers.c"), gen.Bytes(), 0o644); err != nil {
		return nil, err
	}
	args := append(append([]string{}, cc[1:]...),
		"-O2", "-g", "-Wall", "-fPIC", "-shared", "-std=gnu11",
		"-DMPIT_VERSION=\""+Version+"\"",
		"-o", LibraryName, "mpit_core.c", "mpit_loops.c", "mpit_kokkos.c", "mpit_runtime.c", "mpit_wrappers.c", "-lzstd", "-lpthread", "-ldl")
	if err := compileInto(ctx, cc[0], args, tmp, lib, opts.Force); err != nil {
		return nil, err
	}
	return lib, nil
}

// wrapOptions generate the recorder's wrappers. Fortran bindings make
// Fortran programs (mpif.h and "use mpi") recorded like C ones: each
// Fortran entry point converts its arguments and calls the recorder's C
// wrapper, which records the event; the MPI library's own Fortran layer,
// which calls PMPI_ directly in Open MPI (so nothing would be recorded) and
// the C MPI_ functions in MPICH, is bypassed, so a call is recorded once
// under either. The upper-case mangling (MPI_SEND) is left out: no Linux
// Fortran compiler uses it, and the library then exports no MPI_ symbol
// but the C wrappers.
var wrapOptions = wrap.Options{
	SkipUnknown:           true,
	NoDeprecationWarnings: true,
	Fortran:               true,
	FortranManglings:      wrap.MangleLower | wrap.MangleUnderscore | wrap.MangleDoubleUnderscore,
	// A Fortran call's site is the Fortran caller's (see mpit.h).
	FortranEnter: "MPIT_F_ENTER();",
	FortranLeave: "MPIT_F_LEAVE();",
}

// recorderExclusions are the declarations the recorder does not wrap: only
// the handle and status conversions (MPI_*_c2f, MPI_*_f2c, ...), which are
// not MPI operations and which an MPI's own Fortran layer calls on every
// Fortran call. Unlike wrap.py, the recorder intercepts MPI_T_* and
// MPI_Comm_spawn*: it records every function of the header.
func recorderExclusions() []wrap.Exclusion {
	var ex []wrap.Exclusion
	for _, e := range wrap.DefaultExclusions {
		if e.Name == "conversion" {
			ex = append(ex, e)
		}
	}
	return ex
}

// compileInto compiles the recorder with cc and args in tmp and installs
// it as lib.Dir (ccache.Install).
func compileInto(ctx context.Context, cc string, args []string, tmp string, lib *Library, force bool) error {
	return ccache.Install(ctx, cc, args, tmp, lib.Dir, lib.Path, "recorder", force, func(out []byte, err error, log string) error {
		return compileError(cc, out, err, log)
	})
}

// buildDir makes a temporary build directory in the cache, with the
// recorder sources in it.
func buildDir(cache, key string) (string, error) {
	files := map[string][]byte{}
	names, _ := fs.Glob(sources, "c/*")
	for _, n := range names {
		files[filepath.Base(n)], _ = sources.ReadFile(n)
	}
	return ccache.NewBuild(cache, key, "recorder", files)
}

// compileError turns a compiler failure into one actionable message.
func compileError(cc string, out []byte, err error, logPath string) error {
	text := string(out)
	switch {
	case strings.Contains(text, "zstd.h"):
		return fmt.Errorf("building the recorder with %s: zstd.h not found: install libzstd-dev (apt-get install libzstd-dev)", cc)
	case strings.Contains(text, "cannot find -lzstd"):
		return fmt.Errorf("building the recorder with %s: libzstd not found: install libzstd-dev (apt-get install libzstd-dev)", cc)
	}
	return fmt.Errorf("building the recorder with %s failed: %s (full log: %s)", cc, ccache.FirstError(out, err), logPath)
}

// Sources returns the embedded recorder sources by base name (for tests and
// for `mpitrace recorder build --emit`).
func Sources() map[string][]byte {
	m := map[string][]byte{}
	names, _ := fs.Glob(sources, "c/*")
	for _, n := range names {
		b, _ := sources.ReadFile(n)
		m[filepath.Base(n)] = b
	}
	return m
}

// CoreLibraryName is the file name of the built recorder without MPI.
const CoreLibraryName = "libmpitrace-core.so"

// coreSources are the sources of the recorder without MPI: the core, the
// loop markers, and the regions and Kokkos callbacks.
var coreSources = []string{"mpit_core.c", "mpit_loops.c", "mpit_kokkos.c"}

// BuildCore returns the recorder for programs that do not link MPI (loop
// markers only), built with the plain C compiler cc (default $CC, else
// "cc") into the cache when it is not there yet. opts.MPICC is ignored.
func BuildCore(ctx context.Context, cc string, opts BuildOptions) (*Library, error) {
	if cc == "" {
		cc = os.Getenv("CC")
	}
	if cc == "" {
		cc = "cc"
	}
	if opts.CacheDir == "" {
		opts.CacheDir = CacheDir()
	}
	ccw := strings.Fields(cc)
	if len(ccw) == 0 {
		return nil, fmt.Errorf("the C compiler is empty: set CC, e.g. CC=cc")
	}
	if _, err := exec.LookPath(ccw[0]); err != nil {
		return nil, fmt.Errorf("C compiler %q not found on PATH: install one (apt-get install gcc) or set CC", ccw[0])
	}
	h := sha256.New()
	fmt.Fprintf(h, "mpitrace core recorder %s\ncompiler %s\nshow %s\nsources %s\n", Version, ccache.Resolved(ccw), ccache.Identity(ctx, ccw), SourceHash())
	key := "core-" + hex.EncodeToString(h.Sum(nil))[:20]
	dir := filepath.Join(opts.CacheDir, key)
	lib := &Library{Path: filepath.Join(dir, CoreLibraryName), Dir: dir, Key: key, MPICC: cc}
	if !opts.Force {
		if st, err := os.Stat(lib.Path); err == nil && st.Mode().IsRegular() {
			lib.Cached = true
			return lib, nil
		}
	}
	if opts.Log != nil {
		fmt.Fprintf(opts.Log, "mpitrace: building the recorder without MPI with %s in %s\n", cc, dir)
	}
	tmp, err := buildDir(opts.CacheDir, key)
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	args := append(append([]string{}, ccw[1:]...),
		"-O2", "-g", "-Wall", "-fPIC", "-shared", "-std=gnu11",
		"-DMPIT_VERSION=\""+Version+"\"", "-o", CoreLibraryName)
	args = append(append(args, coreSources...), "-lzstd", "-lpthread")
	if err := compileInto(ctx, ccw[0], args, tmp, lib, opts.Force); err != nil {
		return nil, err
	}
	return lib, nil
}

// includeFiles are the sources a program includes or compiles to use the
// source-level API: the C header and the Fortran module.
var includeFiles = []string{"mpitrace.h", "mpitrace.f90"}

// IncludeDir returns a directory holding mpitrace.h (loop markers and named
// regions for C and C++) and mpitrace.f90 (the regions' Fortran module),
// writing the embedded files into the recorder's cache (one directory per
// version of them) when they are not there yet.
func IncludeDir() (string, error) {
	h := sha256.New()
	for _, n := range includeFiles {
		b, err := sources.ReadFile("c/" + n)
		if err != nil {
			return "", fmt.Errorf("internal error: %s is not embedded", n)
		}
		fmt.Fprintf(h, "%s %d\n", n, len(b))
		h.Write(b)
	}
	dir := filepath.Join(CacheDir(), "include-"+hex.EncodeToString(h.Sum(nil))[:16])
	for _, n := range includeFiles {
		b, _ := sources.ReadFile("c/" + n)
		if err := writeIfChanged(dir, n, b); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// writeIfChanged writes b to dir/name through a temporary file renamed into
// place, unless the file already holds b.
func writeIfChanged(dir, name string, b []byte) error {
	path := filepath.Join(dir, name)
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, b) {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w (set MPITRACE_CACHE to a writable directory)", dir, err)
	}
	tmp, err := os.CreateTemp(dir, name+".tmp")
	if err != nil {
		return fmt.Errorf("writing %s: %w (set MPITRACE_CACHE to a writable directory)", path, err)
	}
	_, err = tmp.Write(b)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
