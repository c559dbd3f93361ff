/*
 * Remote workers from the command line (see remote.h): the --listen
 * options of repeat and tune.  WELCOME's config text is the run module's
 * (cfl_run_config_format in relay.h).
 */
#include "remote.h"

#include "cfl/relay.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char cli_remote_help[] =
	"  --listen ADDR:PORT       also accept remote workers (`cfl worker`) on\n"
	"                           ADDR:PORT (port 0: any free port) [off];\n"
	"                           --num-jobs 0 leaves the work to them\n"
	"  --token-file FILE        shared secret (mode 0600): connections are TLS\n"
	"                           1.3 keyed by it; required unless ADDR is\n"
	"                           loopback (then plain TCP) [none]\n"
	"  --heartbeat SEC          heartbeat interval; a worker (or an MPI worker\n"
	"                           rank) silent for 5 of them is dropped and its\n"
	"                           trials requeued [1]\n"
	"  --max-workers N          remote workers connected at once; more are\n"
	"                           refused [256]\n";

void cli_remote_init(struct cli_remote *r)
{
	memset(r, 0, sizeof(*r));
	r->heartbeat = 1;
	r->max_workers = 256;
	r->lfd = -1;
}

int cli_remote_option(struct cli_remote *r, const char *cmd, int c,
		      const char *arg)
{
	switch (c) {
	case CLI_OPT_LISTEN:
		r->listen = arg;
		return 1;
	case CLI_OPT_TOKEN_FILE:
		r->token_file = arg;
		return 1;
	case CLI_OPT_HEARTBEAT:
		if (cli_parse_double(arg, 0.05, 3600, &r->heartbeat)) {
			cli_usage_error(cmd, "--heartbeat must be a number of seconds "
					"in [0.05, 3600], got '%s'", arg);
			return -1;
		}
		return 1;
	case CLI_OPT_MAX_WORKERS:
		if (cli_parse_long(arg, 1, 100000, &r->max_workers)) {
			cli_usage_error(cmd, "--max-workers must be an integer in "
					"[1, 100000], got '%s'", arg);
			return -1;
		}
		return 1;
	}
	return 0;
}

int cli_remote_check(struct cli_remote *r, const char *cmd)
{
	struct cfl_err err;
	char host[256];
	int port;

	if (!r->listen) {
		if (r->token_file)
			return cli_usage_error(cmd, "--token-file needs --listen");
		return 0;
	}
	if (cfl_net_parse_hostport(r->listen, host, sizeof(host), &port, &err))
		return cli_usage_error(cmd, "--listen: %s", err.msg);
	if (!r->token_file && !cfl_net_is_loopback(host))
		return cli_usage_error(cmd, "--listen %s: a non-loopback address "
				       "needs --token-file (or listen on 127.0.0.1 "
				       "and use an SSH tunnel)", r->listen);
	if (r->token_file && cfl_token_load(&r->token, r->token_file, &err))
		return cli_fail(&err);
	return 0;
}

static void log_line(void *ctx, const char *msg)
{
	fprintf(stderr, "cfl %s: %s\n", (const char *)ctx, msg);
}

int cli_remote_bind(struct cli_remote *r, const char *cmd)
{
	struct cfl_err err;
	char host[256];
	int port;

	if (!r->listen || r->lfd >= 0)
		return 0;
	r->lfd = cfl_tcp_bind(r->listen, r->token_file ? &r->token : NULL,
			      &r->port, &err);
	if (r->lfd < 0)
		return cli_fail(&err);
	cfl_net_parse_hostport(r->listen, host, sizeof(host), &port, &err);
	/* the exact line to paste elsewhere (always printed: it is how a
	 * user or a script learns the port) */
	fprintf(stderr, "cfl %s: listening for workers; start them with:\n"
		"  cfl worker --connect %s%s%s:%d%s%s\n", cmd,
		strchr(host, ':') ? "[" : "", host, strchr(host, ':') ? "]" : "",
		r->port, r->token_file ? " --token-file " : "",
		r->token_file ? cli_sh(r->token_file) : "");
	return 0;
}

int cli_remote_start(struct cli_remote *r, const char *cmd,
		     struct cfl_pool *pool, const struct cfl_data_opts *d,
		     const struct cfl_data *data,
		     const struct cfl_pool_opts *po, const char *run_key,
		     int quiet)
{
	struct cfl_tcp_opts o;
	struct cfl_buf config, parts;
	struct cfl_err err;

	(void)quiet;
	if (!r->listen)
		return 0;
	if (cli_remote_bind(r, cmd))
		return 1;
	cfl_buf_init(&config);
	cfl_buf_init(&parts);
	/* workers get the encoded parts, not the file: they parse nothing */
	if (cfl_run_config_format(&config, run_key, d, po, &err) ||
	    cfl_data_pack_parts(data, &parts, &err)) {
		cfl_buf_release(&config);
		cfl_buf_release(&parts);
		return cli_fail(&err);
	}
	cfl_tcp_opts_init(&o);
	o.addr = r->listen;
	o.token = r->token_file ? &r->token : NULL;
	o.heartbeat = r->heartbeat;
	o.max_workers = (size_t)r->max_workers;
	o.data = &parts;	/* taken over, not copied */
	o.config = config.data;
	o.lfd = r->lfd;
	o.log = log_line;
	o.log_ctx = (void *)cmd;
	r->lfd = -1;	/* the listener's now, even when it fails */
	r->tcp = cfl_tcp_listen(pool, &o, &err);
	cfl_pool_set_log(pool, log_line, (void *)cmd);
	cfl_buf_release(&config);
	cfl_buf_release(&parts);
	if (!r->tcp)
		return cli_fail(&err);
	return 0;
}

void cli_remote_stop(struct cli_remote *r)
{
	cfl_tcp_free(r->tcp);
	r->tcp = NULL;
	cfl_tcp_unbind(r->lfd);
	r->lfd = -1;
	cfl_token_clear(&r->token);
}
