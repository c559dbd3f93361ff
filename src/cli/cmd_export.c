/*
 * `cfl export [RUN]`: a stored run's trials as one table for notebooks
 * (CSV or JSON, one row per trial, as Optuna's trials_dataframe()), or a
 * tune run as an Optuna study in Optuna's SQLite schema; an auto run's
 * leaderboard by default (AutoGluon's leaderboard()).  Opens the cfl
 * database read-only; the work is src/report's (cfl_export_trials,
 * cfl_export_optuna).
 */
#include "cli.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cfl/report.h"
#include "cfl/store.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: cfl export [RUN] [--format csv|json|optuna] [--table T]\n"
		"                  [--out FILE] [--db FILE]\n\n"
		"Writes the trials of a stored run as one table, a row per trial, with\n"
		"its model, candidate, parameters (params_NAME columns), seed, repeat,\n"
		"fold, phase, status, times and each metric per split (test_acc,\n"
		"valid_acc, ...), as Optuna's trials_dataframe() does, so that\n"
		"pandas.read_csv gives a ready dataframe.  With --format optuna it writes\n"
		"a tune run as an Optuna study (Optuna 3.1's SQLite schema; the study is\n"
		"named after the run), which optuna.load_study, Optuna's plots and\n"
		"optuna-dashboard open.  Of an auto run it writes the leaderboard, a row\n"
		"per entry (rank, entry, kind, oof, valid, test, seconds, members), as\n"
		"AutoGluon's leaderboard() does; --table trials gives its trials.  RUN\n"
		"is a run name as `cfl runs` lists it.\n\n"
		"Options:\n"
		"  RUN              the run to export [the latest run]\n"
		"  --format FMT     csv, json or optuna [csv]\n"
		"  --table T        leaderboard (auto runs only) or trials\n"
		"                   [leaderboard for an auto run, else trials]\n"
		"  --out FILE       write to FILE (replaced; for optuna, a new file or an\n"
		"                   Optuna storage to add the study to) [stdout; optuna\n"
		"                   needs a FILE]\n"
		"  --db FILE        the database [" CFL_STORE_DEFAULT_PATH "]\n"
		"  -h, --help       this help\n\n"
		"Examples:\n"
		"  cfl export > trials.csv\n"
		"  cfl export tune-20261123-101500 --format json --out trials.json\n"
		"  cfl export tune-20261123-101500 --format optuna --out study.db\n"
		"  cfl export auto-20261123-101500 --out leaderboard.csv\n");
}

int cmd_export(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "db", required_argument, 0, 'd' },
		{ "format", required_argument, 0, 'f' },
		{ "out", required_argument, 0, 'o' },
		{ "table", required_argument, 0, 't' },
		{ "help", no_argument, 0, 'h' },
		{ 0, 0, 0, 0 },
	};
	const char *db = CFL_STORE_DEFAULT_PATH, *out = NULL, *name = NULL;
	int c, fmt = CFL_EXPORT_CSV, rc = CLI_FAIL, table = -1;
	struct cfl_run_info run;
	struct cfl_store *st;
	struct cfl_err err = { "" };
	struct cfl_buf b;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'd':
			db = optarg;
			break;
		case 'f':
			fmt = cfl_export_format_lookup(optarg);
			if (fmt < 0)
				return cli_usage_error("export", "unknown format '%s' "
						       "(known: csv, json, optuna)",
						       optarg);
			break;
		case 'o':
			out = optarg;
			break;
		case 't':
			if (!strcmp(optarg, "leaderboard") || !strcmp(optarg, "trials"))
				table = !strcmp(optarg, "leaderboard");
			else
				return cli_usage_error("export", "unknown table '%s' "
						       "(known: leaderboard, trials)",
						       optarg);
			break;
		case 'h':
			usage(stdout);
			return CLI_OK;
		default:
			return cli_bad_option("export", argc, argv, "h", opts);
		}
	}
	if (optind < argc)
		name = argv[optind++];
	if (optind < argc)
		return cli_usage_error("export", "unexpected argument '%s'",
				       argv[optind]);
	if (out && !out[0])
		return cli_usage_error("export", "empty --out file name");
	if (fmt == CFL_EXPORT_OPTUNA && table == 1)
		return cli_usage_error("export", "--format optuna writes trials, "
				       "not a leaderboard");
	if (fmt == CFL_EXPORT_OPTUNA && !out)
		return cli_usage_error("export", "--format optuna writes a database: "
				       "give it --out FILE");

	st = cfl_store_open_run(db, name, &run, &err);
	if (!st)
		return cli_fail(&err);
	if (run.status == CFL_RUN_RUNNING || run.status == CFL_RUN_INTERRUPTED)
		fprintf(stderr, "cfl export: run '%s' is %s: the export holds the "
				"trials as they are now\n",
			run.name, cfl_run_status_name(run.status));

	cfl_buf_init(&b);
	if (table == 1 && run.kind != CFL_RUN_AUTO) {
		rc = cli_failf("run '%s' is a %s run: only an auto run has a "
			       "leaderboard (--table trials)", run.name,
			       cfl_run_kind_name(run.kind));
		goto done;
	}
	if (table < 0)
		table = run.kind == CFL_RUN_AUTO && fmt != CFL_EXPORT_OPTUNA;
	if (table == 1) {
		if (cfl_report_auto(st, &run, fmt == CFL_EXPORT_JSON ? CFL_TABLE_JSON
				    : CFL_TABLE_CSV, CFL_BOARD_ONLY, 0, &b, &err) < 0) {
			rc = cli_fail(&err);
			goto done;
		}
	} else if (fmt == CFL_EXPORT_OPTUNA) {
		if (cfl_export_optuna(st, &run, out, &err)) {
			rc = cli_fail(&err);
			goto done;
		}
		fprintf(stderr, "cfl export: study '%s' written to '%s'; open it with\n"
				"  optuna.load_study(study_name=\"%s\",\n"
				"                    storage=\"sqlite:///%s\")\n",
			run.name, out, run.name, out);
		rc = CLI_OK;
		goto done;
	}
	if (!table && (cfl_export_trials(st, &run, fmt, &b, &err) || !b.data)) {
		if (!b.data && !err.msg[0])
			cfl_err_set(&err, "out of memory");
		rc = cli_fail(&err);
		goto done;
	}
	if (out) {
		if (cfl_write_file_atomic(out, b.data, b.len, &err)) {
			rc = cli_fail(&err);
			goto done;
		}
	} else if (fwrite(b.data, 1, b.len, stdout) != b.len || fflush(stdout)) {
		rc = cli_failf("cannot write the export: %s", strerror(errno));
		goto done;
	}
	rc = CLI_OK;
done:
	cfl_buf_release(&b);
	cfl_run_info_release(&run);
	cfl_store_close(st);
	return rc;
}
