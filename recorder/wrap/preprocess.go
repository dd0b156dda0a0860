package wrap

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Preprocess runs the MPI compiler wrapper's preprocessor on a file holding
// "#include <mpi.h>" and returns its output, ready for [ParseHeader].
//
// compiler is the compiler command and may carry flags ("mpicc",
// "mpicc.mpich -DFOO", "gcc -I/opt/mpi/include"); it is split into words
// like a shell would for simple quoting ('...' and "...") but is not run
// through a shell. Each of includeDirs is passed as -I (wrap.py's -I).
// Failures are a single line naming the compiler and the first line of its
// standard error.
func Preprocess(ctx context.Context, compiler string, includeDirs []string) (string, error) {
	argv, err := splitCommand(compiler)
	if err != nil {
		return "", fmt.Errorf("preprocessing mpi.h: compiler %q: %v", compiler, err)
	}
	if len(argv) == 0 {
		return "", fmt.Errorf("preprocessing mpi.h: no compiler given")
	}
	dir, err := os.MkdirTemp("", "mpitrace-wrap-")
	if err != nil {
		return "", fmt.Errorf("preprocessing mpi.h: %v", err)
	}
	defer os.RemoveAll(dir)
	src := filepath.Join(dir, "mpih.c")
	if err := os.WriteFile(src, []byte("#include <mpi.h>\n"), 0o644); err != nil {
		return "", fmt.Errorf("preprocessing mpi.h: %v", err)
	}
	args := append([]string{}, argv[1:]...)
	args = append(args, "-E")
	for _, d := range includeDirs {
		if d = strings.TrimSpace(d); d != "" {
			args = append(args, "-I"+d)
		}
	}
	args = append(args, src)
	cmd := exec.CommandContext(ctx, argv[0], args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return "", fmt.Errorf("preprocessing mpi.h: compiler %q not found in PATH (use -c to name the MPI compiler wrapper)", argv[0])
		}
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
			return "", fmt.Errorf("preprocessing mpi.h: compiler %q: %v (use -c to name the MPI compiler wrapper)", argv[0], errors.Unwrap(err))
		}
		if ctx.Err() != nil {
			return "", fmt.Errorf("preprocessing mpi.h with %q: %v", compiler, ctx.Err())
		}
		msg := firstLine(stderr.String())
		if msg == "" {
			msg = err.Error()
		} else {
			msg = err.Error() + ": " + msg
		}
		return "", fmt.Errorf("preprocessing mpi.h with %q: %s", compiler, msg)
	}
	return stdout.String(), nil
}

func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return ""
}

// splitCommand splits a command line into words, honouring single quotes,
// double quotes and backslash escapes (outside single quotes).
func splitCommand(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '\'':
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				return nil, fmt.Errorf("unterminated single quote")
			}
			cur.WriteString(s[i+1 : i+1+end])
			i += end + 1
			inWord = true
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`", s[i+1]) >= 0 {
					i++
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, fmt.Errorf("unterminated double quote")
			}
			inWord = true
		case c == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
			inWord = true
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}
