/*
 * What cfl says when a command or an option is not one it knows: one
 * message naming the word, the closest known one when it is close ("did you
 * mean 'repeat'?"), and where to look.  getopt's own messages are off
 * (opterr = 0, set in main), so a bad option gets this one message only.
 */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *cli_closest(const char *word, const char *const *names, size_t n)
{
	return cfl_closest_as(word, names, n, CFL_CLOSEST_CASE | CFL_CLOSEST_PREFIX);
}

int cli_bad_option(const char *cmd, int argc, char **argv,
		   const char *shortopts, const struct option *longopts)
{
	const char *arg = optind - 1 >= 1 && optind - 1 < argc ? argv[optind - 1] : "";
	char name[128];
	const char *names[128];
	size_t n = 0, len;
	const char *eq, *close;

	/* a short option: optopt names it.  getopt moves optind past a
	 * cluster ("-qz") only after its last letter, so the bad letter is in
	 * argv[optind] when it was not the last one. */
	int in_cluster = optind < argc && argv[optind][0] == '-' &&
			 argv[optind][1] && argv[optind][1] != '-' &&
			 optopt > 0 && optopt < 128 && strchr(argv[optind] + 1, optopt);

	if (optopt > 0 && optopt < 128 && (strncmp(arg, "--", 2) || in_cluster)) {
		const char *p = strchr(shortopts, optopt);

		if (p && optopt != ':' && p[1] == ':')
			return cli_usage_error(cmd, "option '-%c' needs a value", optopt);
		return cli_usage_error(cmd, "unknown option '-%c'", optopt);
	}
	if (strncmp(arg, "--", 2))
		return cli_usage_error(cmd, "unknown option '%s'", arg);
	eq = strchr(arg + 2, '=');
	len = eq ? (size_t)(eq - arg - 2) : strlen(arg + 2);
	snprintf(name, sizeof(name), "%.*s", (int)(len < 100 ? len : 100), arg + 2);
	for (const struct option *o = longopts; o && o->name; o++) {
		if (!strcmp(o->name, name)) {
			if (o->has_arg == required_argument && !eq)
				return cli_usage_error(cmd, "option '--%s' needs a value", name);
			if (o->has_arg == no_argument && eq)
				return cli_usage_error(cmd, "option '--%s' takes no value", name);
		}
		if (n < sizeof(names) / sizeof(names[0]))
			names[n++] = o->name;
	}
	/* more than one option starts with it: getopt found it ambiguous */
	{
		size_t k = 0;
		char list[512] = "";

		for (size_t i = 0; i < n; i++)
			if (len && !strncmp(names[i], name, len)) {
				size_t l = strlen(list);

				k++;
				snprintf(list + l, sizeof(list) - l, "%s'--%s'",
					 l ? ", " : "", names[i]);
			}
		if (k > 1)
			return cli_usage_error(cmd, "option '--%s' is ambiguous: %s", name, list);
	}
	close = cli_closest(name, names, n);
	if (close)
		return cli_usage_error(cmd, "unknown option '--%s'; did you mean '--%s'?",
				       name, close);
	return cli_usage_error(cmd, "unknown option '--%s'", name);
}
