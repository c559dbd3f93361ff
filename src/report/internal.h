/*
 * Internal to src/report: helpers its files share.  Never included from
 * outside the module.
 */
#ifndef CFL_REPORT_INTERNAL_H
#define CFL_REPORT_INTERNAL_H

#include <stddef.h>

/* The value of "key=" in a run's stored config (key=value lines) copied
 * into out, cut to cap - 1 bytes; "" when the key is absent or config is
 * NULL. */
void report_config_get(const char *config, const char *key, char *out,
		       size_t cap);

#endif
