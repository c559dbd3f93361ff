/*
 * The command line a run stores, and --resume NAME alone: the stored
 * command's arguments replayed before the new ones.  Shared by cfl repeat and
 * cfl tune, whose stored plans must survive a round trip through the
 * database exactly.
 */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

#include "cfl/store.h"

/* Quotes for /bin/sh what needs it, so the stored line can be pasted;
 * with skip_resume, "--resume NAME" and "--resume=NAME" are left out. */
static void command_line(int argc, char **argv, int skip_resume, struct cfl_buf *b)
{
	cfl_buf_puts(b, "cfl");
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];

		if (skip_resume && i > 0 && !strcmp(a, "--resume")) {
			i++;
			continue;
		}
		if (skip_resume && i > 0 && !strncmp(a, "--resume=", 9))
			continue;

		if (a[0] && !strpbrk(a, " \t\n'\"\\$`*?;&|<>(){}")) {
			cfl_buf_printf(b, " %s", a);
			continue;
		}
		cfl_buf_puts(b, " '");
		for (; *a; a++)
			cfl_buf_puts(b, *a == '\'' ? "'\\''" : (char[]){ *a, 0 });
		cfl_buf_puts(b, "'");
	}
}

void cli_command_line(int argc, char **argv, struct cfl_buf *b)
{
	command_line(argc, argv, 0, b);
}

void cli_plan_command_line(int argc, char **argv, struct cfl_buf *b)
{
	command_line(argc, argv, 1, b);
}

/* Splits a line as cli_command_line() wrote it (words separated by blanks,
 * '...' quoting, backslash escapes). */
char **cli_split_command(const char *cmd, int *argc_out)
{
	size_t len = strlen(cmd);
	char **argv = malloc((len / 2 + 2) * sizeof(char *) + len + 1);
	char *o;
	int n = 0;

	if (!argv)
		return NULL;
	o = (char *)(argv + len / 2 + 2);
	for (const char *p = cmd; *p;) {
		while (*p == ' ')
			p++;
		if (!*p)
			break;
		argv[n++] = o;
		while (*p && *p != ' ') {
			if (*p == '\'') {
				for (p++; *p && *p != '\''; p++)
					*o++ = *p;
				if (!*p) {
					free(argv);
					return NULL;
				}
				p++;
			} else if (*p == '\\' && p[1]) {
				*o++ = p[1];
				p += 2;
			} else {
				*o++ = *p++;
			}
		}
		*o++ = 0;
	}
	argv[n] = NULL;
	*argc_out = n;
	return argv;
}

char **cli_resume_argv(const char *cmd, const char *db, const char *name,
		       int argc, char **argv, int *new_argc, char ***words)
{
	struct cfl_store *st;
	struct cfl_run_info info;
	struct cfl_err err;
	char **w, **nv;
	int n_w = 0, k = 0;

	st = cfl_store_open(db, CFL_STORE_READONLY, &err);
	if (!st) {
		cli_fail(&err);
		return NULL;
	}
	if (cfl_store_run_find(st, name, &info, &err)) {
		cli_fail(&err);
		cfl_store_close(st);
		return NULL;
	}
	cfl_store_close(st);
	w = cli_split_command(info.command ? info.command : "", &n_w);
	if (!w || n_w < 2 || strcmp(w[0], "cfl") || strcmp(w[1], cmd)) {
		cli_failf("cannot resume run '%s': it was not started by cfl %s "
			  "(command: %s)", name, cmd, info.command ? info.command : "");
		cfl_run_info_release(&info);
		free(w);
		return NULL;
	}
	cfl_run_info_release(&info);
	nv = malloc(((size_t)n_w + (size_t)argc + 1) * sizeof(char *));
	if (!nv) {
		free(w);
		cli_failf("out of memory");
		return NULL;
	}
	nv[k++] = argv[0];
	for (int i = 2; i < n_w; i++)
		nv[k++] = w[i];
	for (int i = 1; i < argc; i++)
		nv[k++] = argv[i];
	nv[k] = NULL;
	*new_argc = k;
	*words = w;
	return nv;
}
