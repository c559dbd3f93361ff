#!/usr/bin/python3
"""W4 peer: minimise Branin, Hartmann6 or Rosenbrock with Optuna's TPE or
random sampler (seed = run seed), by ask and tell, and print one line per
seed: "seed regret@30 regret@N median_ms_per_proposal median_cpu_ms" (the
medians over proposals 81..100, or over all when the budget is 50 or less;
cpu: the process's CPU time), the same format as tests/bench/w4_driver.c.

    w4_optuna.py FUNCTION tpe|random BUDGET SEED0 SEED1
"""
import math
import sys
import time

import optuna

optuna.logging.set_verbosity(optuna.logging.WARNING)


def branin(x):
    b, c, t = 5.1 / (4 * math.pi ** 2), 5 / math.pi, 1 / (8 * math.pi)
    u = x[1] - b * x[0] ** 2 + c * x[0] - 6
    return u * u + 10 * (1 - t) * math.cos(x[0]) + 10


AL = [1.0, 1.2, 3.0, 3.2]
A = [[10, 3, 17, 3.5, 1.7, 8], [0.05, 10, 17, 0.1, 8, 14],
     [3, 3.5, 1.7, 10, 17, 8], [17, 8, 0.05, 10, 0.1, 14]]
P = [[1312, 1696, 5569, 124, 8283, 5886], [2329, 4135, 8307, 3736, 1004, 9991],
     [2348, 1451, 3522, 2883, 3047, 6650], [4047, 8828, 8732, 5743, 1091, 381]]


def hartmann6(x):
    return -sum(AL[i] * math.exp(-sum(A[i][j] * (x[j] - P[i][j] * 1e-4) ** 2
                                      for j in range(6))) for i in range(4))


def rosenbrock(x):
    return sum(100 * (x[i + 1] - x[i] ** 2) ** 2 + (1 - x[i]) ** 2 for i in range(3))


FUNCS = {
    "branin": (branin, [(-5, 10), (0, 15)], 0.397887),
    "hartmann6": (hartmann6, [(0, 1)] * 6, -3.322368),
    "rosenbrock": (rosenbrock, [(-5, 10)] * 4, 0.0),
}


def main():
    fn, method, budget, s0, s1 = sys.argv[1], sys.argv[2], int(sys.argv[3]), \
        int(sys.argv[4]), int(sys.argv[5])
    f, bounds, fmin = FUNCS[fn]
    for seed in range(s0, s1 + 1):
        sampler = (optuna.samplers.TPESampler(seed=seed) if method == "tpe"
                   else optuna.samplers.RandomSampler(seed=seed))
        study = optuna.create_study(sampler=sampler)
        dists = {"x%d" % i: optuna.distributions.FloatDistribution(lo, hi)
                 for i, (lo, hi) in enumerate(bounds)}
        best, best30, ms, cpu = math.inf, math.inf, [], []
        for t in range(budget):
            t0, c0 = time.perf_counter(), time.process_time()
            trial = study.ask(dists)
            cpu.append((time.process_time() - c0) * 1e3)
            ms.append((time.perf_counter() - t0) * 1e3)
            x = [trial.params["x%d" % i] for i in range(len(bounds))]
            y = f(x)
            study.tell(trial, y)
            best = min(best, y)
            if t == 29:
                best30 = best
        def late(v):
            # the upper middle of an even count, as w4_driver.c
            v = sorted(v[-20:] if budget > 50 else v)
            return v[len(v) // 2]
        print("%d %.6g %.6g %.3f %.3f" % (seed, best30 - fmin, best - fmin,
                                          late(ms), late(cpu)), flush=True)


if __name__ == "__main__":
    main()
