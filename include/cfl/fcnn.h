/*
 * cfl fcnn: what the fully connected network (src/models/fcnn.c) exposes
 * besides its model ops, for tests: building an initialised network
 * without training it, its parameter vector, and the mean training loss
 * with its gradient on a set of rows, so gradients can be checked against
 * finite differences.  Everything else goes through include/cfl/model.h.
 */
#ifndef CFL_FCNN_H
#define CFL_FCNN_H

#include "cfl/model.h"

/* Builds m's network for the shape of xy (m's params checked, as by
 * cfl_model_new) and initialises it from m->seed, without training;
 * regression targets are standardised with xy's mean and std.  Replaces
 * any state m had.  0, or -1 with err (a bad hidden list, a loss that
 * does not fit the task, no memory). */
int cfl_fcnn_build(struct cfl_model *m, const struct cfl_xy *xy,
		   struct cfl_err *err);

/* The trained parameters of a built or fitted network as one vector (the
 * order save writes them in: per layer weights (n_out, n_in), biases, then
 * batch-norm scales and shifts); *n gets its length.  NULL when m has no
 * network.  Writing through the pointer changes the model. */
float *cfl_fcnn_theta(struct cfl_model *m, size_t *n /* OUT */);

/* The mean loss of the network on all rows of xy taken as one training
 * batch (batch statistics, dropout masks drawn from drop_seed; running
 * statistics are left alone), and when grad is not NULL its gradient
 * with respect to cfl_fcnn_theta (grad holds *n floats).  Returns the
 * loss, or NaN when m has no network or memory ran out. */
double cfl_fcnn_loss_grad(struct cfl_model *m, const struct cfl_xy *xy,
			  uint64_t drop_seed, float *grad /* OUT, or NULL */);

/* After a fit: the epochs run and the 1-based epoch whose weights were
 * kept (the last one without early stopping).  -1 when m has no network. */
int cfl_fcnn_epochs(const struct cfl_model *m, size_t *n_run /* OUT */,
		    size_t *best /* OUT */);

/* After a fit: its steps whose second half ran on a second thread (on a
 * spare core, cfl_spare_claim); 0 when m has no network. */
size_t cfl_fcnn_helper_steps(const struct cfl_model *m);

#endif
