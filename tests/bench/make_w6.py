"""W6's numeric CSV (../shared/WORKLOADS.md), seeded, so every bench that
asks for the same rows gets the same file:

    python3 make_w6.py PATH ROWS [linear|w9]

20 normal columns of random scales and offsets written %.6g and a 0/1
target, written to PATH.tmp, then renamed.  The target: `linear` (W6's,
the default) a noisy linear rule in all 20 columns; `w9` (W9's, auto at
scale) one that needs interactions, z0 + 0.5 z1 z2 - z3^2 + noise > -0.5 on
the standardised columns z (noise normal with sd 0.5), so that no linear
model is the best: the other 16 columns are noise.  The columns written are
the same for both."""
import os
import sys

import numpy as np

if len(sys.argv) not in (3, 4) or (len(sys.argv) == 4 and sys.argv[3] not in ('linear', 'w9')):
    sys.exit('usage: make_w6.py PATH ROWS [linear|w9]')
path, n, d = sys.argv[1], int(sys.argv[2]), 20
target = sys.argv[3] if len(sys.argv) == 4 else 'linear'
rng = np.random.default_rng(6)
scale = 10.0 ** rng.uniform(-3, 4, d)
offset = rng.normal(0, 3, d) * scale
w = rng.normal(0, 1, d)
with open(path + '.tmp', 'w') as f:
    f.write(','.join('x%d' % j for j in range(d)) + ',y\n')
    for s in range(0, n, 100000):
        z = rng.normal(0, 1, (min(100000, n - s), d))
        if target == 'linear':
            y = (z @ w + rng.normal(0, 1, len(z)) > 0).astype(int)
        else:
            y = (z[:, 0] + 0.5 * z[:, 1] * z[:, 2] - z[:, 3] ** 2
                 + rng.normal(0, 0.5, len(z)) > -0.5).astype(int)
        np.savetxt(f, np.column_stack([z * scale + offset, y]),
                   fmt=['%.6g'] * d + ['%d'], delimiter=',')
os.replace(path + '.tmp', path)
