/*
 * mpitrace-calibrate: the latency benchmark behind `mpitrace calibrate`.
 *
 * Rank 0 writes one record per line on stdout (format version 1):
 *
 *   mpitrace-calibrate version=1 procs=4 cpus=2 host="node01" mpi="Open MPI v4.1.4, ..."
 *   config p2p_min=4 p2p_max=4194304 coll_min=4 coll_max=65536 reps=10000 min_reps=3 trials=5 max_procs=4 target_us=5000 collectives="MPI_Barrier,..."
 *   p2p bytes=4 procs=2 reps=5000 ns=412.3
 *   coll name=MPI_Allreduce bytes=64 procs=4 reps=800 ns=2210.8
 *   ...
 *   end points=123
 *
 * Strings are quoted with C/Go escapes (\" \\ \n \t \xHH). Errors go to
 * stderr as one line starting with "mpitrace-calibrate: ", and the exit
 * status is non-zero.
 *
 * Point-to-point: ranks 0 and 1 ping-pong (0 sends then receives, 1 receives
 * then sends); one-way latency = batch time / reps / 2, the median over the
 * trials. Collectives: for each process count p, the first p ranks form a
 * sub-communicator (MPI_Comm_split) and time batches of the collective; the
 * others wait at a barrier. A batch starts after a barrier; its per-call
 * time is the maximum over the ranks of the sub-communicator; the point is
 * the median over the trials.
 *
 * Before the trials, a warm-up doubles the number of calls until a batch
 * lasts a quarter of the target time (or reaches the maximum repetitions);
 * its fastest per-call time sets the repetitions of the timed batches so
 * each lasts about the target time, clamped to [min_reps, reps]. A batch
 * that lasts more than twice the target re-plans the batches after it.
 * The reps field of a point is the repetitions of its last batch. Large messages
 * therefore run few repetitions and the whole run stays short.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define FORMAT_VERSION 1

enum {
	C_BARRIER,
	C_BCAST,
	C_SCATTER,
	C_GATHER,
	C_REDUCE,
	C_ALLREDUCE,
	C_ALLGATHER,
	C_ALLTOALL,
	NCOLL
};

static const char *coll_names[NCOLL] = {
	"MPI_Barrier", "MPI_Bcast",     "MPI_Scatter",   "MPI_Gather",
	"MPI_Reduce",  "MPI_Allreduce", "MPI_Allgather", "MPI_Alltoall",
};

static struct {
	long long p2p_min, p2p_max, coll_min, coll_max;
	long long reps, min_reps, trials, max_procs, target_us;
	int colls[NCOLL];
} cfg = {4, 4LL << 20, 4, 64LL << 10, 10000, 3, 5, 0, 5000, {1, 1, 1, 1, 1, 1, 1, 1}};

static int world_rank, world_size;
static long long npoints;

static void fail(const char *msg, const char *arg)
{
	if (world_rank == 0) {
		fprintf(stderr, "mpitrace-calibrate: %s%s\n", msg, arg ? arg : "");
		fflush(stderr);
	}
}

/* ---- output ---- */

static void put_quoted(const char *s)
{
	putchar('"');
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		switch (*p) {
		case '"': fputs("\\\"", stdout); break;
		case '\\': fputs("\\\\", stdout); break;
		case '\n': fputs("\\n", stdout); break;
		case '\t': fputs("\\t", stdout); break;
		default:
			if (*p < 0x20 || *p >= 0x7f)
				printf("\\x%02x", *p);
			else
				putchar(*p);
		}
	}
	putchar('"');
}

/* ---- flags ---- */

static int parse_count(const char *flag, const char *v, long long lo, long long hi, long long *out)
{
	char *end;
	long long x;
	if (!v) {
		fail("missing value for ", flag);
		return -1;
	}
	x = strtoll(v, &end, 10);
	if (*v == '\0' || *end != '\0' || x < lo || x > hi) {
		if (world_rank == 0)
			fprintf(stderr, "mpitrace-calibrate: %s %s: want an integer in [%lld, %lld]\n", flag, v, lo, hi);
		return -1;
	}
	*out = x;
	return 0;
}

static int parse_colls(const char *v)
{
	char buf[1024];
	if (!v) {
		fail("missing value for ", "--collectives");
		return -1;
	}
	if (strlen(v) >= sizeof buf) {
		fail("--collectives: list too long", NULL);
		return -1;
	}
	memset(cfg.colls, 0, sizeof cfg.colls);
	if (strcmp(v, "none") == 0 || *v == '\0')
		return 0;
	strcpy(buf, v);
	for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
		const char *name = tok;
		int found = 0;
		if (strncasecmp(name, "MPI_", 4) == 0)
			name += 4;
		for (int c = 0; c < NCOLL; c++) {
			if (strcasecmp(name, coll_names[c] + 4) == 0) {
				cfg.colls[c] = 1;
				found = 1;
			}
		}
		if (!found) {
			fail("--collectives: unknown collective ", tok);
			return -1;
		}
	}
	return 0;
}

static int parse_flags(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const char *f = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		long long *dst = NULL, lo = 1, hi = 1LL << 30;
		if (strcmp(f, "--p2p-min") == 0)
			dst = &cfg.p2p_min;
		else if (strcmp(f, "--p2p-max") == 0)
			dst = &cfg.p2p_max;
		else if (strcmp(f, "--coll-min") == 0)
			dst = &cfg.coll_min;
		else if (strcmp(f, "--coll-max") == 0)
			dst = &cfg.coll_max, hi = 1LL << 28;
		else if (strcmp(f, "--reps") == 0)
			dst = &cfg.reps, hi = 100000000;
		else if (strcmp(f, "--min-reps") == 0)
			dst = &cfg.min_reps, hi = 100000000;
		else if (strcmp(f, "--trials") == 0)
			dst = &cfg.trials, hi = 1000;
		else if (strcmp(f, "--max-procs") == 0)
			dst = &cfg.max_procs, lo = 0, hi = 1 << 24;
		else if (strcmp(f, "--target-us") == 0)
			dst = &cfg.target_us, hi = 60000000;
		else if (strcmp(f, "--collectives") == 0) {
			if (parse_colls(v) != 0)
				return -1;
			i++;
			continue;
		} else {
			fail("unknown flag ", f);
			return -1;
		}
		if (parse_count(f, v, lo, hi, dst) != 0)
			return -1;
		i++;
	}
	if (cfg.p2p_max < cfg.p2p_min) {
		fail("--p2p-max is smaller than --p2p-min", NULL);
		return -1;
	}
	if (cfg.coll_max < cfg.coll_min) {
		fail("--coll-max is smaller than --coll-min", NULL);
		return -1;
	}
	if (cfg.reps < cfg.min_reps) {
		fail("--reps is smaller than --min-reps", NULL);
		return -1;
	}
	if (cfg.max_procs == 0 || cfg.max_procs > world_size)
		cfg.max_procs = world_size;
	if (cfg.max_procs < 2) {
		fail("--max-procs must be at least 2", NULL);
		return -1;
	}
	return 0;
}

/* ---- timing ---- */

typedef struct {
	MPI_Comm comm;
	int rank, size;
	int coll;
	long long bytes;
	char *sbuf, *rbuf;
} op_ctx;

typedef void (*op_fn)(op_ctx *, long long reps);

static void op_pingpong(op_ctx *c, long long reps)
{
	int n = (int)c->bytes;
	for (long long i = 0; i < reps; i++) {
		if (c->rank == 0) {
			MPI_Send(c->sbuf, n, MPI_BYTE, 1, 7, c->comm);
			MPI_Recv(c->rbuf, n, MPI_BYTE, 1, 7, c->comm, MPI_STATUS_IGNORE);
		} else {
			MPI_Recv(c->rbuf, n, MPI_BYTE, 0, 7, c->comm, MPI_STATUS_IGNORE);
			MPI_Send(c->sbuf, n, MPI_BYTE, 0, 7, c->comm);
		}
	}
}

static void op_coll(op_ctx *c, long long reps)
{
	int n = (int)c->bytes;
	MPI_Comm comm = c->comm;
	for (long long i = 0; i < reps; i++) {
		switch (c->coll) {
		case C_BARRIER: MPI_Barrier(comm); break;
		case C_BCAST: MPI_Bcast(c->sbuf, n, MPI_BYTE, 0, comm); break;
		case C_SCATTER: MPI_Scatter(c->sbuf, n, MPI_BYTE, c->rbuf, n, MPI_BYTE, 0, comm); break;
		case C_GATHER: MPI_Gather(c->sbuf, n, MPI_BYTE, c->rbuf, n, MPI_BYTE, 0, comm); break;
		case C_REDUCE: MPI_Reduce(c->sbuf, c->rbuf, n / 4, MPI_INT, MPI_SUM, 0, comm); break;
		case C_ALLREDUCE: MPI_Allreduce(c->sbuf, c->rbuf, n / 4, MPI_INT, MPI_SUM, comm); break;
		case C_ALLGATHER: MPI_Allgather(c->sbuf, n, MPI_BYTE, c->rbuf, n, MPI_BYTE, comm); break;
		case C_ALLTOALL: MPI_Alltoall(c->sbuf, n, MPI_BYTE, c->rbuf, n, MPI_BYTE, comm); break;
		}
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/*
 * measure runs op on every rank of c->comm and returns, on rank 0 of the
 * communicator, the median over the trials of the per-call time in seconds:
 * the maximum over the ranks when use_max, else rank 0's own time.
 */
static double measure(op_ctx *c, op_fn op, int use_max, long long *reps_out, double *trials)
{
	double target = (double)cfg.target_us * 1e-6, est = -1, t0, el, mx;
	long long k = 1, reps;

	/* Noise (a descheduled rank, a cold first call) only ever makes a
	 * batch slower: the estimate is the fastest per-call time seen, and a
	 * single slow batch cannot end the warm-up before its third step. */
	for (int step = 1;; step++) {
		MPI_Barrier(c->comm);
		t0 = MPI_Wtime();
		op(c, k);
		el = MPI_Wtime() - t0;
		MPI_Allreduce(MPI_IN_PLACE, &el, 1, MPI_DOUBLE, MPI_MAX, c->comm);
		if (est < 0 || el / (double)k < est)
			est = el / (double)k;
		if ((el >= target / 4 && step >= 3) || k >= cfg.reps)
			break;
		k *= 2;
		if (k > cfg.reps)
			k = cfg.reps;
	}
	reps = cfg.reps;
	if (est > 0 && target / est < (double)cfg.reps)
		reps = (long long)(target / est);
	if (reps < cfg.min_reps)
		reps = cfg.min_reps;
	for (long long t = 0; t < cfg.trials; t++) {
		MPI_Barrier(c->comm);
		t0 = MPI_Wtime();
		op(c, reps);
		el = (MPI_Wtime() - t0) / (double)reps;
		mx = el;
		MPI_Allreduce(&el, &mx, 1, MPI_DOUBLE, MPI_MAX, c->comm);
		trials[t] = use_max ? mx : el;
		/* A batch far slower than planned (the warm-up was lucky, or the
		 * machine got busy): plan the next ones from this one, so a noisy
		 * machine cannot stretch the run. Every rank has the same mx. */
		if (mx * (double)reps > 2 * target && reps > cfg.min_reps) {
			reps = (long long)(target / mx);
			if (reps < cfg.min_reps)
				reps = cfg.min_reps;
		}
	}
	*reps_out = reps;
	if (c->rank != 0)
		return 0;
	qsort(trials, (size_t)cfg.trials, sizeof *trials, cmp_double);
	if (cfg.trials % 2)
		return trials[cfg.trials / 2];
	return (trials[cfg.trials / 2 - 1] + trials[cfg.trials / 2]) / 2;
}

static void bench_p2p(char *sbuf, char *rbuf, double *trials)
{
	MPI_Comm pair;
	MPI_Comm_split(MPI_COMM_WORLD, world_rank < 2 ? 0 : MPI_UNDEFINED, world_rank, &pair);
	if (pair != MPI_COMM_NULL) {
		op_ctx c = {pair, world_rank, 2, -1, 0, sbuf, rbuf};
		for (long long b = cfg.p2p_min; b <= cfg.p2p_max; b *= 2) {
			long long reps;
			double t;
			c.bytes = b;
			t = measure(&c, op_pingpong, 0, &reps, trials);
			if (world_rank == 0) {
				printf("p2p bytes=%lld procs=2 reps=%lld ns=%.1f\n", b, reps, t / 2 * 1e9);
				fflush(stdout);
				npoints++;
			}
		}
		MPI_Comm_free(&pair);
	}
	MPI_Barrier(MPI_COMM_WORLD);
}

static void bench_coll_procs(int p, char *sbuf, char *rbuf, double *trials)
{
	MPI_Comm sub;
	MPI_Comm_split(MPI_COMM_WORLD, world_rank < p ? 0 : MPI_UNDEFINED, world_rank, &sub);
	if (sub != MPI_COMM_NULL) {
		op_ctx c = {sub, world_rank, p, 0, 0, sbuf, rbuf};
		for (int k = 0; k < NCOLL; k++) {
			if (!cfg.colls[k])
				continue;
			c.coll = k;
			for (long long b = cfg.coll_min; b <= cfg.coll_max; b *= 2) {
				long long reps, bytes = b;
				double t;
				if (k == C_BARRIER) {
					bytes = 0;
				} else if (k == C_REDUCE || k == C_ALLREDUCE) {
					/* MPI_INT elements: whole multiples of 4 bytes. */
					if (b < 4)
						continue;
					bytes = b / 4 * 4;
				}
				c.bytes = bytes;
				t = measure(&c, op_coll, 1, &reps, trials);
				if (world_rank == 0) {
					printf("coll name=%s bytes=%lld procs=%d reps=%lld ns=%.1f\n", coll_names[k], bytes, p, reps,
					       t * 1e9);
					fflush(stdout);
					npoints++;
				}
				if (k == C_BARRIER)
					break;
			}
		}
		MPI_Comm_free(&sub);
	}
	MPI_Barrier(MPI_COMM_WORLD);
}

/* next_procs: every count up to 8, then powers of two, then max_procs. */
static int next_procs(int p)
{
	int n = p < 8 ? p + 1 : p * 2;
	if (p < cfg.max_procs && n > cfg.max_procs)
		n = (int)cfg.max_procs;
	return n;
}

int main(int argc, char **argv)
{
	char host[MPI_MAX_PROCESSOR_NAME + 1] = "", lib[MPI_MAX_LIBRARY_VERSION_STRING + 1] = "";
	int len = 0, any = 0;
	size_t bufsize;
	char *sbuf, *rbuf;
	double *trials;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
	MPI_Comm_size(MPI_COMM_WORLD, &world_size);
	if (world_size < 2) {
		fail("needs at least 2 processes (run it under a launcher, e.g. mpirun -np 2)", NULL);
		MPI_Finalize();
		return 2;
	}
	if (parse_flags(argc, argv) != 0) {
		MPI_Finalize();
		return 2;
	}
	bufsize = (size_t)cfg.p2p_max;
	if ((size_t)cfg.coll_max * (size_t)cfg.max_procs > bufsize)
		bufsize = (size_t)cfg.coll_max * (size_t)cfg.max_procs;
	sbuf = malloc(bufsize);
	rbuf = malloc(bufsize);
	trials = malloc((size_t)cfg.trials * sizeof *trials);
	if (!sbuf || !rbuf || !trials) {
		fail("out of memory for the message buffers (lower --p2p-max or --coll-max)", NULL);
		MPI_Abort(MPI_COMM_WORLD, 3);
	}
	/* Zeros: the integer sums of the reductions cannot overflow. */
	memset(sbuf, 0, bufsize);
	memset(rbuf, 0, bufsize);

	if (world_rank == 0) {
		MPI_Get_processor_name(host, &len);
		MPI_Get_library_version(lib, &len);
		while (len > 0 && (lib[len - 1] == '\n' || lib[len - 1] == ' ' || lib[len - 1] == '\0'))
			lib[--len] = '\0';
		printf("mpitrace-calibrate version=%d procs=%d cpus=%ld host=", FORMAT_VERSION, world_size,
		       sysconf(_SC_NPROCESSORS_ONLN));
		put_quoted(host);
		fputs(" mpi=", stdout);
		put_quoted(lib);
		printf("\nconfig p2p_min=%lld p2p_max=%lld coll_min=%lld coll_max=%lld reps=%lld min_reps=%lld "
		       "trials=%lld max_procs=%lld target_us=%lld collectives=\"",
		       cfg.p2p_min, cfg.p2p_max, cfg.coll_min, cfg.coll_max, cfg.reps, cfg.min_reps, cfg.trials,
		       cfg.max_procs, cfg.target_us);
		for (int k = 0; k < NCOLL; k++) {
			if (cfg.colls[k]) {
				printf("%s%s", any ? "," : "", coll_names[k]);
				any = 1;
			}
		}
		printf("\"\n");
		fflush(stdout);
	}

	bench_p2p(sbuf, rbuf, trials);
	for (int p = 2; p <= cfg.max_procs; p = next_procs(p))
		bench_coll_procs(p, sbuf, rbuf, trials);

	if (world_rank == 0) {
		printf("end points=%lld\n", npoints);
		fflush(stdout);
	}
	free(sbuf);
	free(rbuf);
	free(trials);
	MPI_Finalize();
	return 0;
}
