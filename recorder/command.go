package recorder

import (
	"os"
	"strings"
)

// Command returns argv with the launcher options that give every rank the
// environment env (NAME=VALUE entries), and the environment entries the
// command itself needs (for LauncherNone, the whole of env).
//
// The options go where the launcher reads them, after any prefix commands
// (env, nice, ...), into every context of an MPMD command line:
//
//   - Open MPI: `-x NAME=VALUE` at the start of each context (an -x applies
//     to its own context only). When the command line or the environment
//     already uses mca_base_env_list, which Open MPI refuses to mix with -x,
//     the variables are added to that list instead. With --app FILE, which
//     ignores the command line's -x, the variables are also put in
//     mpirun's own environment, which the local ranks inherit.
//   - Hydra: `-genv NAME VALUE` once (global options apply to every
//     context).
//   - srun: `--export=ALL,NAME=VALUE,...` in each component, or the
//     variables added to the component's own --export.
//   - no launcher (a singleton, a script): the environment, which a
//     script's mpirun or mpiexec passes to its local ranks (and Hydra to
//     every node); when the environment holds Open MPI's
//     OMPI_MCA_mca_base_env_list, the variables are added to it too.
func (l Launch) Command(argv []string, env []string) (cmd []string, childEnv []string) {
	at := l.At
	if at < 0 || at >= len(argv) {
		at = 0
	}
	head, words := argv[:at:at], argv[at:]
	switch l.Kind {
	case LauncherOpenMPI:
		cmd, childEnv = openMPICommand(words, env)
	case LauncherHydra:
		cmd = []string{words[0]}
		for _, e := range env {
			name, value, _ := strings.Cut(e, "=")
			cmd = append(cmd, "-genv", name, value)
		}
		cmd = append(cmd, words[1:]...)
	case LauncherSlurm:
		cmd = slurmCommand(words, env)
	default:
		if list, ok := os.LookupEnv(ompiEnvList); ok && list != "" {
			env = append(env[:len(env):len(env)], ompiEnvList+"="+list+ompiEnvListDelimiter(nil)+strings.Join(env, ompiEnvListDelimiter(nil)))
		}
		return argv, env
	}
	return append(head, cmd...), childEnv
}

// Open MPI's MCA parameter listing the variables every rank gets, as an
// environment variable.
const (
	ompiEnvList      = "OMPI_MCA_mca_base_env_list"
	ompiEnvListParam = "mca_base_env_list"
)

// ompiEnvListDelimiter is the delimiter of mca_base_env_list entries, ";"
// unless the command line or the environment sets another.
func ompiEnvListDelimiter(words []string) string {
	if i := mcaValue(words, "mca_base_env_list_delimiter"); i >= 0 {
		return words[i]
	}
	if d := os.Getenv("OMPI_MCA_mca_base_env_list_delimiter"); d != "" {
		return d
	}
	return ";"
}

// mcaValue returns the index of the value of `--mca NAME VALUE` in a
// launcher's words (any context, -mca, --gmca), or -1.
func mcaValue(words []string, name string) int {
	for i := 1; i+2 < len(words); i++ {
		switch strings.TrimLeft(words[i], "-") {
		case "mca", "gmca":
			if words[i+1] == name && strings.HasPrefix(words[i], "-") {
				return i + 2
			}
		}
	}
	return -1
}

func openMPICommand(words, env []string) (cmd, childEnv []string) {
	cmd = append([]string{}, words...)
	delim := ompiEnvListDelimiter(words)
	if i := mcaValue(words, ompiEnvListParam); i >= 0 {
		cmd[i] = strings.Join(append([]string{words[i]}, env...), delim)
		return cmd, nil
	}
	if list := os.Getenv(ompiEnvList); list != "" {
		return cmd, []string{ompiEnvList + "=" + strings.Join(append([]string{list}, env...), delim)}
	}
	var flags []string
	for _, e := range env {
		flags = append(flags, "-x", e)
	}
	cmd = insertInContexts(words, flags)
	if _, ok := optionValue(openMPISyntax, words[1:], "app"); ok {
		childEnv = env
	}
	return cmd, childEnv
}

// insertInContexts returns a launcher's words with flags inserted at the
// start of every context.
func insertInContexts(words, flags []string) []string {
	cmd := []string{words[0]}
	contexts := splitContexts(words[1:])
	for k, ctx := range contexts {
		if k > 0 {
			cmd = append(cmd, ":")
		}
		cmd = append(cmd, flags...)
		cmd = append(cmd, ctx...)
	}
	return cmd
}

// slurmCommand adds the variables to each component's --export (the
// default export list is $SLURM_EXPORT_ENV, else ALL). srun splits
// --export at commas, so the recorder's function lists, which may be
// separated by spaces as well, lose theirs.
func slurmCommand(words, env []string) []string {
	pairs := make([]string, len(env))
	for i, e := range env {
		name, value, _ := strings.Cut(e, "=")
		if name == "MPITRACE_INCLUDE" || name == "MPITRACE_EXCLUDE" {
			e = name + "=" + strings.ReplaceAll(value, ",", " ")
		}
		pairs[i] = e
	}
	base := os.Getenv("SLURM_EXPORT_ENV")
	if base == "" {
		base = "ALL"
	}
	cmd := []string{words[0]}
	contexts := splitContexts(words[1:])
	for k, ctx := range contexts {
		if k > 0 {
			cmd = append(cmd, ":")
		}
		ctx = append([]string{}, ctx...)
		if i := exportValue(ctx); i >= 0 {
			prefix, value := "", ctx[i]
			if v, ok := strings.CutPrefix(value, "--export="); ok {
				prefix, value = "--export=", v
			}
			ctx[i] = prefix + strings.Join(append([]string{value}, pairs...), ",")
			cmd = append(cmd, ctx...)
			continue
		}
		cmd = append(cmd, "--export="+strings.Join(append([]string{base}, pairs...), ","))
		cmd = append(cmd, ctx...)
	}
	return cmd
}

// exportValue returns the index in an srun component of the word holding
// its --export value (--export=VALUE itself, or the word after --export),
// or -1.
func exportValue(ctx []string) int {
	end := srunSyntax.operand(ctx)
	if end < 0 {
		end = len(ctx)
	}
	for i := 0; i < end; i++ {
		switch {
		case strings.HasPrefix(ctx[i], "--export="):
			return i
		case ctx[i] == "--export" && i+1 < end:
			return i + 1
		}
	}
	return -1
}
