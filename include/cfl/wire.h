/*
 * cfl wire: the frames every pool transport carries (fork socketpairs, TCP,
 * MPI).  Pure encode / decode on byte buffers, no I/O, so it can be fuzzed
 * and so every transport speaks exactly the same protocol.
 *
 * A frame is a fixed 20-byte header, a bounded payload and, when the header
 * has CFL_WIRE_F_MAC, a 32-byte trailer (a MAC over header + payload that the
 * TCP transport computes and checks; this codec only reserves its place).
 * All integers are little-endian; doubles travel as their IEEE-754 bits, so
 * a value arrives bit-identical.
 *
 *   offset size  field
 *   0      4     magic   "CFLW"
 *   4      1     version CFL_WIRE_VERSION
 *   5      1     type    enum cfl_wire_type
 *   6      2     flags   CFL_WIRE_F_*
 *   8      8     seq     sender's sequence number (per connection, per
 *                        direction; the transport may require it to grow)
 *   16     4     length  payload bytes, at most cfl_wire_max_payload(type)
 *
 * Payload fields: u8/u32/u64/i32/i64, f64, bytes32 (fixed 32 bytes), str
 * (u32 length + bytes, no NUL inside), arrays (u32 count + items).  The
 * decoder checks every count against the bytes left before allocating, so
 * a hostile peer cannot make it allocate more than a few times the frame
 * size; trailing bytes, unknown types or flags, a wrong magic or version
 * and an oversized length are errors.
 *
 * Depends on core only (struct cfl_params, struct cfl_buf, struct cfl_err).
 */
#ifndef CFL_WIRE_H
#define CFL_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "cfl/core.h"

#define CFL_WIRE_MAGIC "CFLW"
/* 2: a RESULT may carry the model; 3: a LEASE may carry a time budget and
 * a row sample, the frame PROGRESS, the dataset carries its encoder (a
 * worker and a coordinator of another version refuse each other by name) */
#define CFL_WIRE_VERSION 3
#define CFL_WIRE_HEADER_SIZE 20
#define CFL_WIRE_MAC_SIZE 32
/* Largest payload a decoder accepts (a RESULT with out-of-fold predictions
 * of 100k rows is about 2 MB; a CHUNK of the dataset at most this). */
#define CFL_WIRE_MAX_PAYLOAD (64u << 20)
/* Largest model text a RESULT may carry on top (CFL_LEASE_KEEP_MODEL): a
 * forest of a few hundred deep trees; RESULT's limit is the sum. */
#define CFL_WIRE_MAX_MODEL (192u << 20)
/* Largest HELLO payload: all a peer may send before it is accepted. */
#define CFL_WIRE_HELLO_MAX 1024u
/* Bounds on lists inside a payload. */
#define CFL_WIRE_MAX_METRICS 32
#define CFL_WIRE_MAX_PARAMS 256
/* The splits of a RESULT, in this order (the store's enum cfl_store_split
 * uses the same order: valid, test, oof). */
#define CFL_WIRE_N_SPLITS 3

/* Header flags. */
#define CFL_WIRE_F_MAC 0x0001u	/* a CFL_WIRE_MAC_SIZE trailer follows the payload */
#define CFL_WIRE_F_KNOWN 0x0001u	/* every flag this version knows */

enum cfl_wire_type {
	CFL_WIRE_HELLO = 1,	/* worker -> coordinator: who I am, my slots */
	CFL_WIRE_WELCOME,	/* coordinator -> worker: accepted; the dataset, the config */
	CFL_WIRE_LEASE,		/* coordinator -> worker: run this trial (attempt n) */
	CFL_WIRE_RESULT,	/* worker -> coordinator: a trial's outcome */
	CFL_WIRE_RESULT_ACK,	/* coordinator -> worker: result stored (or a duplicate) */
	CFL_WIRE_HEARTBEAT,	/* either way: I am alive */
	CFL_WIRE_CANCEL,	/* coordinator -> worker: drop this lease */
	CFL_WIRE_FETCH,		/* worker -> coordinator: send me bytes of the dataset */
	CFL_WIRE_CHUNK,		/* coordinator -> worker: bytes of the dataset */
	CFL_WIRE_ERROR,		/* either way: a fatal protocol or setup error */
	CFL_WIRE_SHUTDOWN,	/* coordinator -> worker: no more work, leave */
	CFL_WIRE_PROGRESS,	/* worker -> coordinator: an intermediate score of
				 * a running trial (CFL_LEASE_PROGRESS) */
	CFL_WIRE_TYPE_END
};

/* "HELLO", "LEASE", ...; "?" for an unknown value. */
const char *cfl_wire_type_name(int type);
/* The largest payload a frame of this type may carry (0: unknown type).
 * Only RESULT (predictions and a model: CFL_WIRE_MAX_PAYLOAD +
 * CFL_WIRE_MAX_MODEL) and CHUNK (the dataset, CFL_WIRE_MAX_PAYLOAD) may be
 * large; HELLO CFL_WIRE_HELLO_MAX; WELCOME and LEASE
 * 1 MiB; ERROR 64 KiB; RESULT_ACK, HEARTBEAT, CANCEL, FETCH, SHUTDOWN and
 * PROGRESS 256 bytes.  The decoder refuses a header over it before any payload
 * arrives; the encoder refuses to build such a frame. */
uint32_t cfl_wire_max_payload(int type);
/* 1 when a worker may send a frame of this type to its coordinator
 * (HELLO, RESULT, HEARTBEAT, FETCH, ERROR), else 0: the coordinator refuses
 * any other type from the header, before it holds the payload. */
int cfl_wire_from_worker(int type);

/* ---- messages ---- */

/* Every pointer member of a decoded message is malloc'd and freed by
 * cfl_wire_msg_release; for encoding the caller owns them (NULL strings
 * are sent as empty). */

struct cfl_wire_hello {
	uint32_t proto;		/* CFL_WIRE_VERSION the sender speaks */
	uint32_t n_slots;	/* trials it can run at once */
	uint64_t caps;		/* capability bits (none defined yet: 0) */
	char *name;		/* e.g. "host:pid" or "local:3" */
	uint8_t nonce[32];	/* TCP authentication: challenge (zero for fork) */
	uint8_t proof[32];	/* TCP authentication: response (zero for fork) */
};

struct cfl_wire_welcome {
	uint32_t proto;
	uint32_t heartbeat_ms;	/* how often to send HEARTBEAT (0: never) */
	uint8_t nonce[32];
	uint8_t proof[32];
	uint8_t data_sha256[32];/* the dataset the leases refer to */
	uint64_t data_size;	/* its size in bytes (for FETCH) */
	char *config;		/* how to load it: "key=value" lines (data options) */
};

/* Lease flags. */
#define CFL_LEASE_BOOTSTRAP 0x1u	/* fit on a seeded bootstrap sample of train */
#define CFL_LEASE_KEEP_VALID 0x2u	/* return predictions on the validation part */
#define CFL_LEASE_KEEP_TEST 0x4u	/* return predictions on the test part */
#define CFL_LEASE_KEEP_OOF 0x8u		/* return out-of-fold predictions (fold >= 0) */
#define CFL_LEASE_NOOP 0x10u		/* do nothing, return an empty result (benchmarks) */
#define CFL_LEASE_COMMAND 0x20u		/* model is a shell command (cfl tune --command):
					 * run it, its last stdout line is metric "value" */
#define CFL_LEASE_REFIT 0x40u		/* fit on train and validation together, no
					 * early stopping (tune's refit) */
#define CFL_LEASE_KEEP_MODEL 0x80u	/* return the fitted model's text (cfl
					 * repeat --save): its state, no encoder */
#define CFL_LEASE_IMPORTANCE 0x100u	/* also return permutation importance on
					 * the validation part */
#define CFL_LEASE_PROGRESS 0x200u	/* send PROGRESS frames as the model
					 * trains (fcnn: each epoch; gbdt: every
					 * CFL_MODEL_REPORT_ROUNDS rounds), for
					 * pruning; needs validation rows */
#define CFL_LEASE_KNOWN 0x3ffu

struct cfl_wire_lease {
	int64_t trial_id;	/* the scheduler's trial key (store id) */
	uint32_t attempt;	/* 1, 2, ...: a result names its attempt */
	char *model;		/* registered model name */
	struct cfl_params params;	/* the candidate's params */
	uint64_t seed;		/* the trial seed (derived by the coordinator) */
	uint64_t fold_seed;	/* seed of the k-fold assignment: the same for
				 * every model of a repeat, so out-of-fold
				 * predictions line up for stacking */
	int32_t repeat;
	int32_t fold;		/* -1: no folds */
	uint32_t n_folds;	/* 0 when fold == -1 */
	uint32_t flags;		/* CFL_LEASE_* */
	uint32_t threads;	/* BLAS threads for this trial (>= 1) */
	uint32_t n_metrics;
	uint8_t metrics[CFL_WIRE_MAX_METRICS];	/* enum cfl_metric_id values */
	/* Optional, at the end of the payload (sent only when > 0; a lease
	 * that ends before it has none): */
	double budget_s;	/* the fit's time budget in seconds, finite and
				 * >= 0; 0: none */
	uint64_t sample_rows;	/* > 0: the fit takes at most this many of
				 * its rows (train, or train minus the fold),
				 * a sample drawn with the fold seed, so every
				 * trial of a run with the same rows to pick
				 * from gets the same sample; 0: all.  Sent
				 * after budget_s (then sent even when 0) */
};

struct cfl_wire_metric {
	char name[32];		/* NUL-terminated, at most 31 bytes */
	double value;		/* NaN: undefined on this data */
};

struct cfl_wire_split {
	uint32_t n_metrics;
	struct cfl_wire_metric *metrics;
	uint32_t n, n_out;	/* predictions: (n, n_out); 0 when not kept */
	double *pred;		/* (n, n_out) row-major, or NULL */
	uint32_t *rows;		/* (n) row indices, or NULL: the split's rows in order */
};

/* RESULT status. */
enum cfl_wire_status {
	CFL_RESULT_OK = 0,
	CFL_RESULT_MODEL_ERROR = 1,	/* the model failed: error says why (retried
					 * up to --max-retries, then failed) */
	CFL_RESULT_CRASHED = 2,		/* a remote worker's local process died running
					 * it: retried, counts toward poison */
};

struct cfl_wire_result {
	int64_t trial_id;
	uint32_t attempt;
	uint32_t status;	/* enum cfl_wire_status */
	char *error;		/* status != OK: the model's message */
	double duration;	/* seconds: fit + predict + metrics */
	double fit_seconds, predict_seconds;
	uint64_t peak_rss_kb;	/* the worker process's peak RSS */
	struct cfl_wire_split split[CFL_WIRE_N_SPLITS];	/* valid, test, oof */
	uint32_t n_iter_kept;	/* the model stopped early: the epochs or
				 * rounds it kept (cfl_model's); else 0 */
	char *model;		/* CFL_LEASE_KEEP_MODEL: the model file's text
				 * without its encoder (cfl_model_format), at
				 * most CFL_WIRE_MAX_MODEL bytes; else NULL
				 * (sent as empty, decoded as NULL) */
	/* Feature importance by input column (the data's encoder order), at
	 * the end of the payload and optional (a peer that sends none ends
	 * the payload before it): n_columns 0 when there is none. */
	uint32_t n_columns;
	double *impurity;	/* (n_columns), or NULL: a model without one */
	double *permutation;	/* (n_columns), or NULL: not asked for */
};

struct cfl_wire_ack {
	int64_t trial_id;
	uint32_t attempt;
	uint32_t duplicate;	/* 1: the trial already had a result */
};

struct cfl_wire_heartbeat {
	uint64_t time_ms;	/* sender's monotonic clock (for logs only) */
	uint32_t n_running;	/* trials the sender is running */
};

struct cfl_wire_cancel {
	int64_t trial_id;
	uint32_t attempt;
};

struct cfl_wire_progress {
	int64_t trial_id;
	uint32_t attempt;
	uint32_t step;		/* epochs or rounds so far, >= 1 */
	double score;		/* validation score there, higher is better */
};

struct cfl_wire_fetch {
	uint8_t sha256[32];
	uint64_t offset;
	uint32_t max_len;
};

struct cfl_wire_chunk {
	uint8_t sha256[32];
	uint64_t offset;
	uint64_t total;		/* the whole file's size */
	uint32_t n;
	uint8_t *data;		/* (n) */
};

struct cfl_wire_error {
	uint32_t code;		/* CFL_WIRE_E_* */
	char *message;
};

#define CFL_WIRE_E_PROTOCOL 1	/* malformed or unexpected frame */
#define CFL_WIRE_E_VERSION 2	/* version mismatch */
#define CFL_WIRE_E_AUTH 3	/* authentication failed */
#define CFL_WIRE_E_DATA 4	/* dataset missing, wrong hash or not loadable */
#define CFL_WIRE_E_INTERNAL 5

struct cfl_wire_shutdown {
	uint32_t reason;	/* 0: done, 1: interrupted, 2: error */
};

struct cfl_wire_msg {
	enum cfl_wire_type type;
	union {
		struct cfl_wire_hello hello;
		struct cfl_wire_welcome welcome;
		struct cfl_wire_lease lease;
		struct cfl_wire_result result;
		struct cfl_wire_ack ack;
		struct cfl_wire_heartbeat heartbeat;
		struct cfl_wire_cancel cancel;
		struct cfl_wire_progress progress;
		struct cfl_wire_fetch fetch;
		struct cfl_wire_chunk chunk;
		struct cfl_wire_error error;
		struct cfl_wire_shutdown shutdown;
	} u;
};

/* Zeroes m and sets its type (lease params initialised, fold -1). */
void cfl_wire_msg_init(struct cfl_wire_msg *m, enum cfl_wire_type type);
/* Frees what a decode allocated and zeroes m.  Safe on an initialised or
 * zeroed message. */
void cfl_wire_msg_release(struct cfl_wire_msg *m);

/* ---- frames ---- */

struct cfl_wire_frame {
	uint8_t version, type;
	uint16_t flags;
	uint64_t seq;
	uint32_t length;	/* payload bytes */
	const uint8_t *payload;	/* points into the decoded buffer */
	const uint8_t *mac;	/* CFL_WIRE_MAC_SIZE bytes, or NULL without F_MAC */
	size_t size;		/* whole frame: header + payload (+ mac) */
};

/* Encodes m as one frame appended to out: header, payload and (with
 * CFL_WIRE_F_MAC in flags) CFL_WIRE_MAC_SIZE zero bytes for the transport
 * to fill with a MAC of everything before them.  Returns 0, or -1 with err
 * ("wire: LEASE payload too large", a string with a NUL, a count above its
 * bound, unknown flags, out of memory); out is unchanged on failure. */
int cfl_wire_encode(struct cfl_buf *out, uint64_t seq, uint16_t flags,
		    const struct cfl_wire_msg *m, struct cfl_err *err);

/* Finds the frame at the start of buf[0..len).  Returns 0 with f filled
 * (payload and mac point into buf), 1 when buf holds only part of a frame
 * (read more; a bad header is reported as soon as 20 bytes are in), or -1
 * with err on a wrong magic, version, unknown type or flags, or a length
 * above CFL_WIRE_MAX_PAYLOAD.  Checks the header only. */
int cfl_wire_frame_split(const void *buf, size_t len,
			 struct cfl_wire_frame *f /* OUT */,
			 struct cfl_err *err);

/* Decodes the payload of a frame of the given type into m (initialised
 * here).  Returns 0, or -1 with err ("wire: truncated LEASE payload",
 * "wire: 3 trailing bytes in ACK", a bad count or string) and m released. */
int cfl_wire_payload_decode(int type, const uint8_t *payload, size_t len,
			    struct cfl_wire_msg *m /* OUT */,
			    struct cfl_err *err);

/* cfl_wire_frame_split then cfl_wire_payload_decode: 0 with f and m
 * filled (release m), 1 when more bytes are needed (m untouched), -1 on a
 * bad frame (err). */
int cfl_wire_decode(const void *buf, size_t len,
		    struct cfl_wire_frame *f /* OUT */,
		    struct cfl_wire_msg *m /* OUT */, struct cfl_err *err);

#endif
