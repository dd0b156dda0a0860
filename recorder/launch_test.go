package recorder

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The launcher is found after any number of prefix commands, with their
// options and operands.
func TestSkipPrefixes(t *testing.T) {
	for _, tc := range []struct {
		cmd      string
		at       int
		prefixes string
	}{
		{"mpirun -np 2 ./a", 0, ""},
		{"env X=1 mpirun.mpich -n 2 ./a", 2, "env"},
		{"env -i -u X -- A=B mpirun", 6, "env"},
		{"env -u X A=B -i mpirun", 4, "env"}, // -i is the command: env stops at A=B
		{"env --unset X --chdir=/tmp mpirun", 4, "env"},
		{"/usr/bin/env -S 'mpirun -np 2'", 5, "env"}, // -S splits its value: not followed
		{"time -p mpirun", 2, "time"},
		{"time -f %e -o t.txt mpirun", 5, "time"},
		{"nice -n 5 mpirun", 3, "nice"},
		{"nice -n5 mpirun", 2, "nice"},
		{"nice -5 mpirun", 2, "nice"},
		{"nice --adjustment 5 mpirun", 3, "nice"},
		{"numactl --cpunodebind=0 --membind 0 -l mpirun", 5, "numactl"},
		{"numactl -N 0 -C0-3 mpirun", 4, "numactl"},
		{"stdbuf -oL -e 0 mpirun", 4, "stdbuf"},
		{"taskset -c 0-3 mpirun", 3, "taskset"},
		{"taskset 0x3 mpirun", 2, "taskset"},
		{"chrt -o 0 mpirun", 3, "chrt"},
		{"chrt --batch mpirun", 2, "chrt"},
		{"chrt -T 100 -P 200 -d 5 mpirun", 7, "chrt"},
		{"ionice -c 2 -n 7 mpirun", 5, "ionice"},
		{"ionice -c2 -t mpirun", 3, "ionice"},
		{"setsid -w mpirun", 2, "setsid"},
		{"nohup mpirun", 1, "nohup"},
		{"timeout -k 5 -s INT 10m mpirun", 6, "timeout"},
		{"env X=1 nice -n 5 numactl -N 0 time stdbuf -oL setsid -w mpirun -np 2 ./a", 13, "env nice numactl time stdbuf setsid"},
		{"env X=1", 2, "env"}, // runs nothing
	} {
		argv := strings.Fields(tc.cmd)
		at, pre := skipPrefixes(argv)
		if at != tc.at || strings.Join(pre, " ") != tc.prefixes {
			t.Errorf("%s: command at %d after %q, want %d after %q", tc.cmd, at, pre, tc.at, tc.prefixes)
		}
	}
}

// The application of a launcher context is the first word that is no
// option, no option's value and no prefix command.
func TestContextApp(t *testing.T) {
	for _, tc := range []struct {
		s    *syntax
		ctx  string
		want string
	}{
		{openMPISyntax, "-np 2 ./a x", "./a"},
		{openMPISyntax, "--mca btl self,tcp -x FOO -x BAR=1 --host a,b --oversubscribe ./a", "./a"},
		{openMPISyntax, "-np 2 --map-by ppr:1:node numactl -N 0 ./a", "./a"},
		{openMPISyntax, "-np 2 env OMP_NUM_THREADS=2 ./a", "./a"},
		{hydraSyntax, "-genv A 1 -n 2 -ppn 1 -l ./a", "./a"},
		{hydraSyntax, "-np 2 -- ./a", "./a"},
		{srunSyntax, "-n 4 -N2 --mpi=pmix --ntasks-per-node 2 -l ./a", "./a"},
		{openMPISyntax, "-np 2", ""},
	} {
		if got, _ := contextApp(tc.s, strings.Fields(tc.ctx)); got != tc.want {
			t.Errorf("%s: app %q, want %q", tc.ctx, got, tc.want)
		}
	}
}

// Scripts are read, not run: simple commands, with the variables the
// script assigns literal values to.
func TestParseShell(t *testing.T) {
	script := `#!/bin/bash
# comment: mpirun.mpich -np 2 ./not-this
set -euo pipefail
export NP=4 HOSTS=a,b
MPIRUN=${MPIRUN:-mpirun.mpich}
DIR="$(dirname "$0")"
cat <<EOF > log
mpirun -np 99 ./not-this-either
EOF
if [ -x ./app ]; then
  time $MPIRUN -np "$NP" \
      --hosts $HOSTS ./app 'a b' 2>&1 | tee out.txt
fi
srun -n $SLURM_NTASKS ./x && echo done; ` + "`hostname`" + `
echo "${UNSET_VAR}" $((NP*2))
`
	vars := shellVars{}
	var got []string
	line := 0
	for _, c := range parseShell(script) {
		words := vars.commandWords(c)
		if len(words) == 0 {
			continue
		}
		got = append(got, strings.Join(words, "|"))
		if words[0] == "mpirun.mpich" {
			line = c.line
		}
	}
	for _, want := range []string{"set|-euo|pipefail", "cat", "[|-x|./app|]", "mpirun.mpich|-np|4|--hosts|a,b|./app|a b",
		"tee|out.txt", "srun|-n|$?|./x", "echo|done", "hostname", "echo|$?|$?"} {
		if !slices.Contains(got, want) {
			t.Errorf("no command %q in\n%s", want, strings.Join(got, "\n"))
		}
	}
	for _, c := range got {
		if strings.Contains(c, "not-this") {
			t.Errorf("a comment or a here-document was read as a command: %s", c)
		}
	}
	if vars["NP"] != "4" || vars["MPIRUN"] != "mpirun.mpich" {
		t.Errorf("variables: %v", vars)
	}
	if _, ok := vars["DIR"]; ok {
		t.Errorf("DIR is not known without running the script: %v", vars)
	}
	if line != 11 {
		t.Errorf("the launcher is on line %d, want 11", line)
	}
}

// mpiPrograms compiles a tiny MPI program with each installed MPI.
func mpiPrograms(t *testing.T) (dir, openmpi, mpich string) {
	t.Helper()
	dir = t.TempDir()
	src := filepath.Join(dir, "a.c")
	os.WriteFile(src, []byte("#include <mpi.h>\nint main(int c, char **v) { MPI_Init(&c, &v); MPI_Finalize(); return 0; }\n"), 0o644)
	for _, p := range []struct{ cc, out string }{{"mpicc.openmpi", "ompi_app"}, {"mpicc.mpich", "mpich_app"}} {
		if out, err := exec.Command(p.cc, "-o", filepath.Join(dir, p.out), src).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", p.cc, err, out)
		}
	}
	return dir, filepath.Join(dir, "ompi_app"), filepath.Join(dir, "mpich_app")
}

// The MPI comes from the applications of every context, of every job a
// script starts, else from the launcher.
func TestDetectLaunchFindsTheMPI(t *testing.T) {
	dir, ompi, mpich := mpiPrograms(t)
	notMPI, _ := exec.LookPath("true")
	// A stand-in srun: srun is not installed here, and is only looked up.
	bin := t.TempDir()
	os.WriteFile(filepath.Join(bin, "srun"), []byte("#!/bin/sh\nexit 1\n"), 0o755)
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	conf := filepath.Join(dir, "multi.conf")
	os.WriteFile(conf, []byte("# rank program args\n0 "+notMPI+"\n1-3 "+mpich+" -v\n"), 0o644)
	script := filepath.Join(dir, "run.sh")
	os.WriteFile(script, []byte("#!/usr/bin/env bash\nLAUNCH=mpirun.mpich\nexec env A=1 $LAUNCH -n 2 \"$@\"\n"), 0o755)
	both := filepath.Join(dir, "both.sh")
	os.WriteFile(both, []byte("#!/bin/sh\nmpirun.openmpi -np 2 "+ompi+"\nmpirun.mpich -np 2 "+mpich+"\n"), 0o755)
	for _, tc := range []struct {
		name    string
		argv    []string
		kind    LauncherKind
		flavor  Flavor
		apps    int
		script  string
		warning string
	}{
		{"mpmd", []string{"mpirun.openmpi", "-np", "1", notMPI, ":", "-np", "2", ompi}, LauncherOpenMPI, FlavorOpenMPI, 2, "", ""},
		{"mpmd-mpich", []string{"env", "X=1", "mpiexec.mpich", "-n", "1", notMPI, ":", "-n", "2", mpich}, LauncherHydra, FlavorMPICH, 2, "", ""},
		{"mpmd-two-mpis", []string{"mpirun.openmpi", "-np", "1", ompi, ":", "-np", "2", mpich}, LauncherOpenMPI, FlavorOpenMPI, 2, "",
			"two MPIs: " + ompi + " is linked against Open MPI, " + mpich + " against MPICH"},
		{"wrong-launcher", []string{"nice", "mpirun.openmpi", "-np", "2", mpich}, LauncherOpenMPI, FlavorMPICH, 1, "",
			mpich + " is linked against MPICH but mpirun.openmpi is Open MPI's launcher"},
		{"multi-prog", []string{"srun", "-n", "4", "--multi-prog", conf}, LauncherSlurm, FlavorMPICH, 2, "", ""},
		{"script", []string{"nice", script, "./app"}, LauncherNone, FlavorMPICH, 0, script + ":3", ""},
		{"bash-c", []string{"bash", "-ec", "cd /tmp && mpirun.mpich -n 2 ./x"}, LauncherNone, FlavorMPICH, 0, "sh -c:1", ""},
		{"script-two-mpis", []string{"sh", both}, LauncherNone, FlavorOpenMPI, 2, both + ":2",
			"two MPIs: " + ompi + " (" + both + ":2) is linked against Open MPI, " + mpich + " (" + both + ":3) against MPICH"},
		{"singleton", []string{"env", "-i", mpich}, LauncherNone, FlavorMPICH, 1, "", ""},
		{"unknown-option", []string{"mpirun.openmpi", "--new-option", "5", mpich, "x"}, LauncherOpenMPI, FlavorMPICH, 1, "",
			mpich + " is linked against MPICH but mpirun.openmpi is Open MPI's launcher"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := DetectLaunch(context.Background(), tc.argv, "")
			if l.Kind != tc.kind || l.Flavor != tc.flavor || len(l.Apps) != tc.apps || l.Script != tc.script {
				t.Errorf("kind %q flavor %q apps %q script %q; want %q %q %d apps, script %q", l.Kind, l.Flavor, l.Apps, l.Script,
					tc.kind, tc.flavor, tc.apps, tc.script)
			}
			if !strings.Contains(l.Warning, tc.warning) || (tc.warning == "") != (l.Warning == "") {
				t.Errorf("warning %q, want %q", l.Warning, tc.warning)
			}
			if tc.flavor == FlavorMPICH && !strings.Contains(l.MPICC, "mpich") {
				t.Errorf("compiler %q for MPICH", l.MPICC)
			}
		})
	}
}

// Command puts the environment where each launcher passes it on: after the
// prefixes, into every context.
func TestCommandContexts(t *testing.T) {
	t.Setenv(ompiEnvList, "")
	t.Setenv("SLURM_EXPORT_ENV", "")
	env := []string{"LD_PRELOAD=/x/lib.so", "MPITRACE_INCLUDE=MPI_Send,MPI_Recv"}
	for _, tc := range []struct {
		name string
		l    Launch
		argv string
		want string
		cenv string
	}{
		{"openmpi-mpmd", Launch{Kind: LauncherOpenMPI, At: 2}, "env X=1 mpirun -np 1 ./a : -np 2 ./b",
			"env X=1 mpirun -x LD_PRELOAD=/x/lib.so -x MPITRACE_INCLUDE=MPI_Send,MPI_Recv -np 1 ./a : -x LD_PRELOAD=/x/lib.so -x MPITRACE_INCLUDE=MPI_Send,MPI_Recv -np 2 ./b", ""},
		{"openmpi-env-list", Launch{Kind: LauncherOpenMPI}, "mpirun --mca mca_base_env_list FOO;BAR=1 -np 2 ./a",
			"mpirun --mca mca_base_env_list FOO;BAR=1;LD_PRELOAD=/x/lib.so;MPITRACE_INCLUDE=MPI_Send,MPI_Recv -np 2 ./a", ""},
		{"openmpi-app", Launch{Kind: LauncherOpenMPI}, "mpirun --app apps.txt",
			"mpirun -x LD_PRELOAD=/x/lib.so -x MPITRACE_INCLUDE=MPI_Send,MPI_Recv --app apps.txt", strings.Join(env, " ")},
		{"hydra-mpmd", Launch{Kind: LauncherHydra, At: 1}, "nice mpiexec -n 1 ./a : -n 2 ./b",
			"nice mpiexec -genv LD_PRELOAD /x/lib.so -genv MPITRACE_INCLUDE MPI_Send,MPI_Recv -n 1 ./a : -n 2 ./b", ""},
		{"srun", Launch{Kind: LauncherSlurm}, "srun -n 2 ./a",
			"srun --export=ALL,LD_PRELOAD=/x/lib.so,MPITRACE_INCLUDE=MPI_Send MPI_Recv -n 2 ./a", ""},
		{"srun-multi-prog", Launch{Kind: LauncherSlurm, At: 1}, "time srun -n 4 --multi-prog multi.conf",
			"time srun --export=ALL,LD_PRELOAD=/x/lib.so,MPITRACE_INCLUDE=MPI_Send MPI_Recv -n 4 --multi-prog multi.conf", ""},
		{"srun-export", Launch{Kind: LauncherSlurm}, "srun --export=NONE,FOO -n 2 ./a : --export HOME -n 1 ./b",
			"srun --export=NONE,FOO,LD_PRELOAD=/x/lib.so,MPITRACE_INCLUDE=MPI_Send MPI_Recv -n 2 ./a : --export HOME,LD_PRELOAD=/x/lib.so,MPITRACE_INCLUDE=MPI_Send MPI_Recv -n 1 ./b", ""},
		{"none", Launch{Kind: LauncherNone, At: 1}, "nice ./run.sh", "nice ./run.sh", strings.Join(env, " ")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			argv := strings.Fields(tc.argv)
			if tc.name == "openmpi-env-list" {
				argv[3] = "FOO;BAR=1"
			}
			cmd, cenv := tc.l.Command(argv, env)
			if got := strings.Join(cmd, " "); got != tc.want {
				t.Errorf("command\n%s\nwant\n%s", got, tc.want)
			}
			if got := strings.Join(cenv, " "); got != tc.cenv {
				t.Errorf("environment %q, want %q", got, tc.cenv)
			}
			if strings.Join(argv, " ") != tc.argv {
				t.Errorf("Command changed its argument: %v", argv)
			}
		})
	}
	// Environments that already use Open MPI's list: -x would make
	// mpirun refuse to run.
	t.Setenv(ompiEnvList, "FOO")
	t.Setenv("SLURM_EXPORT_ENV", "NONE")
	cmd, cenv := Launch{Kind: LauncherOpenMPI}.Command([]string{"mpirun", "-np", "2", "./a"}, env)
	if strings.Join(cmd, " ") != "mpirun -np 2 ./a" || strings.Join(cenv, " ") != ompiEnvList+"=FOO;LD_PRELOAD=/x/lib.so;MPITRACE_INCLUDE=MPI_Send,MPI_Recv" {
		t.Errorf("Open MPI with %s set: %v %v", ompiEnvList, cmd, cenv)
	}
	cmd, cenv = Launch{Kind: LauncherNone}.Command([]string{"./run.sh"}, env)
	if len(cmd) != 1 || len(cenv) != 3 || cenv[2] != ompiEnvList+"=FOO;LD_PRELOAD=/x/lib.so;MPITRACE_INCLUDE=MPI_Send,MPI_Recv" {
		t.Errorf("script with %s set: %v %v", ompiEnvList, cmd, cenv)
	}
	cmd, _ = Launch{Kind: LauncherSlurm}.Command([]string{"srun", "./a"}, env)
	if cmd[1] != "--export=NONE,LD_PRELOAD=/x/lib.so,MPITRACE_INCLUDE=MPI_Send MPI_Recv" {
		t.Errorf("srun with SLURM_EXPORT_ENV=NONE: %v", cmd)
	}
}
