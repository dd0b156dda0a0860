//go:build cgo

package instrument

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/mpitrace/mpitrace/recorder"
)

// CCOptions control `mpitrace cc`.
type CCOptions struct {
	Chance     float64
	Preprocess bool // instrument the preprocessor's output (catches loops in macros)
	Stdin      io.Reader
	Stdout     io.Writer
	Stderr     io.Writer
	// Dir is the compiler's working directory ("": this process's).
	Dir string
}

// inDir resolves a path of the command line against opt.Dir.
func (o CCOptions) inDir(p string) string {
	if o.Dir == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(o.Dir, p)
}

// Plan is what `mpitrace cc` makes of a compiler command line.
type Plan struct {
	// PassThrough: the command compiles nothing (-E, -M, --version, no
	// sources...): it runs unchanged.
	PassThrough bool
	Link        bool  // the command links: -ldl is added
	Sources     []int // indexes in args of the C and C++ sources
	DepFile     string
	DepFlags    bool // -MD or -MMD
	Output      string
}

// options whose value is the next argument
var separateValue = map[string]bool{
	"-o": true, "-I": true, "-D": true, "-U": true, "-include": true, "-imacros": true,
	"-isystem": true, "-iquote": true, "-idirafter": true, "-iprefix": true, "-iwithprefix": true,
	"-iwithprefixbefore": true, "-isysroot": true, "-MF": true, "-MT": true, "-MQ": true, "-x": true,
	"-L": true, "-l": true, "-Xlinker": true, "-Xpreprocessor": true, "-Xassembler": true,
	"-Xclang": true, "-u": true, "-T": true, "-z": true, "-aux-info": true, "--param": true,
	"-e": true, "-A": true, "-arch": true, "-target": true, "-imultilib": true, "-dumpdir": true, "-dumpbase": true,
}

// PlanCC reads a compiler command line (args[0] is the compiler).
func PlanCC(args []string) Plan {
	var p Plan
	compileOnly, depsOnly, info := false, false, false
	lang := "" // -x
	for i := 1; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-x" && i+1 < len(args):
			lang = args[i+1]
			i++
			continue
		case strings.HasPrefix(a, "-x") && len(a) > 2:
			lang = a[2:]
			continue
		case a == "-o" && i+1 < len(args):
			p.Output = args[i+1]
			i++
			continue
		case a == "-MF" && i+1 < len(args):
			p.DepFile = args[i+1]
			i++
			continue
		case separateValue[a]:
			i++
			continue
		case a == "-c" || a == "-S" || a == "-fsyntax-only":
			compileOnly = true
		case a == "-E" || a == "-M" || a == "-MM":
			depsOnly = true
		case a == "-MD" || a == "-MMD":
			p.DepFlags = true
		case a == "--version" || a == "--help" || a == "-###" || a == "-v" && len(args) == 2 ||
			strings.HasPrefix(a, "-dump") || strings.HasPrefix(a, "-print-") || strings.HasPrefix(a, "--print-"):
			info = true
		case a == "-" || strings.HasPrefix(a, "-"):
		default:
			_, ok := Lang(a)
			switch lang {
			case "", "none":
			case "c", "c++":
				ok = true
			default:
				ok = false
			}
			if ok {
				p.Sources = append(p.Sources, i)
			}
		}
	}
	if depsOnly || info || len(args) < 2 {
		p.PassThrough = true
		return p
	}
	p.Link = !compileOnly
	if len(p.Sources) == 0 && !p.Link {
		p.PassThrough = true
	}
	return p
}

// CC runs the compiler command args with its C and C++ sources
// instrumented, and returns the compiler's exit status.
func CC(ctx context.Context, args []string, opt CCOptions) (int, error) {
	if len(args) == 0 {
		return 2, errors.New("name the compiler: mpitrace cc -- mpicc -O2 -c a.c")
	}
	plan := PlanCC(args)
	if plan.PassThrough {
		return runCompiler(ctx, args, opt)
	}
	hdr, err := recorder.IncludeDir()
	if err != nil {
		return 1, err
	}
	tmp, err := os.MkdirTemp("", "mpitrace-cc")
	if err != nil {
		return 1, err
	}
	defer os.RemoveAll(tmp)
	out := append([]string{args[0]}, args[1:]...)
	var quote []string
	seen := map[string]bool{}
	renames := map[string]string{} // instrumented file -> original
	for k, i := range plan.Sources {
		orig := args[i]
		text, err := sourceText(ctx, args, i, opt)
		if err != nil {
			fmt.Fprintf(opt.Stderr, "mpitrace cc: %s: %v (compiled as it is)\n", orig, err)
			continue
		}
		cpp, _ := Lang(orig)
		res := Source(text, Options{Path: orig, CPP: cpp, Chance: opt.Chance, Preprocessed: opt.Preprocess})
		for _, n := range res.Notes {
			fmt.Fprintf(opt.Stderr, "%s\n", n)
		}
		dir := filepath.Join(tmp, fmt.Sprint(k))
		if err := os.Mkdir(dir, 0o755); err != nil {
			return 1, err
		}
		path := filepath.Join(dir, filepath.Base(orig))
		if err := os.WriteFile(path, res.Out, 0o644); err != nil {
			return 1, err
		}
		out[i] = path
		renames[path] = orig
		if d := filepath.Dir(orig); !seen[d] { // relative to the compiler's directory, like orig
			seen[d] = true
			quote = append(quote, "-iquote", d)
		}
	}
	out = append(append(append([]string{args[0]}, quote...), out[1:]...), "-I"+hdr)
	if plan.Link {
		out = append(out, "-ldl")
	}
	code, err := runCompiler(ctx, out, opt)
	if err == nil && code == 0 && plan.DepFlags {
		fixDepFile(plan, args, renames, opt)
	}
	return code, err
}

// sourceText returns the source args[i], run through the preprocessor
// with the command's flags when opt.Preprocess.
func sourceText(ctx context.Context, args []string, i int, opt CCOptions) ([]byte, error) {
	if !opt.Preprocess {
		return os.ReadFile(opt.inDir(args[i]))
	}
	pre := []string{}
	for j := 1; j < len(args); j++ {
		a := args[j]
		switch {
		case a == "-o" || a == "-MF" || a == "-MT" || a == "-MQ":
			j++
		case a == "-c" || a == "-S" || a == "-MD" || a == "-MMD" || a == "-MP" || a == "-M" || a == "-MM":
		case separateValue[a]:
			pre = append(pre, a)
			if j+1 < len(args) {
				pre = append(pre, args[j+1])
			}
			j++
		case strings.HasPrefix(a, "-"):
			if !strings.HasPrefix(a, "-l") && !strings.HasPrefix(a, "-L") && !strings.HasPrefix(a, "-Wl,") {
				pre = append(pre, a)
			}
		case j == i:
			pre = append(pre, a)
		}
	}
	pre = append(pre, "-E")
	cmd := exec.CommandContext(ctx, args[0], pre...)
	cmd.Dir = opt.Dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("preprocessing: %v: %s", err, strings.TrimSpace(stderr.String()))
	}
	return b, nil
}

// runCompiler runs the compiler and returns its exit status (128+N when
// signal N ended it). SIGINT, SIGTERM and SIGHUP are passed on to it
// rather than ending mpitrace, so that the temporary sources are removed
// after it stops.
func runCompiler(ctx context.Context, args []string, opt CCOptions) (int, error) {
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = opt.Stdin, opt.Stdout, opt.Stderr
	cmd.Dir = opt.Dir
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil {
		return 127, fmt.Errorf("running %s: %w", args[0], err)
	}
	done := make(chan struct{})
	go func() {
		for {
			select {
			case s := <-sigs:
				_ = cmd.Process.Signal(s)
			case <-done:
				return
			}
		}
	}()
	err := cmd.Wait()
	close(done)
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal()), nil
		}
		return ee.ExitCode(), nil
	}
	if err != nil {
		return 1, fmt.Errorf("running %s: %w", args[0], err)
	}
	return 0, nil
}

// fixDepFile names the original sources in the dependency file the
// compiler wrote, not their instrumented copies (gone by then).
func fixDepFile(plan Plan, args []string, renames map[string]string, opt CCOptions) {
	dep := plan.DepFile
	if dep == "" {
		base := plan.Output
		if base == "" && len(plan.Sources) == 1 {
			base = filepath.Base(args[plan.Sources[0]])
		}
		if base == "" {
			return
		}
		dep = strings.TrimSuffix(base, filepath.Ext(base)) + ".d"
	}
	dep = opt.inDir(dep)
	b, err := os.ReadFile(dep)
	if err != nil {
		return
	}
	s := string(b)
	for tmp, orig := range renames {
		s = strings.ReplaceAll(s, tmp, strings.ReplaceAll(orig, " ", "\\ "))
	}
	if s != string(b) {
		_ = os.WriteFile(dep, []byte(s), 0o644)
	}
}
