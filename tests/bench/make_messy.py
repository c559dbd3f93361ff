"""Writes messy synthetic tabular sets into DIR (numpy only, seeded, so the
same files every time): string labels, missing cells, categorical string
columns, duplicate rows, class imbalance, uninformative columns.

    python3 tests/bench/make_messy.py DIR

Six sets, each DIR/NAME.csv with a header row and the target last.  Three
are "held in" (looked at while auto's rules were written: messy_clf_a,
messy_clf_b, messy_reg_a) and three "held out" (generated with other
shapes and seeds and only ever measured, in the last table of
tests/bench/auto_splits.sh: messy_clf_c, messy_clf_d, messy_reg_b).
HELD_IN and HELD_OUT below list them; `--list in|out` prints one list."""
import csv, os, sys

import numpy as np

HELD_IN = ['messy_clf_a', 'messy_clf_b', 'messy_reg_a']
HELD_OUT = ['messy_clf_c', 'messy_clf_d', 'messy_reg_b']


def messy(rng, X, cats, y, missing, dup):
    """Rows of strings: X's columns (a share `missing` of cells empty), the
    categorical columns, the label; a share `dup` of rows repeated."""
    n = X.shape[0]
    rows = []
    for i in range(n):
        r = ['' if rng.random() < missing else '%.5g' % v for v in X[i]]
        r += ['' if rng.random() < missing / 2 else c[i] for c in cats]
        rows.append(r + [y[i]])
    extra = rng.choice(n, int(dup * n), replace=True)
    rows += [list(rows[i]) for i in extra]
    order = rng.permutation(len(rows))
    return [rows[i] for i in order]


def cat_column(rng, n, levels, signal=None):
    """A categorical string column: random levels, or levels that follow
    signal (an array of 0..levels-1) 70% of the time."""
    names = np.array(['lvl_%s' % chr(ord('a') + k) for k in range(levels)])
    k = rng.integers(0, levels, n)
    if signal is not None:
        keep = rng.random(n) < 0.7
        k = np.where(keep, signal % levels, k)
    return names[k]


def clf_a(rng):
    # 700 rows, binary "yes"/"no" 80/20, 8 numeric (4 informative, one
    # interaction), 2 categorical (one informative), 10% missing, 5% dups
    n = 700
    X = rng.normal(size=(n, 8))
    g = rng.integers(0, 4, n)
    z = 1.2 * X[:, 0] - X[:, 1] + 0.8 * X[:, 2] * X[:, 3] + 0.6 * (g == 2) - 1.6
    y = np.where(z + rng.logistic(size=n) * 0.7 > 0, 'yes', 'no')
    cats = [cat_column(rng, n, 4, g), cat_column(rng, n, 3)]
    return ['x%d' % i for i in range(8)] + ['colour', 'shape', 'label'], \
        messy(rng, X, cats, y, 0.10, 0.05)


def clf_b(rng):
    # 450 rows, 3 classes (red / green / blue, 50/30/20), XOR-like
    # structure in two columns, 6 noise columns, a 6-level category, 15%
    # missing
    n = 450
    X = rng.normal(size=(n, 8))
    base = (X[:, 0] > 0).astype(int) ^ (X[:, 1] > 0).astype(int)
    u = rng.random(n)
    cls = np.where(base == 1, np.where(u < 0.75, 0, 2), np.where(u < 0.6, 1, 0))
    y = np.array(['red', 'green', 'blue'])[cls]
    cats = [cat_column(rng, n, 6, cls * 2)]
    return ['f%d' % i for i in range(8)] + ['site', 'class'], \
        messy(rng, X, cats, y, 0.15, 0.0)


def reg_a(rng):
    # 500 rows, y = linear + a category's offset + heteroscedastic noise,
    # 10% missing, 3% dups
    n = 500
    X = rng.normal(size=(n, 6))
    g = rng.integers(0, 5, n)
    y = 3 * X[:, 0] - 2 * X[:, 1] + X[:, 2] ** 2 + 2.5 * (g == 1) - 1.5 * (g == 3)
    y = y + rng.normal(size=n) * (0.5 + np.abs(X[:, 3]))
    cats = [cat_column(rng, n, 5, g)]
    return ['v%d' % i for i in range(6)] + ['region', 'target'], \
        messy(rng, X, cats, ['%.4f' % v for v in y], 0.10, 0.03)


def clf_c(rng):
    # held out: 900 rows, 5 classes of skewed sizes with labels holding
    # spaces, 12 numeric (5 informative through a random projection), 2
    # categories, 20% missing, 10% duplicates
    n = 900
    X = rng.normal(size=(n, 12))
    W = rng.normal(size=(5, 5))
    s = X[:, :5] @ W + rng.normal(size=(n, 5)) * 1.5 + np.log([0.4, 0.25, 0.15, 0.12, 0.08]) * 2
    cls = s.argmax(axis=1)
    y = np.array(['class one', 'class two', 'class three', 'class four', 'class five'])[cls]
    cats = [cat_column(rng, n, 3, cls), cat_column(rng, n, 7)]
    return ['m%d' % i for i in range(12)] + ['kind', 'batch', 'outcome'], \
        messy(rng, X, cats, y, 0.20, 0.10)


def clf_d(rng):
    # held out: 260 rows, binary 90/10 ("ok" / "fault"), 30 columns of
    # which 3 informative, 5% missing
    n = 260
    X = rng.normal(size=(n, 30))
    z = 1.5 * X[:, 0] + X[:, 1] - X[:, 2] - 3.2
    y = np.where(z + rng.logistic(size=n) * 0.5 > 0, 'fault', 'ok')
    return ['c%d' % i for i in range(30)] + ['status'], messy(rng, X, [], y, 0.05, 0.0)


def reg_b(rng):
    # held out: 800 rows, Friedman #1 (sin, square, linear terms) in 5 of
    # 10 columns, a 4-level category with an offset, 15% missing
    n = 800
    X = rng.random(size=(n, 10))
    g = rng.integers(0, 4, n)
    y = 10 * np.sin(np.pi * X[:, 0] * X[:, 1]) + 20 * (X[:, 2] - 0.5) ** 2 + \
        10 * X[:, 3] + 5 * X[:, 4] + 3 * (g == 0) + rng.normal(size=n)
    cats = [cat_column(rng, n, 4, g)]
    return ['r%d' % i for i in range(10)] + ['group', 'y'], \
        messy(rng, X, cats, ['%.4f' % v for v in y], 0.15, 0.0)


SETS = {'messy_clf_a': (clf_a, 11), 'messy_clf_b': (clf_b, 12), 'messy_reg_a': (reg_a, 13),
        'messy_clf_c': (clf_c, 101), 'messy_clf_d': (clf_d, 102), 'messy_reg_b': (reg_b, 103)}


def main():
    if len(sys.argv) == 3 and sys.argv[1] == '--list':
        print(' '.join(HELD_IN if sys.argv[2] == 'in' else HELD_OUT))
        return
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, (make, seed) in SETS.items():
        path = os.path.join(out, name + '.csv')
        if os.path.exists(path):
            continue
        header, rows = make(np.random.default_rng(seed))
        with open(path + '.tmp', 'w', newline='') as f:
            w = csv.writer(f, lineterminator='\n')
            w.writerow(header)
            w.writerows(rows)
        os.replace(path + '.tmp', path)


if __name__ == '__main__':
    main()
