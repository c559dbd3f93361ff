/*
 * cfl worker: runs trials for a coordinator (`cfl repeat|tune|auto --listen`)
 * over TCP, with its own local pool of forked workers: options, then the
 * relay of src/run (relay.h) over a TCP link, then its outcome.  The relay
 * says HELLO, fetches the dataset into the cache, keeps results until they
 * are acknowledged and reconnects with backoff; a TCP worker never runs a
 * shell command it is sent.  It never opens the coordinator's database.
 */
#include "cli.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cfl/net.h"
#include "cfl/relay.h"

enum {
	OPT_CONNECT = CLI_OPT_FIRST_FREE,
	OPT_JOBS,
	OPT_TOKEN_FILE,
	OPT_CACHE_DIR,
	OPT_NAME,
	OPT_RETRY_FOR,
	OPT_MAX_DATASET_SIZE,
};

static void usage(FILE *f)
{
	long cores = sysconf(_SC_NPROCESSORS_ONLN);

	fprintf(f,
		"usage: cfl worker --connect HOST:PORT [options]\n\n"
		"Runs trials for a coordinator started with `cfl repeat|tune|auto --listen`,\n"
		"in a local pool of forked workers.  The dataset is fetched once into a\n"
		"cache by its SHA-256; results are kept until the coordinator acknowledges\n"
		"them; a lost connection is retried with backoff.  Exits 0 when the run\n"
		"is over.\n\n"
		"Options:\n"
		"  --connect HOST:PORT      the coordinator (as it printed) [required]\n"
		"  --jobs N                 local worker processes [%ld: the online cores]\n"
		"  --token-file FILE        the coordinator's token (mode 0600); required\n"
		"                           unless HOST is loopback [none]\n"
		"  --cache-dir DIR          dataset cache [$CFL_CACHE_DIR, else\n"
		"                           $XDG_CACHE_HOME/cfl, else ~/.cache/cfl]\n"
		"  --name NAME              this worker's name, unique per run [HOST:PID]\n"
		"  --retry-for SEC          give up when the coordinator stays unreachable\n"
		"                           this long [300]\n"
		"  --max-dataset-size SIZE  refuse a coordinator that announces a larger\n"
		"                           dataset (K, M, G, T: KiB...) [8G]\n"
		"  -q, --quiet              no progress on stderr\n"
		"  -h, --help               this help\n\n"
		"Exit status: 0 when the run is over, 1 when the coordinator refused this\n"
		"worker or stayed unreachable, 2 on a usage error.\n\n"
		"Examples:\n"
		"  cfl worker --connect 127.0.0.1:7070\n"
		"  cfl worker --connect 10.0.0.5:7070 --jobs 8 --token-file ~/.cfl-token\n"
		"  ssh -N -L 7070:127.0.0.1:7070 coordinator-host &\n"
		"  cfl worker --connect 127.0.0.1:7070 --jobs 4\n",
		cores > 0 ? cores : 1);
}

struct worker {
	char host[256];
	int port;
	long jobs;
	const char *token_file;
	struct cfl_token token;
	char cache_dir[4096];
	char name[64];
	double retry_for;
	uint64_t max_data_size;
	int quiet;
};

static struct cfl_relay *g_relay;
static volatile sig_atomic_t g_stop;

static void on_signal(int sig)
{
	(void)sig;
	g_stop = 1;
	cfl_relay_interrupt(g_relay);
}

static void log_line(void *ctx, int important, const char *msg)
{
	const struct worker *w = ctx;

	if (w->quiet && !important)
		return;
	fprintf(stderr, "cfl worker: %s\n", msg);
}

static void default_cache_dir(char *out, size_t cap)
{
	const char *d = getenv("CFL_CACHE_DIR"), *x = getenv("XDG_CACHE_HOME"),
		   *h = getenv("HOME");

	if (d && *d)
		snprintf(out, cap, "%s", d);
	else if (x && *x)
		snprintf(out, cap, "%s/cfl", x);
	else
		snprintf(out, cap, "%s/.cache/cfl", h && *h ? h : "/tmp");
}

/* ---- options ---- */

static int parse_args(struct worker *w, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "connect", required_argument, 0, OPT_CONNECT },
		{ "jobs", required_argument, 0, OPT_JOBS },
		{ "token-file", required_argument, 0, OPT_TOKEN_FILE },
		{ "cache-dir", required_argument, 0, OPT_CACHE_DIR },
		{ "name", required_argument, 0, OPT_NAME },
		{ "retry-for", required_argument, 0, OPT_RETRY_FOR },
		{ "max-dataset-size", required_argument, 0, OPT_MAX_DATASET_SIZE },
		{ "quiet", no_argument, 0, 'q' },
		{ "help", no_argument, 0, 'h' },
		{ 0, 0, 0, 0 },
	};
	const char *connect = NULL;
	struct cfl_err err;
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	char host[200];
	int c;

	w->jobs = cores > 0 ? cores : 1;
	w->retry_for = 300;
	default_cache_dir(w->cache_dir, sizeof(w->cache_dir));
	gethostname(host, sizeof(host));
	host[sizeof(host) - 1] = 0;
	snprintf(w->name, sizeof(w->name), "%.40s:%ld", host, (long)getpid());
	optind = 1;
	while ((c = getopt_long(argc, argv, "qh", opts, NULL)) != -1) {
		switch (c) {
		case OPT_CONNECT:
			connect = optarg;
			break;
		case OPT_JOBS:
			if (cli_parse_long(optarg, 1, 1024, &w->jobs))
				return cli_usage_error("worker", "--jobs must be an integer in [1, 1024], got '%s'", optarg);
			break;
		case OPT_TOKEN_FILE:
			w->token_file = optarg;
			break;
		case OPT_CACHE_DIR:
			snprintf(w->cache_dir, sizeof(w->cache_dir), "%s", optarg);
			break;
		case OPT_NAME:
			if (!*optarg || strlen(optarg) > 48)
				return cli_usage_error("worker", "--name must have 1 to 48 characters");
			snprintf(w->name, sizeof(w->name), "%s", optarg);
			break;
		case OPT_RETRY_FOR:
			if (cli_parse_double(optarg, 0, 1e7, &w->retry_for))
				return cli_usage_error("worker", "--retry-for must be a number of seconds >= 0, got '%s'", optarg);
			break;
		case OPT_MAX_DATASET_SIZE:
			if (cli_parse_size(optarg, &w->max_data_size))
				return cli_usage_error("worker", "--max-dataset-size must be a "
						       "size such as 500M or 8G, got '%s'", optarg);
			break;
		case 'q':
			w->quiet = 1;
			break;
		case 'h':
			usage(stdout);
			return -1;
		default:
			return cli_bad_option("worker", argc, argv, "qh", opts);
		}
	}
	if (optind < argc)
		return cli_usage_error("worker", "unexpected argument '%s'", argv[optind]);
	if (!connect)
		return cli_usage_error("worker", "--connect HOST:PORT is required");
	if (cfl_net_parse_hostport(connect, w->host, sizeof(w->host), &w->port, &err))
		return cli_usage_error("worker", "--connect: %s", err.msg);
	if (!w->port)
		return cli_usage_error("worker", "--connect: port 0 is not a port to connect to");
	if (!w->token_file && !cfl_net_is_loopback(w->host))
		return cli_usage_error("worker", "--connect %s: a non-loopback address "
				       "needs --token-file (or use an SSH tunnel to "
				       "127.0.0.1)", connect);
	if (w->token_file && cfl_token_load(&w->token, w->token_file, &err))
		return cli_fail(&err);
	return 0;
}

int cmd_worker(int argc, char **argv)
{
	static struct worker w;
	struct cfl_tcp_relay_link link;
	struct cfl_relay_opts o;
	struct cfl_err err;
	char peer[300];
	int rc = CLI_FAIL, r;

	memset(&w, 0, sizeof(w));
	r = parse_args(&w, argc, argv);
	if (r)
		return r < 0 ? CLI_OK : r;
	snprintf(peer, sizeof(peer), "%s:%d", w.host, w.port);
	cfl_relay_opts_init(&o);
	o.name = w.name;
	o.peer = peer;
	o.n_slots = (size_t)w.jobs;
	o.allow_commands = 0;	/* its leases come from a network peer */
	o.cache_dir = w.cache_dir;
	o.retry_for = w.retry_for;
	o.max_data_size = w.max_data_size;	/* 0: the default */
	o.log = log_line;
	o.log_ctx = &w;
	g_relay = cfl_relay_new(&o, &err);
	if (!g_relay) {
		cfl_token_clear(&w.token);
		return cli_fail(&err);
	}
	cli_catch_stop(on_signal, 0, NULL, NULL);
	signal(SIGPIPE, SIG_IGN);
	cfl_tcp_relay_link_init(&link, w.host, w.port,
				w.token_file ? &w.token : NULL);
	r = cfl_relay_serve(g_relay, cfl_tcp_relay_link(&link), &err);
	if (r == CFL_RELAY_OVER)
		rc = CLI_OK;
	else if (r == CFL_RELAY_INTERRUPTED || g_stop)
		rc = CLI_INTERRUPTED;
	else
		fprintf(stderr, "cfl worker: %s\n", err.msg);
	cfl_relay_free(g_relay);
	g_relay = NULL;
	cfl_token_clear(&w.token);
	return rc;
}
