/*
 * cfl's entry point: the command table and the top-level options.  Each
 * command lives in its own cmd_<name>.c, listed in the table below.
 */
#include "cli.h"

#include <stdio.h>
#include <string.h>

#include "cfl/backend.h"
#include "cfl/model.h"
#include "cfl/study.h"

static const struct cli_command commands[] = {
	{ "data", cmd_data, "describe a CSV file: column types, target, task, classes" },
	{ "train", cmd_train, "train one model and save it" },
	{ "predict", cmd_predict, "apply a saved model or bundle to a CSV file" },
	{ "repeat", cmd_repeat, "train N seeds of one or more models in a process pool" },
	{ "tune", cmd_tune, "search hyper-parameters with Bayesian optimisation" },
	{ "auto", cmd_auto, "the best ensemble within a time limit: search, bag, stack" },
	{ "runs", cmd_runs, "list the runs stored in a database" },
	{ "report", cmd_report, "print or write again the tables of a stored run" },
	{ "bundle", cmd_bundle, "show the rows and models a saved bundle holds" },
	{ "export", cmd_export, "write a run's trials as CSV, JSON or an Optuna study" },
	{ "worker", cmd_worker, "run trials for a coordinator on another machine" },
};

#define N_COMMANDS (sizeof(commands) / sizeof(commands[0]))

/* Whether the command spreads work over the ranks of mpirun or srun (or
 * serves a coordinator: `srun -n 8 cfl worker` starts eight workers).
 * The others run once, on rank 0: N copies would write one file N times. */
static int spreads(const char *name)
{
	return !strcmp(name, "repeat") || !strcmp(name, "tune") ||
	       !strcmp(name, "auto") || !strcmp(name, "worker");
}

static void usage(FILE *f)
{
	fprintf(f, "usage: cfl COMMAND [options]\n\n"
		   "Runs ensembles and hyper-parameter searches over small tabular models.\n\n"
		   "Commands:\n");
	for (size_t i = 0; i < N_COMMANDS; i++)
		fprintf(f, "  %-9s %s\n", commands[i].name, commands[i].summary);
	fprintf(f, "\nOptions:\n"
		   "  -h, --help      this help\n"
		   "  --version       the version, models and backends built in\n\n"
		   "'cfl COMMAND --help' lists a command's options.\n\n"
		   "Examples:\n"
		   "  cfl data describe datasets/iris.csv\n"
		   "  cfl repeat datasets/iris.csv --models fcnn,tree --num-repeat 3\n");
}

static void version(void)
{
	const struct cfl_model_ops *ops;

	printf("cfl %s\nmodels:", CFL_VERSION);
	for (size_t i = 0; (ops = cfl_model_at(i)); i++)
		printf(" %s", ops->name);
	printf("\nbackends: local tcp%s\n", cfl_mpi_built_in() ? " mpi" : "");
	printf("blas: OpenBLAS, %s kernels\n", cfl_blas_core());
}

int main(int argc, char **argv)
{
	cfl_blas_pick_core(argv);
	if (argc < 2) {
		usage(stderr);
		return CLI_USAGE;
	}
	if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		usage(stdout);
		return CLI_OK;
	}
	if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
		version();
		return CLI_OK;
	}
	/* the commands say what is wrong with an option (cli_bad_option),
	 * getopt says nothing */
	opterr = 0;
	for (size_t i = 0; i < N_COMMANDS; i++) {
		if (strcmp(argv[1], commands[i].name))
			continue;
		if (!spreads(argv[1]) && cfl_study_launched_rank() > 0)
			return CLI_OK;	/* rank 0 runs it */
		return commands[i].fn(argc - 1, argv + 1);
	}
	{
		const char *names[N_COMMANDS], *close;

		for (size_t i = 0; i < N_COMMANDS; i++)
			names[i] = commands[i].fn ? commands[i].name : NULL;
		close = cli_closest(argv[1], names, N_COMMANDS);
		if (close)
			fprintf(stderr, "cfl: '%s' is not a cfl command; did you mean '%s'?\n",
				argv[1], close);
		else
			fprintf(stderr, "cfl: '%s' is not a cfl command\n", argv[1]);
		fprintf(stderr, "Try 'cfl --help'.\n");
	}
	return CLI_USAGE;
}
