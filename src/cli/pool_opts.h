/*
 * What the commands that run a study share (repeat, tune, auto): the pool,
 * remote-worker and backend options, parsed once into the plan's exec part
 * and a struct cli_pool_opts (none of them is part of a run's stored plan,
 * so --resume may change them); `--resume NAME` without DATA; and
 * cli_study_run(), which makes the one library call (cfl_study_run) and
 * says what its outcome asks for, so each command is parse -> run ->
 * print.  Each command lists the options it takes (CLI_POOL_LONGOPTS,
 * CLI_REMOTE_LONGOPTS, ...) and pastes the help lines below into its own
 * --help where its order wants them.
 */
#ifndef CFL_CLI_POOL_OPTS_H
#define CFL_CLI_POOL_OPTS_H

#include "cli.h"
#include "table_opts.h"

#include "cfl/run.h"
#include "cfl/store.h"
#include "cfl/study.h"

/* --listen, --token-file, --heartbeat, --max-workers and --backend. */
enum {
	CLI_OPT_LISTEN = 1050,
	CLI_OPT_TOKEN_FILE,
	CLI_OPT_HEARTBEAT,
	CLI_OPT_MAX_WORKERS,
	CLI_OPT_BACKEND = 1060,
};

#define CLI_REMOTE_LONGOPTS                                                  \
	{ "listen", required_argument, 0, CLI_OPT_LISTEN },                 \
	{ "token-file", required_argument, 0, CLI_OPT_TOKEN_FILE },         \
	{ "heartbeat", required_argument, 0, CLI_OPT_HEARTBEAT },           \
	{ "max-workers", required_argument, 0, CLI_OPT_MAX_WORKERS }
#define CLI_CLUSTER_LONGOPTS                                                 \
	{ "backend", required_argument, 0, CLI_OPT_BACKEND }

/* The --help lines of the options above (string literals, as below). */
#define CLI_REMOTE_HELP \
	"  --listen ADDR:PORT       also accept remote workers (`cfl worker`) on\n" \
	"                           ADDR:PORT (port 0: any free port) [off];\n" \
	"                           --num-jobs 0 leaves the work to them\n" \
	"  --token-file FILE        shared secret (mode 0600): connections are TLS\n" \
	"                           1.3 keyed by it; required unless ADDR is\n" \
	"                           loopback (then plain TCP) [none]\n" \
	"  --heartbeat SEC          heartbeat interval; a worker (or an MPI worker\n" \
	"                           rank) silent for 5 of them is dropped and its\n" \
	"                           trials requeued [1]\n" \
	"  --max-workers N          remote workers connected at once; more are\n" \
	"                           refused [256]\n"
#define CLI_CLUSTER_HELP \
	"  --backend B              where trials run: local (forked workers), tcp\n" \
	"                           (with --listen) or mpi (rank 0 coordinates, the\n" \
	"                           other ranks run trials, each with --num-jobs\n" \
	"                           workers [its node's cores / ranks on the node]);\n" \
	"                           [mpi when started by mpirun or srun, else local]\n"

/* Option ids: between the data options and CLI_OPT_FIRST_FREE. */
enum {
	CLI_OPT_NUM_JOBS = 1070,
	CLI_OPT_TRIAL_TIMEOUT,
	CLI_OPT_MAX_RETRIES,
	CLI_OPT_DB,
	CLI_OPT_NAME,
	CLI_OPT_RESUME,
	CLI_OPT_THREADS_PER_TRIAL,
	CLI_OPT_TRIALS_PER_WORKER,
};

/* --num-jobs, --trial-timeout, --max-retries, --db, --name, --resume,
 * -q/--quiet ("q" must also be in the command's short options) and the
 * table options --width and --sort (table_opts.h). */
#define CLI_POOL_LONGOPTS                                                    \
	{ "num-jobs", required_argument, 0, CLI_OPT_NUM_JOBS },             \
	{ "db", required_argument, 0, CLI_OPT_DB },                         \
	{ "name", required_argument, 0, CLI_OPT_NAME },                     \
	{ "resume", required_argument, 0, CLI_OPT_RESUME },                 \
	{ "trial-timeout", required_argument, 0, CLI_OPT_TRIAL_TIMEOUT },   \
	{ "max-retries", required_argument, 0, CLI_OPT_MAX_RETRIES },       \
	{ "quiet", no_argument, 0, 'q' },                                   \
	CLI_TABLE_LONGOPTS

/* --threads-per-trial and --trials-per-worker: only repeat takes them (a
 * tune trial keeps the pool's defaults, 1 thread and no limit). */
#define CLI_POOL_WORKER_LONGOPTS                                             \
	{ "threads-per-trial", required_argument, 0, CLI_OPT_THREADS_PER_TRIAL }, \
	{ "trials-per-worker", required_argument, 0, CLI_OPT_TRIALS_PER_WORKER }

/* The --help lines of the options above, as string literals to paste into
 * a command's usage format: the commands interleave them with their own
 * lines.  CLI_POOL_HELP_NUM_JOBS takes the online cores as a long (%ld);
 * CLI_POOL_HELP_DB_NAME takes the command's name, a string literal, for the
 * default run name.  --resume has no shared line: each command says what
 * resuming means for it. */
#define CLI_POOL_HELP_NUM_JOBS                                               \
	"  --num-jobs J             worker processes [%ld: the online cores]\n"
#define CLI_POOL_HELP_DB_NAME(cmd)                                           \
	"  --db FILE                the database [" CFL_STORE_DEFAULT_PATH "]\n" \
	"  --name NAME              the run's name [" cmd "-YYYYMMDD-HHMMSS]\n"
#define CLI_POOL_HELP_RETRIES                                                \
	"  --trial-timeout SEC      kill a trial after SEC seconds [0: never]\n" \
	"  --max-retries R          retries of a failed trial [1]\n"
#define CLI_POOL_HELP_WORKER                                                 \
	"  --threads-per-trial T    BLAS threads per trial [1]\n"                \
	"  --trials-per-worker N    a worker runs N trials then is replaced\n"   \
	"                           [0: no limit; 1: a fresh process per trial]\n"
#define CLI_POOL_HELP_QUIET                                                  \
	"  -q, --quiet              no progress on stderr\n"                     \
	CLI_TABLE_HELP

struct cli_pool_opts {
	long num_jobs;		/* local worker processes [the online cores];
				 * 0 only with --listen (the command checks) */
	int num_jobs_set;	/* --num-jobs was given (the mpi backend
				 * divides a node's cores otherwise) */
	double trial_timeout;	/* seconds; 0: never [0] */
	long max_retries;	/* [1] */
	long threads_per_trial;	/* BLAS threads [1] */
	long trials_per_worker;	/* 0: no limit [0] */
	const char *db;		/* [CFL_STORE_DEFAULT_PATH] */
	const char *name;	/* NULL: the store picks CMD-YYYYMMDD-HHMMSS */
	const char *resume;	/* NULL: a new run */
	int quiet;		/* no progress on stderr */
	struct cli_table_opts table;	/* --width, --sort: the table shown */
};

/* Fills o with the defaults above. */
void cli_pool_opts_init(struct cli_pool_opts *o);

/* Handles option c (from getopt_long) if it is a pool option: returns 1
 * when handled, 0 when c is not a pool option, -1 (after printing a usage
 * error for cmd) when its value is bad. */
int cli_pool_option(const char *cmd, int c, const char *arg,
		    struct cli_pool_opts *o);

/* Handles option c when it is one of the options every command that runs a
 * study shares: a data option (cli_data_option, into sp->data), a pool
 * option (above, into o), a remote-worker option or --backend (into
 * sp->exec).  Returns 1 when handled, 0 when c is none of them, -1 (after
 * printing a usage error for cmd) when its value is bad. */
int cli_pool_shared_option(const char *cmd, int c, const char *arg,
			   struct cfl_study_plan *sp, struct cli_pool_opts *o);

/* For `cfl CMD --resume NAME` without DATA, after the command's first parse
 * (which found no DATA): returns 3 with the arguments to parse again in
 * *new_argc and *new_argv: argv[0], run NAME's stored arguments, then
 * argv[1..] (cfl_study_stored_argv: free() *new_argv and *words).  Returns 0 on a
 * worker rank of an MPI job, which goes on as parsed (rank 0 has the run's
 * command); otherwise the exit code after printing why: 2 when cfl cannot
 * tell the MPI ranks apart, 1 when the run is missing or another command's.
 * *new_argv and *words are left NULL unless 3 is returned. */
int cli_pool_resume_alone(const char *cmd, const struct cli_pool_opts *o,
			  enum cfl_backend backend, int argc,
			  char **argv, int *new_argc /* OUT */,
			  char ***new_argv /* OUT */, char ***words /* OUT */);

/* A pool command's whole parse: parse(ctx, argc, argv) gives 0, 3 (no DATA),
 * -1 (done: --help) or an exit code.  For --resume NAME without DATA, the
 * run's stored arguments (cli_pool_resume_alone, with the first parse's
 * *pool and *backend) are parsed again after reset(ctx), which empties ctx
 * (pool and backend point into it).  cmdline gets the command as typed or
 * stored (cfl_study_command_line), plancmd (may be NULL) its plan (the
 * same without --resume).  *argv_words and *words own the stored
 * arguments: free() both whatever is returned.  Returns 0, -1 (done: exit
 * 0) or the exit code after printing why ("missing DATA (a CSV file)"). */
int cli_pool_parse(const char *cmd, int argc, char **argv,
		   int (*parse)(void *ctx, int argc, char **argv),
		   void (*reset)(void *ctx), void *ctx,
		   const struct cli_pool_opts *pool,
		   const enum cfl_backend *backend, struct cfl_buf *cmdline,
		   struct cfl_buf *plancmd, char ***argv_words /* OUT */,
		   char ***words /* OUT */);

/* Copies the execution options (workers, threads, timeout, retries,
 * trials per worker) and where the run is stored (db, name, resume) into
 * sp, after the parse. */
void cli_pool_to_plan(const struct cli_pool_opts *o, struct cfl_study_plan *sp);

/* Prints run study's tables on stdout as `cfl report` does (styled by t).
 * 0, or -1 with err. */
int cli_print_run(struct cfl_study *study, const struct cli_table_opts *t,
		  struct cfl_err *err);

/* " --db FILE" for a hint when db is not the default, else "". */
const char *cli_db_flag(const char *db, char *buf, size_t cap);

/* The events every run command shows alike: a NOTE ("cfl: ...") and the
 * backend's LOG lines ("cfl CMD: ..."), whether quiet or not.  1 when ev
 * was one of them, else 0. */
int cli_study_said(const char *cmd, const struct cfl_study_event *ev);

/* Runs sp (cfl_study_run with hooks h, the stop note naming cmd) and
 * says what the outcome asks for: the usage error or failure, a complete
 * run ("... nothing to do (cfl report NAME shows it; GROW)"), an
 * interruption with the command that goes on with it ("VERB it with:\n
 * [mpirun -n 3 ]cfl CMD --resume NAME"); a process that served an MPI job
 * ends here (_exit).  Returns -1 when the run finished (*out filled: the
 * command prints what is left and chooses its exit code), else the exit
 * code. */
int cli_study_run(const char *cmd, struct cfl_study_plan *sp,
		  const struct cli_pool_opts *o, const struct cfl_study_hooks *h,
		  const char *grow, const char *verb,
		  struct cfl_study_outcome *out /* OUT */);

#endif
