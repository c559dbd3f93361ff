/*
 * Remote workers from the command line: the --listen / --token-file /
 * --heartbeat options a command that runs a pool (repeat, tune) shares.
 * Built on src/run/tcp.c; see `cfl worker`.
 */
#ifndef CFL_CLI_REMOTE_H
#define CFL_CLI_REMOTE_H

#include "cli.h"

#include "cfl/net.h"
#include "cfl/run.h"

/* Option ids: between the data options and CLI_OPT_FIRST_FREE. */
enum {
	CLI_OPT_LISTEN = 1050,
	CLI_OPT_TOKEN_FILE,
	CLI_OPT_HEARTBEAT,
	CLI_OPT_MAX_WORKERS,
};

#define CLI_REMOTE_LONGOPTS                                                  \
	{ "listen", required_argument, 0, CLI_OPT_LISTEN },                 \
	{ "token-file", required_argument, 0, CLI_OPT_TOKEN_FILE },         \
	{ "heartbeat", required_argument, 0, CLI_OPT_HEARTBEAT },           \
	{ "max-workers", required_argument, 0, CLI_OPT_MAX_WORKERS }

/* The --help lines of the options above. */
extern const char cli_remote_help[];

struct cli_remote {
	const char *listen;	/* NULL: no remote workers */
	const char *token_file;
	double heartbeat;
	long max_workers;	/* remote workers connected at once */
	struct cfl_token token;
	int lfd;		/* cli_remote_bind's socket, until started */
	int port;		/* the port it bound */
	struct cfl_tcp *tcp;
};

void cli_remote_init(struct cli_remote *r);
/* Handles option c when it is one of the above: 1 handled, 0 not ours, -1
 * after printing a usage error for cmd. */
int cli_remote_option(struct cli_remote *r, const char *cmd, int c,
		      const char *arg);
/* Checks the options before any work (a token file for a non-loopback
 * address, the token file's mode): 0, or the exit code after printing
 * why. */
int cli_remote_check(struct cli_remote *r, const char *cmd);
/* Listens early, before the data load, and prints the exact `cfl worker`
 * line on stderr: workers started from it connect, start and wait while the
 * coordinator loads.  No-op without --listen.  Returns 0, or 1 after
 * printing why. */
int cli_remote_bind(struct cli_remote *r, const char *cmd);
/* Starts serving workers on the pool (after cfl_pool_new) on the socket
 * cli_remote_bind bound (binding it now when it did not run).  Returns 0,
 * or 1 after printing why. */
int cli_remote_start(struct cli_remote *r, const char *cmd,
		     struct cfl_pool *pool, const struct cfl_data_opts *d,
		     const struct cfl_data *data,
		     const struct cfl_pool_opts *po, const char *run_key,
		     int quiet);
/* Closes the listener: after cfl_pool_close.  Safe when never bound or
 * started. */
void cli_remote_stop(struct cli_remote *r);

#endif
