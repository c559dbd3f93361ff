"""The paired difference of two classifiers' test accuracies, in standard
errors: bench_auto_scale.sh's check that auto's first entry is at least as
good as the best default.  Both runs split the same CSV with the same seed,
so their stored test predictions are of the same rows in the same order.
Where the two predict different classes (d rows), one of them is right on
b and the other on c: with two classes b + c = d (with more, d bounds it,
and the standard error below from above); b - c is n times the difference
of the accuracies, known from them.  The difference's standard
error is McNemar's, sqrt(b + c - (b - c)^2 / n) / n: on 200,000 test rows
a few dozen rows apart, a difference of 6 rows is within one of it.

usage: paired_acc.py AUTO_DB ENTRY DFLT_DB MODEL ACC_ENTRY ACC_MODEL
prints: disagreeing rows, the difference in rows, its SE in rows, and the
difference over its SE."""
import array
import math
import sqlite3
import sys


def load(db, sql, arg):
    row = sqlite3.connect(db).execute(sql, (arg,)).fetchone()
    if row is None:
        sys.exit("paired_acc: no test predictions for %s in %s" % (arg, db))
    n, k, blob = row
    a = array.array("d")
    a.frombytes(blob)
    if len(a) != n * k:
        sys.exit("paired_acc: %s: %d values, not %d x %d" % (arg, len(a), n, k))
    return n, k, a


def classes(n, k, a):
    return [max(range(k), key=lambda j: a[i * k + j]) for i in range(n)]


def main():
    auto_db, entry, dflt_db, model, acc_e, acc_m = sys.argv[1:7]
    n, k, a = load(auto_db, "select p.n, p.n_out, p.data from ensembles e join "
                   "ensemble_predictions p on p.ensemble = e.id where e.name = ? "
                   "and p.split = 'test'", entry)
    n2, k2, b = load(dflt_db, "select p.n, p.n_out, p.data from predictions p join "
                     "trials t on t.id = p.trial join candidates c on c.id = "
                     "t.candidate where c.model = ? and p.split = 'test' and "
                     "t.status = 'done'", model)
    if (n, k) != (n2, k2):
        sys.exit("paired_acc: %d x %d test predictions against %d x %d" % (n, k, n2, k2))
    ca, cb = classes(n, k, a), classes(n, k, b)
    d = sum(x != y for x, y in zip(ca, cb))
    diff = round((float(acc_e) - float(acc_m)) * n)
    var = d - diff * diff / n
    se = math.sqrt(var) if var > 0 else 0.0
    z = diff / se if se > 0 else 0.0
    print("%d %d %.1f %.2f" % (d, diff, se, z))


main()
