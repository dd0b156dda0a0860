package recorder

import (
	"debug/elf"
	"path/filepath"
	"strings"
)

// The recorder as a Kokkos Tools library (c/mpit_kokkos.c, docs/kokkos.md):
// the environment that makes Kokkos load it.
const (
	// KokkosToolsLibs is the variable Kokkos 3.7 and later read for the
	// tool library's path.
	KokkosToolsLibs = "KOKKOS_TOOLS_LIBS"
	// KokkosProfileLibrary is the variable Kokkos before 3.7 reads (later
	// ones accept it when it equals KOKKOS_TOOLS_LIBS).
	KokkosProfileLibrary = "KOKKOS_PROFILE_LIBRARY"
	// KokkosFencesEnv set to 1 has the recorder accept Kokkos' global
	// fencing (a fence after every kernel, so that asynchronous kernels'
	// times are their own); it is declined otherwise.
	KokkosFencesEnv = "MPITRACE_KOKKOS_FENCES"
)

// KokkosEnv is the environment that makes a Kokkos program load the
// recorder lib as its tool: both variables name lib, the library that is
// also preloaded, so that Kokkos' dlopen returns the preloaded object.
// fences asks the recorder to accept Kokkos' global fencing.
func KokkosEnv(lib string, fences bool) map[string]string {
	env := map[string]string{KokkosToolsLibs: lib, KokkosProfileLibrary: lib}
	if fences {
		env[KokkosFencesEnv] = "1"
	}
	return env
}

// LinksKokkos reports whether the ELF executable at path uses Kokkos: it
// needs a Kokkos core library (libkokkoscore, or Trilinos'
// libtrilinos_kokkoscore), or it has Kokkos::initialize in its symbol
// table (Kokkos linked statically). Anything that cannot be read as ELF
// does not.
func LinksKokkos(path string) bool {
	if path == "" {
		return false
	}
	f, err := elf.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	libs, _ := f.ImportedLibraries()
	for _, l := range libs {
		l = filepath.Base(l) // (a library linked by path, without a soname)
		if strings.HasPrefix(l, "libkokkoscore") || strings.HasPrefix(l, "libtrilinos_kokkoscore") {
			return true
		}
	}
	for _, get := range []func() ([]elf.Symbol, error){f.Symbols, f.DynamicSymbols} {
		syms, _ := get()
		for _, s := range syms {
			// Kokkos::initialize(...), every overload; the symbol may carry
			// an ABI tag or a version.
			if strings.HasPrefix(s.Name, "_ZN6Kokkos10initialize") {
				return true
			}
		}
	}
	return false
}
