package recorder

import (
	"path/filepath"
	"strings"
)

// This file reads command lines the way the commands in them would: which
// words are options, which are their values, and where the command a
// prefix runs (env, nice, numactl, ...) or the application a launcher
// starts begins. It never runs anything.

// optStyle is how a command spells its options.
type optStyle int

const (
	// getoptStyle: -abc clusters, -nVALUE or -n VALUE, --long=VALUE or
	// --long VALUE (GNU getopt_long: the prefix commands, srun).
	getoptStyle optStyle = iota
	// longStyle: -name and --name alike, never clustered (Open MPI's
	// mpirun, MPICH's mpiexec).
	longStyle
)

// syntax describes the options of one command.
type syntax struct {
	style optStyle
	short string   // getopt: the letters whose option takes a value
	long1 []string // long options (no dashes) that take one value
	long2 []string // long options that take two values (--mca NAME VALUE)
	// operands the command takes before the command it runs (taskset's
	// mask, timeout's duration).
	operands int
	// numericOperand: an operand that is a number, when present (chrt's
	// priority).
	numericOperand bool
	// assignments: NAME=VALUE words before the command (env).
	assignments bool
	// stop: options after which no command follows as the next word
	// (env -S splits its value into the command: not followed).
	stop []string
}

// prefixes are the commands that run another command with a changed
// environment, priority, placement or buffering. The launcher may come
// after any number of them: `env X=1 nice -n 5 mpirun ...`.
var prefixes = map[string]*syntax{
	"env": {short: "uCS", long1: []string{"unset", "chdir", "split-string"}, assignments: true,
		stop: []string{"-S", "--split-string"}},
	"nice":  {short: "n", long1: []string{"adjustment"}},
	"nohup": {},
	"time":  {short: "fo", long1: []string{"format", "output"}},
	"numactl": {short: "iwmNCpPLoSfIM", long1: []string{"interleave", "weighted-interleave", "membind", "cpunodebind",
		"physcpubind", "preferred", "preferred-many", "length", "offset", "shm", "file", "shmid", "shmmode"}},
	"stdbuf":  {short: "ioe", long1: []string{"input", "output", "error"}},
	"taskset": {operands: 1},
	"chrt":    {short: "TPD", long1: []string{"sched-runtime", "sched-period", "sched-deadline"}, numericOperand: true},
	"ionice":  {short: "cnpPu", long1: []string{"class", "classdata", "pid", "pgid", "uid"}},
	"setsid":  {},
	"timeout": {short: "sk", long1: []string{"signal", "kill-after"}, operands: 1},
}

// Launcher options that take values, so that the application is the first
// word that is neither an option nor an option's value. Options not listed
// are taken to have no value.
var (
	openMPISyntax = &syntax{style: longStyle,
		long1: []string{"np", "n", "c", "H", "host", "hostfile", "machinefile", "default-hostfile", "x", "am", "tune",
			"app", "wdir", "wd", "path", "prefix", "preload-files", "npernode", "N", "npersocket", "map-by", "rank-by",
			"bind-to", "cpus-per-proc", "cpus-per-rank", "output-filename", "stdin", "xterm", "timeout", "report-uri",
			"report-pid", "ompi-server", "max-vm-size", "cpu-set", "slot-list", "rankfile", "rf", "personality",
			"launch-agent", "output", "ppr", "s", "server-wait-time"},
		long2: []string{"mca", "gmca", "pmixmca"}}
	hydraSyntax = &syntax{style: longStyle,
		long1: []string{"n", "np", "f", "hostfile", "machinefile", "hosts", "host", "ppn", "wdir", "configfile",
			"launcher", "launcher-exec", "rmk", "bind-to", "binding", "map-by", "topolib", "membind", "iface",
			"nameserver", "errfile-pattern", "outfile-pattern", "prepend-pattern", "gpus-per-proc", "genvlist",
			"envlist", "usize", "demux"},
		long2: []string{"genv", "env"}}
	srunSyntax = &syntax{short: "AbBcCDdeGiJLMmNnopqrSTtWwx",
		long1: []string{"account", "begin", "chdir", "dependency", "error", "input", "job-name", "licenses", "clusters",
			"distribution", "nodes", "ntasks", "output", "partition", "qos", "relative", "core-spec", "threads",
			"time", "wait", "nodelist", "exclude", "gpus", "extra-node-info", "constraint", "cpus-per-task", "mem",
			"mem-per-cpu", "mem-per-gpu", "gres", "gpus-per-node", "gpus-per-task", "ntasks-per-node",
			"ntasks-per-core", "ntasks-per-socket", "mpi", "export", "cpu-bind", "reservation", "comment",
			"network", "prolog", "epilog", "task-prolog", "task-epilog", "signal", "time-min", "tmp", "uid",
			"gid", "wckey", "cpu-freq", "hint", "mem-bind", "switches", "thread-spec", "het-group", "container",
			"accel-bind", "cores-per-socket", "sockets-per-node", "threads-per-core", "mail-type", "mail-user"}}
)

func (s *syntax) has(list []string, name string) bool {
	for _, n := range list {
		if n == name {
			return true
		}
	}
	return false
}

// option reports how many words the option word a consumes after itself
// (0, 1 or 2), and whether a stops the reading (see syntax.stop).
func (s *syntax) option(a string) (values int, stop bool) {
	if s.has(s.stop, a) || strings.HasPrefix(a, "--") && s.has(s.stop, strings.SplitN(a, "=", 2)[0]) {
		return 0, true
	}
	if s.style == longStyle || strings.HasPrefix(a, "--") {
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		switch {
		case hasValue:
			return 0, false
		case s.has(s.long2, name):
			return 2, false
		case s.has(s.long1, name):
			return 1, false
		}
		return 0, false
	}
	// A getopt cluster: the first letter that takes a value takes the
	// rest of the word, or the next word when it is the last letter.
	for i := 1; i < len(a); i++ {
		if strings.IndexByte(s.short, a[i]) >= 0 {
			if i == len(a)-1 {
				return 1, false
			}
			return 0, false
		}
	}
	return 0, false
}

// operand returns the index in args of the first word that is neither an
// option nor an option's value; -1 when there is none (or the syntax cannot
// be followed).
func (s *syntax) operand(args []string) int {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			if i+1 < len(args) {
				return i + 1
			}
			return -1
		}
		if len(a) < 2 || a[0] != '-' {
			return i
		}
		n, stop := s.option(a)
		if stop {
			return -1
		}
		i += n
	}
	return -1
}

// command returns the index in args (the words after the prefix command's
// own name) of the command the prefix runs, or -1.
func (s *syntax) command(args []string) int {
	i := s.operand(args)
	if i < 0 {
		return -1
	}
	for k := 0; k < s.operands; k++ {
		next := s.operand(args[i+1:])
		if next < 0 {
			return -1
		}
		i += 1 + next
	}
	if s.numericOperand && isNumber(args[i]) {
		next := s.operand(args[i+1:])
		if next < 0 {
			return -1
		}
		i += 1 + next
	}
	if s.assignments {
		for i < len(args) && isAssignment(args[i]) {
			i++
		}
		if i == len(args) {
			return -1
		}
	}
	return i
}

func isNumber(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// isAssignment reports whether w is a NAME=VALUE word.
func isAssignment(w string) bool {
	name, _, ok := strings.Cut(w, "=")
	if !ok || name == "" {
		return false
	}
	for i, c := range name {
		if c != '_' && (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// skipPrefixes returns the index in argv of the first word that is not a
// prefix command, its options or operands, and the prefix commands passed
// (by base name). The index is len(argv) when the prefixes run nothing, or
// when a prefix's options cannot be followed.
func skipPrefixes(argv []string) (int, []string) {
	var seen []string
	i := 0
	for i < len(argv) {
		name := filepath.Base(argv[i])
		s, ok := prefixes[name]
		if !ok {
			break
		}
		seen = append(seen, name)
		next := s.command(argv[i+1:])
		if next < 0 {
			return len(argv), seen
		}
		i += 1 + next
	}
	return i, seen
}

// splitContexts splits a launcher's arguments (after its name) into MPMD
// contexts at the ":" words: `-np 1 ./a : -np 2 ./b`.
func splitContexts(args []string) [][]string {
	var contexts [][]string
	start := 0
	for i, a := range args {
		if a == ":" {
			contexts = append(contexts, args[start:i])
			start = i + 1
		}
	}
	return append(contexts, args[start:])
}

// contextApp returns the application word of one launcher context (after
// the launcher's options and any prefix commands, as in `mpirun -np 2
// numactl -N 0 ./app`), and the rest of the context after it; "" when
// there is none.
func contextApp(s *syntax, ctx []string) (string, []string) {
	i := s.operand(ctx)
	if i < 0 {
		return "", nil
	}
	j, _ := skipPrefixes(ctx[i:])
	if i+j >= len(ctx) {
		return "", nil
	}
	return ctx[i+j], ctx[i+j+1:]
}

// optionValue returns the value of a launcher option in a context (the
// last one given), e.g. --app FILE; ok is false when it is absent.
func optionValue(s *syntax, ctx []string, names ...string) (string, bool) {
	value, found := "", false
	for i := 0; i < len(ctx); i++ {
		a := ctx[i]
		if a == "--" || len(a) < 2 || a[0] != '-' {
			break
		}
		name, v, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		n, _ := s.option(a)
		if s.has(names, name) {
			switch {
			case hasValue:
				value, found = v, true
			case n >= 1 && i+1 < len(ctx):
				value, found = ctx[i+1], true
			}
		}
		i += n
	}
	return value, found
}
