package cxxname

import "testing"

func TestReadable(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		// Kokkos' names of unlabelled functors (typeid names).
		{"4KinE", "KinE"},
		{"11Temperature", "Temperature"},
		{"N6Kokkos6SerialE", "Kokkos::Serial"},
		{"N12_GLOBAL__N_13FooE", "(anonymous namespace)::Foo"},
		{"Z4mainEUliE_", "main::{lambda(int)#1}"},
		{"St6vectorIiSaIiEE", "std::vector<int, std::allocator<int> >"},
		{"4Axpy/7TagInit", "Axpy/TagInit"},
		// Labels stay as they are.
		{"ForceLJNeigh::compute_energy", "ForceLJNeigh::compute_energy"},
		{"Kokkos::View::initialization [x]", "Kokkos::View::initialization [x]"},
		{"abc", "abc"},
		{"Saxpy", "Saxpy"},     // "S" + "a" would be std::allocator, then text
		{"3abcXYZ", "3abcXYZ"}, // a complete name, then text
		{"11Temperaturex", "11Temperaturex"},
		{"4Axpy/label", "4Axpy/label"}, // one part is not mangled
		{"", ""},
		{"N", "N"},
		{"9", "9"},
		{"12", "12"},
		{"1220", "1220"},
	} {
		if got := Readable(c.in); got != c.want {
			t.Errorf("Readable(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func FuzzReadable(f *testing.F) {
	for _, s := range []string{"4KinE", "N6Kokkos6SerialE", "Z4mainEUliE_", "a/b", "St6vectorIiSaIiEE"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		_ = Readable(s) // never panics
	})
}

func TestSymbol(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"_ZN4halo8exchangeEv", "halo::exchange"},
		{"_Z7computePdi", "compute"},
		{"exchange", "exchange"},
		{"_Zbroken", "_Zbroken"},
		{"", ""},
	} {
		if got := Symbol(c.in); got != c.want {
			t.Errorf("Symbol(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
