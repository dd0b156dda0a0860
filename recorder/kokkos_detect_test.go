package recorder

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// LinksKokkos finds Kokkos by the library a program needs and, linked
// statically, by Kokkos::initialize in its symbol table; not in a program
// without it, a script or a missing file. The programs are built here
// without Kokkos: a stand-in libkokkoscore.so, and a function carrying
// Kokkos::initialize's mangled name.
func TestLinksKokkos(t *testing.T) {
	needCC(t)
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cc := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("cc", args...).CombinedOutput(); err != nil {
			t.Fatalf("cc %v: %v\n%s", args, err, out)
		}
	}
	libsrc := write("core.c", "int kokkos_core_stand_in(void) { return 1; }\n")
	cc("-shared", "-fPIC", "-o", filepath.Join(dir, "libkokkoscore.so"), libsrc)
	cc("-shared", "-fPIC", "-o", filepath.Join(dir, "libtrilinos_kokkoscore.so.13.2"), libsrc)
	main := write("main.c", "int kokkos_core_stand_in(void);\nint main(void) { return kokkos_core_stand_in() - 1; }\n")
	dynamic := filepath.Join(dir, "dynamic")
	cc("-o", dynamic, main, "-L"+dir, "-lkokkoscore")
	trilinos := filepath.Join(dir, "trilinos")
	cc("-o", trilinos, main, filepath.Join(dir, "libtrilinos_kokkoscore.so.13.2"))
	static := filepath.Join(dir, "static")
	cc("-o", static, write("static.c", `void kokkos_init(int *argc, char **argv) __asm__("_ZN6Kokkos10initializeERiPPc");
void kokkos_init(int *argc, char **argv) { (void)argc; (void)argv; }
int main(int argc, char **argv) { kokkos_init(&argc, argv); return 0; }
`))
	plain := filepath.Join(dir, "plain")
	cc("-o", plain, write("plain.c", "int main(void) { return 0; }\n"))
	for path, want := range map[string]bool{
		dynamic: true, trilinos: true, static: true,
		plain: false, write("run.sh", "#!/bin/sh\n./dynamic\n"): false, filepath.Join(dir, "missing"): false, "": false,
	} {
		if got := LinksKokkos(path); got != want {
			t.Errorf("LinksKokkos(%s) = %v, want %v", filepath.Base(path), got, want)
		}
	}
}
