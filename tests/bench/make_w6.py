"""W6's numeric CSV (../shared/WORKLOADS.md), seeded, so every bench that
asks for the same rows gets the same file:

    python3 make_w6.py PATH ROWS

20 normal columns of random scales and offsets written %.6g and a 0/1
target (a noisy linear rule); written to PATH.tmp, then renamed."""
import os
import sys

import numpy as np

path, n, d = sys.argv[1], int(sys.argv[2]), 20
rng = np.random.default_rng(6)
scale = 10.0 ** rng.uniform(-3, 4, d)
offset = rng.normal(0, 3, d) * scale
w = rng.normal(0, 1, d)
with open(path + '.tmp', 'w') as f:
    f.write(','.join('x%d' % j for j in range(d)) + ',y\n')
    for s in range(0, n, 100000):
        z = rng.normal(0, 1, (min(100000, n - s), d))
        y = (z @ w + rng.normal(0, 1, len(z)) > 0).astype(int)
        np.savetxt(f, np.column_stack([z * scale + offset, y]),
                   fmt=['%.6g'] * d + ['%d'], delimiter=',')
os.replace(path + '.tmp', path)
