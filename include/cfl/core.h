/*
 * cfl core: errors, allocation, byte buffers, a text reader for model files,
 * seeded random streams, SHA-256, key=value parameter lists and the
 * progress display (the terminal's width, the live progress line).
 *
 * Every other module depends on this one; it depends on libc only.  Library
 * code never prints and never exits: it returns 0 / -1 (or NULL) and fills a
 * caller-owned struct cfl_err in git's tone ("cannot open 'x.csv': ...").
 */
#ifndef CFL_CORE_H
#define CFL_CORE_H

#include <stddef.h>
#include <stdint.h>
#include <stdarg.h>

#define CFL_VERSION "0.1.0"

/* ---- errors ---- */

struct cfl_err {
	char msg[1024];
};

/* Formats the message into err (if err is not NULL); always returns -1 so
 * callers can write `return cfl_err_set(err, "...")`. */
int cfl_err_set(struct cfl_err *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Prepends "prefix: " to the message already in err; returns -1. */
int cfl_err_prefix(struct cfl_err *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* ---- allocation ---- */

/* malloc/calloc/realloc that fill err with "out of memory" on failure and
 * return NULL; a size of 0 allocates 1 byte so NULL always means failure.
 * cfl_calloc checks n * size for overflow. */
void *cfl_malloc(size_t size, struct cfl_err *err);
void *cfl_calloc(size_t n, size_t size, struct cfl_err *err);
void *cfl_realloc(void *p, size_t size, struct cfl_err *err);
/* strdup that fills err on failure; NULL in gives NULL out without error. */
char *cfl_strdup(const char *s, struct cfl_err *err);
/* Asks for huge pages under a big block about to be filled (n >= 4 MiB):
 * on a virtual machine a page fault costs microseconds, and 4 KiB pages
 * made faults a third of a load's time.  Only a hint: where the kernel
 * says no, or transparent huge pages are off, nothing changes. */
void cfl_advise_huge(void *p, size_t n);

/* ---- byte buffers ---- */

/* A growable byte buffer, always NUL-terminated when data != NULL. */
struct cfl_buf {
	char *data;
	size_t len, cap;
};

void cfl_buf_init(struct cfl_buf *b);
void cfl_buf_release(struct cfl_buf *b);
/* Each returns 0, or -1 on allocation failure (the buffer is unchanged). */
int cfl_buf_reserve(struct cfl_buf *b, size_t extra);
int cfl_buf_append(struct cfl_buf *b, const void *data, size_t len);
int cfl_buf_puts(struct cfl_buf *b, const char *s);
/* Appends s as one shell word: as it is when it has only characters no
 * shell treats specially (letters, digits, _@%+=:,./-), else in single
 * quotes ('\'' for a quote), for a command line a person may paste. */
int cfl_buf_shell_word(struct cfl_buf *b, const char *s);
int cfl_buf_printf(struct cfl_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
int cfl_buf_vprintf(struct cfl_buf *b, const char *fmt, va_list ap);
/* Appends n doubles as " %.17g" each (exact round trip), or floats as " %.9g". */
int cfl_buf_doubles(struct cfl_buf *b, const double *v, size_t n);
int cfl_buf_floats(struct cfl_buf *b, const float *v, size_t n);

/* ---- text laid out for people (text.c) ---- */

/* Appends text's words as if written from column col (where the line
 * already is), wrapping before width with continuation lines indented by
 * indent blanks, then a newline.  A word longer than the room stays whole.
 * Returns 0, or -1 on allocation failure (b may hold part of the text). */
int cfl_buf_wrap(struct cfl_buf *b, const char *text, size_t col,
		 size_t indent, size_t width);
/* Appends text and a newline, each of its lines wrapped between words at
 * width (continued lines indented by one blank; a line's leading blanks
 * kept); width 0 appends text as it is.  Returns 0 or -1 as above. */
int cfl_buf_wrap_lines(struct cfl_buf *b, const char *text, size_t width);
/* Appends s as one CSV field (RFC 4180): as it is, or in double quotes
 * (doubled inside) when it holds a comma, quote or line break, or starts
 * or ends with a blank.  Returns 0 or -1 as above. */
int cfl_buf_csv_field(struct cfl_buf *b, const char *s);
/* params ("k=v,k=v", a value may hold commas: hidden=64,64) with a blank
 * after each comma that starts the next "k=" (so a wrapped line can break
 * there), into out (cap bytes, NUL-terminated, truncated to fit); NULL
 * params gives "". */
void cfl_params_spaced(const char *params, char *out, size_t cap);
/* The file a command writes when no name is given: path's basename without
 * ".gz" and its last extension, plus ext, in the current folder
 * ("dir/iris.csv.gz", ".cfl" -> "iris.cfl"; a leading dot is no
 * extension; "-", standard input -> "stdin.cfl").  Malloc'd (free() it);
 * NULL when out of memory. */
char *cfl_path_default_output(const char *path, const char *ext);

/* The length of the JSON number literal (RFC 8259:
 * -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?) at the start of s, or 0
 * when s does not start with one.  s is a whole number when s[len] is 0. */
size_t cfl_json_number_len(const char *s);

/* Reads a whole file into b (replacing its contents).  Returns 0, or -1 with
 * "cannot read 'path': strerror" in err. */
int cfl_buf_read_file(struct cfl_buf *b, const char *path, struct cfl_err *err);
/* Writes len bytes to path through a temporary file and rename(), so a crash
 * never leaves a half-written file.  Returns 0 or -1 with err filled. */
int cfl_write_file_atomic(const char *path, const void *data, size_t len,
			  struct cfl_err *err);

/* ---- text reader: whitespace-separated tokens with line numbers ---- */

/* Reads the text formats cfl writes (model files).  Errors name the source
 * and line: "model.cfl:12: expected a number, found 'x'". The reader does
 * not own buf. */
struct cfl_reader {
	const char *name;	/* for messages */
	const char *buf;
	size_t len, pos;
	size_t line;		/* 1-based line of the next token */
};

void cfl_reader_init(struct cfl_reader *r, const char *name, const char *buf,
		     size_t len);
/* Next token into out (NUL-terminated).  Returns 0, or -1 at end of input or
 * when the token is longer than cap-1 bytes. */
int cfl_reader_word(struct cfl_reader *r, char *out, size_t cap,
		    struct cfl_err *err);
/* Reads a token and checks it equals word; -1 with a message otherwise. */
int cfl_reader_expect(struct cfl_reader *r, const char *word,
		      struct cfl_err *err);
int cfl_reader_double(struct cfl_reader *r, double *out, struct cfl_err *err);
int cfl_reader_float(struct cfl_reader *r, float *out, struct cfl_err *err);
/* A non-negative integer no larger than max. */
int cfl_reader_size(struct cfl_reader *r, size_t max, size_t *out,
		    struct cfl_err *err);
int cfl_reader_int(struct cfl_reader *r, long lo, long hi, long *out,
		   struct cfl_err *err);
int cfl_reader_u64(struct cfl_reader *r, uint64_t *out, struct cfl_err *err);
int cfl_reader_doubles(struct cfl_reader *r, double *out, size_t n,
		       struct cfl_err *err);
int cfl_reader_floats(struct cfl_reader *r, float *out, size_t n,
		      struct cfl_err *err);
/* The rest of the current line, without leading blanks or the newline, as a
 * malloc'd string the caller frees; NULL with err on failure. */
char *cfl_reader_line(struct cfl_reader *r, struct cfl_err *err);
/* Fills err with "name:line: msg" and returns -1. */
int cfl_reader_fail(struct cfl_reader *r, struct cfl_err *err,
		    const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* ---- random streams ---- */

/* xoshiro256** seeded through splitmix64: the same seed gives the same
 * stream on every machine.  Never seeded from time or pid. */
struct cfl_rng {
	uint64_t s[4];
};

void cfl_rng_seed(struct cfl_rng *r, uint64_t seed);
uint64_t cfl_rng_u64(struct cfl_rng *r);
/* Uniform in [0, 1) with 53 random bits. */
double cfl_rng_uniform(struct cfl_rng *r);
/* Uniform integer in [0, n), unbiased; n must be > 0. */
uint64_t cfl_rng_below(struct cfl_rng *r, uint64_t n);
/* Standard normal (Box-Muller, no cached state, so streams stay simple). */
double cfl_rng_normal(struct cfl_rng *r);
/* Fisher-Yates shuffle of n size_t values. */
void cfl_rng_shuffle(struct cfl_rng *r, size_t *v, size_t n);
/* A seed derived from (base, tag, index) by hashing: stable across runs and
 * machines; used for trial seeds = f(run seed, model, repeat). */
uint64_t cfl_seed_derive(uint64_t base, const char *tag, uint64_t index);

/* ---- SHA-256 ---- */

/* libcrypto's SHA-256 (FIPS 180-4), the program's only one. */
struct cfl_sha256 {
	struct evp_md_ctx_st *ctx;	/* libcrypto's EVP_MD_CTX */
};

/* Streaming: init, update any number of times with pieces of any size,
 * final writes the 32-byte digest and frees s (init it again to reuse).
 * cfl_sha256_init returns 0, or -1 with err when libcrypto cannot allocate
 * its context (then s needs no release).  cfl_sha256_release abandons a
 * hash never finalised; on a released or failed s it is a no-op. */
int cfl_sha256_init(struct cfl_sha256 *s, struct cfl_err *err);
void cfl_sha256_update(struct cfl_sha256 *s, const void *data, size_t len);
void cfl_sha256_final(struct cfl_sha256 *s, unsigned char out[32]);
void cfl_sha256_release(struct cfl_sha256 *s);
/* The SHA-256 of len bytes into out.  Returns 0, or -1 with err (out of
 * memory; out is then zeroed). */
int cfl_sha256(const void *data, size_t len, unsigned char out[32],
	       struct cfl_err *err);
/* Lowercase hex of 32 bytes into hex[65]. */
void cfl_sha256_hex(const unsigned char digest[32], char hex[65]);

/* ---- regular expressions ---- */

/* A compiled regular expression (PCRE2 syntax) with the state of its last
 * match: for one thread at a time. */
struct cfl_regex;

enum {
	CFL_REGEX_UTF = 1,	/* pattern and subjects are UTF-8 */
	CFL_REGEX_DOTALL = 2,	/* '.' matches a newline too */
};

/* Compiles pattern (at most 4096 bytes) with flags (CFL_REGEX_*).
 * Returns the regex (free with cfl_regex_free), or NULL with err ("bad
 * regular expression at offset 3: missing closing parenthesis", too long,
 * or out of memory). */
struct cfl_regex *cfl_regex_new(const char *pattern, unsigned flags,
				struct cfl_err *err);
/* NULL is a no-op. */
void cfl_regex_free(struct cfl_regex *re);
/* Searches s[0..n) (unanchored unless the pattern anchors).  Returns 1 on a
 * match (its groups then readable with cfl_regex_group), 0 on none, -1 with
 * err when PCRE2 gives up: "the pattern backtracks too much (PCRE2's match
 * limit)" past a million backtracking steps or 8 MiB of heap, "pcre2 error
 * N" otherwise. */
int cfl_regex_match(struct cfl_regex *re, const char *s, size_t n,
		    struct cfl_err *err);
/* Group g (0: the whole match) of the last successful match: returns 1
 * with its offset in s and length; 0 with both 0 when the group did not
 * take part, g is past the pattern's groups, or the last match failed. */
int cfl_regex_group(const struct cfl_regex *re, unsigned g,
		    size_t *start /* OUT */, size_t *len /* OUT */);

/* ---- key=value parameter lists ---- */

/* An ordered list of string key/value pairs: the parameters of a model as
 * the user wrote them (--set key=value), a candidate of a search, or what a
 * model file stores.  Keys are unique; setting a key again replaces it. */
struct cfl_kv {
	char *key;
	char *value;
};

struct cfl_params {
	size_t n;
	struct cfl_kv *kv;
};

void cfl_params_init(struct cfl_params *p);
void cfl_params_release(struct cfl_params *p);
/* Returns 0, or -1 on allocation failure. */
int cfl_params_set(struct cfl_params *p, const char *key, const char *value,
		   struct cfl_err *err);
/* Parses "key=value" (key: letters, digits, '_', '.'); -1 with a message
 * naming the argument when malformed. */
int cfl_params_set_arg(struct cfl_params *p, const char *arg,
		       struct cfl_err *err);
/* The value of key, or NULL when it is not set. */
const char *cfl_params_get(const struct cfl_params *p, const char *key);
int cfl_params_copy(struct cfl_params *dst, const struct cfl_params *src,
		    struct cfl_err *err);
/* Sorts by key, so equal sets compare and hash equal. */
void cfl_params_sort(struct cfl_params *p);
/* Appends "k1=v1,k2=v2" (in list order) to b. */
int cfl_params_format(const struct cfl_params *p, struct cfl_buf *b);

/* ---- words ---- */

/* The name among names[0..n) closest to word, for a "did you mean": edit
 * distance (insert, delete, substitute, swap two neighbours; case ignored)
 * at most a third of word's length, one at least; the first of equally
 * close ones.  NULL when none is that close, or word is empty; NULL
 * entries and word itself are skipped.  Not thread-safe (a static
 * table). */
const char *cfl_closest(const char *word, const char *const *names, size_t n);
/* cfl_closest by other rules (flags, or'ed): CFL_CLOSEST_CASE compares
 * case too; CFL_CLOSEST_PREFIX also takes a name of two letters or more
 * that starts with word, or that word starts with, as close (for options:
 * "--model" for "--models"). */
enum { CFL_CLOSEST_CASE = 1, CFL_CLOSEST_PREFIX = 2 };
const char *cfl_closest_as(const char *word, const char *const *names,
			   size_t n, unsigned flags);

/* ---- time and misc ---- */

/* Monotonic seconds. */
double cfl_now(void);
/* Wall-clock seconds since the epoch. */
double cfl_wall_time(void);

/* ---- progress display (progress.c) ----
 * What a person sees on the terminal while a run works: the terminal's
 * width and the live progress line, formatted to fit it.  Owns no state
 * and never prints: the commands keep their counts and print the line.
 */
/* The columns of the terminal on fd: $COLUMNS when it is a positive number
 * (the user's word wins, as for ls and Python), else what the terminal says
 * (TIOCGWINSZ), else 80.  Never 0. */
size_t cfl_term_width(int fd);

/* True when fd is a terminal a person looks at: a tty with a size.  The
 * pty Open MPI's mpirun gives its ranks for stdout is a tty of 0 columns:
 * what goes through it lands in mpirun's own stdout, often a pipe, so it
 * is not taken for a terminal. */
int cfl_is_terminal(int fd);

/* The counts a progress line shows. */
struct cfl_progress_counts {
	size_t done, failed, running, total;	/* trials */
	double elapsed;		/* seconds since the pool started */
	double eta;		/* seconds left (cfl_eta_left); < 0: unknown,
				 * shown "--:--" */
	int eta_lower;		/* eta is a lower bound: shown ">00:20" */
	int have_best;		/* best_* below are set */
	const char *best_metric;	/* the first metric's name */
	double best_value;	/* its best value on test so far */
	const char *best_model;
	size_t n_models;	/* per model (0: not shown) */
	const char *const *models;	/* (n_models) names */
	const size_t *model_done;	/* (n_models) trials done */
};

/* Writes into out (cap bytes, NUL-terminated) the progress line for a
 * terminal of width columns: the first of these forms that fits in
 * width - 1 columns (the last column is left free, so the line never wraps
 * on a terminal that wraps at the margin):
 *   "7/30 done (fcnn 3, tree 4), 2 running, 0 failed, 00:03 elapsed, ETA 00:10, best acc 0.9667 (tree)"
 *   the same without the per-model counts; with short words
 *   ("7/30 done (fcnn 3, tree 4), 2 run, 0 fail, 00:03 el, ETA 00:10, best ...");
 *   long words without the best; short words without the models, then
 *   without the best; long, then short words alone; "7/30 00:03 ETA 00:10",
 *   and at last that cut to width - 1.  The elapsed time is in every form.
 *   Returns the line's length in bytes (ASCII only when the model names
 *   are). */
size_t cfl_progress_format(const struct cfl_progress_counts *c, size_t width,
			   char *out, size_t cap);

/* What `cfl auto`'s live line shows. */
struct cfl_auto_counts {
	const char *phase;	/* "search", "bags", "ensembles" */
	const char *family;	/* search: the family searched, or NULL */
	size_t n_cands;		/* search: candidates scored so far (all
				 * families) */
	size_t done, total;	/* bags: fold trials done of total (total
				 * 0: unknown) */
	double elapsed;		/* seconds since the run started */
	double left;		/* seconds to its time limit (< 0: none) */
};

/* Writes into out (cap bytes) auto's live line for a terminal of width
 * columns, the first form that fits in width - 1 columns:
 *   "auto: search fcnn, 12 candidates so far, 00:03 elapsed, 00:07 left"
 *   "auto: bags 12/25 folds, 00:06 elapsed, 00:04 left"
 *   "auto: ensembles, 00:09 elapsed, 00:01 left"
 * then without "auto: ", with short words ("12 cand", "el", "left"), and
 * at last cut to width - 1.  Returns its length in bytes. */
size_t cfl_auto_progress_format(const struct cfl_auto_counts *c, size_t width,
				char *out, size_t cap);

/* ---- the time left of a run, from per-model trial times ---- */

#define CFL_ETA_MAX_MODELS 16

/* What the estimate knows of one model's trials. */
struct cfl_eta_model {
	size_t queued;		/* not started (queued, interrupted) */
	size_t n_done;		/* done and timed */
	double done_seconds;	/* their durations' sum */
};

/* One running trial: its model's index and how long it has run. */
struct cfl_eta_running {
	size_t model;
	double age;
};

/* The seconds left for n_models models of trials (at most
 * CFL_ETA_MAX_MODELS are looked at) and n_run running trials on slots
 * slots: each model's queued trials at its mean trial time, each running
 * trial the rest of that mean (0 when it ran longer), the sum over the
 * slots busy, and no less than the longest rest of a running trial.  A
 * model not timed yet is priced at the age of its oldest running trial, a
 * lower bound (*lower set to 1; else 0); with trials left and neither, the
 * time is unknown: -1. */
double cfl_eta_compute(const struct cfl_eta_model *m, size_t n_models,
		       const struct cfl_eta_running *run, size_t n_run,
		       size_t slots, int *lower /* OUT */);

/* An estimate and when it was made, counted down between updates. */
struct cfl_eta {
	double est, at;		/* seconds left, made at cfl_now() at (est
				 * < 0: unknown) */
	int lower;		/* est is a lower bound */
	int made;		/* an estimate was made */
};

/* No estimate yet, at now. */
void cfl_eta_init(struct cfl_eta *e, double now);
/* The seconds left at now, counted down since the estimate was made (a
 * lower bound is not: it grows with the running trials' age); -1 when
 * unknown.  *lower (may be NULL): 1 when it is a lower bound. */
double cfl_eta_left(const struct cfl_eta *e, double now, int *lower /* OUT */);

/* "MM:SS" or "H:MM:SS" of s seconds (negative as 0) into out. */
void cfl_format_duration(double s, char *out, size_t cap);

/* ---- spare cores (src/core/spare.c) ----
 * A count, shared by a local pool and the workers it forks, of the pool's
 * slots idle with nothing queued.  A trial that can use a second thread
 * claims one and gives it back at its end, or as soon as the pool wants
 * it back.  A model's result never depends on whether it got one. */
#define CFL_SPARE_MAX_WORKERS 256

/* The pool: maps the shared count (once per process; the MPI ranks of one
 * job on one node share one), before it forks. */
int cfl_spare_init(struct cfl_err *err);
/* The pool at its end: the node's shared count (MPI ranks) loses its
 * name; the mappings stay for whoever has one. */
void cfl_spare_unlink(void);
/* The pool, before a fork: a free index for the worker (-1: none, or no
 * count); cfl_spare_lost frees it. */
int cfl_spare_index(void);
/* A forked worker: its index among the pool's workers. */
void cfl_spare_worker(int index);
/* The pool: n of its slots are spare now (0: it wants them all back). */
void cfl_spare_offer(int n);
/* The pool: worker index is gone; a core it held is spare again, and the
 * index free. */
void cfl_spare_lost(int index);
/* 1 when this process claimed a spare core (at most one at a time). */
int cfl_spare_claim(void);
/* 1 when this process holds one and the pool wants it back. */
int cfl_spare_wanted(void);
/* Gives the claimed core back (nothing when none is held). */
void cfl_spare_return(void);
/* The count now: offered less claimed (0 without a shared count). */
int cfl_spare_count(void);
/* The claims made on this process's count since it was mapped. */
int cfl_spare_claims(void);

#endif
