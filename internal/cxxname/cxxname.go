// Package cxxname makes the C++ type names Kokkos gives unlabelled kernels
// readable.
//
// Kokkos names a kernel launched without a label by its functor's type, as
// typeid(F).name() spells it: the Itanium ABI's mangled type ("4KinE",
// "N6Kokkos6SerialE", "Z4mainEUliE_" for a lambda), with "/" and the tag's
// type appended for a tagged functor. Readable demangles such names and
// leaves every other name as it is.
package cxxname

import (
	"strings"

	"github.com/ianlancetaylor/demangle"
)

// Readable returns name demangled when each of its "/"-separated parts is a
// mangled C++ type name, else name unchanged.
func Readable(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		d, ok := demangleType(p)
		if !ok {
			return name
		}
		parts[i] = d
	}
	return strings.Join(parts, "/")
}

const typeinfoPrefix = "typeinfo name for "

// demangleType demangles one mangled type name. The demangler accepts text
// after a complete name, so a name is taken only when it is complete and
// the same name without its last byte is not.
func demangleType(s string) (string, bool) {
	if len(s) < 2 || !mangledStart(s[0]) {
		return "", false
	}
	letters := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_':
			letters = true
		case c >= '0' && c <= '9':
		default:
			return "", false
		}
	}
	if !letters {
		return "", false // a number ("12" would read as the name "2")
	}
	d, err := demangle.ToString("_ZTS"+s, demangle.NoParams)
	if err != nil || !strings.HasPrefix(d, typeinfoPrefix) {
		return "", false
	}
	if short, err := demangle.ToString("_ZTS"+s[:len(s)-1], demangle.NoParams); err == nil && short == d {
		return "", false // s has text after a complete name
	}
	return strings.TrimPrefix(d, typeinfoPrefix), true
}

// mangledStart reports whether c can start the mangled name of a class
// type: a source name's length, a nested name, a local name (lambdas), or a
// standard-library substitution.
func mangledStart(c byte) bool {
	return c >= '1' && c <= '9' || c == 'N' || c == 'Z' || c == 'S'
}

// Symbol returns a linker symbol's readable name: a mangled C++ symbol
// ("_ZN4halo8exchangeEv") demangled without its parameters
// ("halo::exchange"), any other name unchanged.
func Symbol(sym string) string {
	if !strings.HasPrefix(sym, "_Z") {
		return sym
	}
	d, err := demangle.ToString(sym, demangle.NoParams)
	if err != nil {
		return sym
	}
	return d
}
