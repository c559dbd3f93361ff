/*
 * Remote workers from the command line (see remote.h): the --listen
 * options of repeat and tune, and the config text of WELCOME.  The config
 * is plain "key=value" lines so a worker of the same protocol version reads
 * exactly the data options the coordinator loaded with.
 */
#include "remote.h"

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

int cli_remote_start(struct cli_remote *r, const char *cmd,
		     struct cfl_pool *pool, const struct cfl_data_opts *d,
		     const struct cfl_data *data,
		     const struct cfl_pool_opts *po, const char *run_key,
		     int quiet)
{
	struct cfl_tcp_opts o;
	struct cfl_buf config, parts;
	struct cfl_err err;
	char host[256];
	int port;

	(void)quiet;
	if (!r->listen)
		return 0;
	cfl_buf_init(&config);
	cfl_buf_init(&parts);
	/* workers get the encoded parts, not the file: they parse nothing */
	if (cli_remote_config_format(&config, run_key, d, po, &err) ||
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
	o.data = parts.data;
	o.data_len = parts.len;
	o.config = config.data;
	o.log = log_line;
	o.log_ctx = (void *)cmd;
	r->tcp = cfl_tcp_listen(pool, &o, &err);
	cfl_pool_set_log(pool, log_line, (void *)cmd);
	cfl_buf_release(&config);
	cfl_buf_release(&parts);
	if (!r->tcp)
		return cli_fail(&err);
	cfl_net_parse_hostport(r->listen, host, sizeof(host), &port, &err);
	/* the exact line to paste elsewhere (always printed: it is how a
	 * user or a script learns the port) */
	fprintf(stderr, "cfl %s: listening for workers; start them with:\n"
		"  cfl worker --connect %s%s%s:%d%s%s\n", cmd,
		strchr(host, ':') ? "[" : "", host, strchr(host, ':') ? "]" : "",
		cfl_tcp_port(r->tcp), r->token_file ? " --token-file " : "",
		r->token_file ? r->token_file : "");
	return 0;
}

void cli_remote_stop(struct cli_remote *r)
{
	cfl_tcp_free(r->tcp);
	r->tcp = NULL;
	cfl_token_clear(&r->token);
}

/* ---- the WELCOME config ---- */

static int put_str(struct cfl_buf *b, const char *key, const char *v,
		   struct cfl_err *err)
{
	if (!v)
		return 0;
	if (strchr(v, '\n') || strchr(v, '\r'))
		return cfl_err_set(err, "--%s cannot be sent to workers: it holds a "
				   "line break", key);
	return cfl_buf_printf(b, "%s=%s\n", key, v) ? cfl_err_set(err, "out of memory") : 0;
}

int cli_remote_config_format(struct cfl_buf *b, const char *run_key,
			     const struct cfl_data_opts *d,
			     const struct cfl_pool_opts *po,
			     struct cfl_err *err)
{
	if (put_str(b, "run", run_key, err) ||
	    put_str(b, "target", d->schema.target, err) ||
	    put_str(b, "drop", d->schema.drop_re, err) ||
	    put_str(b, "only", d->schema.only_re, err))
		return -1;
	cfl_buf_printf(b, "task=%d\ntest_frac=%.17g\nvalid_frac=%.17g\n"
		       "seed=%llu\nthreads=%d\ntrial_timeout=%.17g\nmetrics=",
		       (int)d->schema.task, d->test_frac, d->valid_frac,
		       (unsigned long long)d->seed, po->threads_per_trial,
		       po->trial_timeout);
	for (size_t i = 0; i < po->n_metrics; i++)
		cfl_buf_printf(b, "%s%d", i ? "," : "", (int)po->metrics[i]);
	if (cfl_buf_puts(b, "\n"))
		return cfl_err_set(err, "out of memory");
	return 0;
}

static int parse_num(const char *v, double lo, double hi, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(v, &end);
	return !*v || *end || errno || !(*out >= lo && *out <= hi) ? -1 : 0;
}

int cli_remote_config_parse(struct cli_remote_config *c, const char *text,
			    struct cfl_err *err)
{
	const char *p = text ? text : "";

	memset(c, 0, sizeof(*c));
	cfl_data_opts_init(&c->data);
	c->threads = 1;
	while (*p) {
		const char *nl = strchr(p, '\n'), *eq;
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		char line[4096], *v;
		double x;

		if (n >= sizeof(line))
			return cfl_err_set(err, "config line too long");
		memcpy(line, p, n);
		line[n] = 0;
		p += n + (nl ? 1 : 0);
		if (!n)
			continue;
		eq = strchr(line, '=');
		if (!eq)
			return cfl_err_set(err, "config line without '=': '%.60s'", line);
		line[eq - line] = 0;
		v = line + (eq - line) + 1;
		if (!strcmp(line, "run")) {
			snprintf(c->run, sizeof(c->run), "%s", v);
		} else if (!strcmp(line, "target") || !strcmp(line, "drop") ||
			   !strcmp(line, "only")) {
			char **slot = line[0] == 't' ? &c->target
				      : line[0] == 'd' ? &c->drop : &c->only;

			free(*slot);
			*slot = cfl_strdup(v, err);
			if (!*slot)
				return -1;
		} else if (!strcmp(line, "task")) {
			if (parse_num(v, 0, 2, &x))
				return cfl_err_set(err, "bad task '%s'", v);
			c->data.schema.task = (enum cfl_task)(int)x;
		} else if (!strcmp(line, "test_frac")) {
			if (parse_num(v, 0, 1, &c->data.test_frac))
				return cfl_err_set(err, "bad test_frac '%s'", v);
		} else if (!strcmp(line, "valid_frac")) {
			if (parse_num(v, 0, 1, &c->data.valid_frac))
				return cfl_err_set(err, "bad valid_frac '%s'", v);
		} else if (!strcmp(line, "seed")) {
			if (cli_parse_u64(v, &c->data.seed))
				return cfl_err_set(err, "bad seed '%s'", v);
		} else if (!strcmp(line, "threads")) {
			if (parse_num(v, 1, 256, &x))
				return cfl_err_set(err, "bad threads '%s'", v);
			c->threads = (int)x;
		} else if (!strcmp(line, "trial_timeout")) {
			if (parse_num(v, 0, 1e9, &c->trial_timeout))
				return cfl_err_set(err, "bad trial_timeout '%s'", v);
		} else if (!strcmp(line, "metrics")) {
			char *save = NULL, *tok;

			c->n_metrics = 0;
			for (tok = strtok_r(v, ",", &save); tok;
			     tok = strtok_r(NULL, ",", &save)) {
				if (c->n_metrics == CFL_WIRE_MAX_METRICS ||
				    parse_num(tok, 0, CFL_M_COUNT - 1, &x))
					return cfl_err_set(err, "bad metrics '%s'", tok);
				c->metrics[c->n_metrics++] = (enum cfl_metric_id)(int)x;
			}
		} else {
			return cfl_err_set(err, "unknown config key '%.60s' (a newer "
					   "coordinator?)", line);
		}
	}
	c->data.schema.target = c->target;
	c->data.schema.drop_re = c->drop;
	c->data.schema.only_re = c->only;
	return 0;
}

void cli_remote_config_release(struct cli_remote_config *c)
{
	free(c->target);
	free(c->drop);
	free(c->only);
	c->target = c->drop = c->only = NULL;
}
