"""Two (or more) cfl binaries' `cfl auto` side by side over the same splits:
the first entry's test figure only, no defaults (numpy only).

    python3 tests/bench/auto_ab.py OUT SET FIRST LAST TAG=CFL:ARGS ... [--compare A B]

SET is a CSV file (target last; a name without a slash is
datasets/NAME.csv), split as tests/bench/auto_splits.py splits it (random
state K, 80/20, stratified for classification) for K in FIRST..LAST-1.
For each split, each TAG runs `CFL auto TRAIN --test TEST --folds 5
--num-jobs 2 ARGS` (ARGS: say "--time-limit 30" or "--max-trials 20"),
one after another, so that the binaries see the same load split by split;
OUT/SET/TAG-K.json keeps the figure and the wall seconds (a run that has
it is not run again).  With --compare A B it prints A - B over the splits
both have: mean +- standard error (RMSE turned so that positive is A
better), wins/ties/losses, and the mean wall seconds of each.  This is the
cheap form of auto_splits.sh's COMPARE, for changes to auto's time-limited
path, whose figures depend on the load: measure on a quiet machine."""
import json, os, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import auto_splits as A  # noqa: E402


def run(out, path, first, last, arms):
    header, body = A.read(path)
    clf = not A.is_regression(body)
    metric = 'acc' if clf else 'rmse'
    d = os.path.join(out, os.path.basename(path)[:-4])
    os.makedirs(d, exist_ok=True)
    for rs in range(first, last):
        tri, tei = A.split(body, clf, rs)
        tr, te = os.path.join(d, '%d.train.csv' % rs), os.path.join(d, '%d.test.csv' % rs)
        if not os.path.exists(te):
            A.write(tr, header, [body[i] for i in tri])
            A.write(te, header, [body[i] for i in tei])
        for tag, cfl, args in arms:
            res = os.path.join(d, '%s-%d.json' % (tag, rs))
            if os.path.exists(res):
                continue
            db = os.path.join(d, '%s-%d.db' % (tag, rs))
            for f in (db, db + '-wal', db + '-shm', db + '-journal'):
                if os.path.exists(f):
                    os.remove(f)
            t = time.time()
            entry, v = A.auto_first(cfl, tr, te, metric, 0, 5, args.split(), db, 'a',
                                    os.path.join(d, '%s-%d.err' % (tag, rs)))
            wall = time.time() - t
            with open(res + '.tmp', 'w') as f:
                json.dump({'entry': entry, 'v': v, 'wall': wall, 'metric': metric}, f)
            os.replace(res + '.tmp', res)
            print('%s split %d %s: %s %.6f (%.1f s)' % (os.path.basename(d), rs, tag, entry, v,
                                                         wall), file=sys.stderr, flush=True)
    return d


def compare(d, a, b):
    diffs, wa, wb = [], [], []
    for name in sorted(os.listdir(d)):
        if not (name.startswith(a + '-') and name.endswith('.json')):
            continue
        other = os.path.join(d, b + name[len(a):])
        if not os.path.exists(other):
            continue
        with open(os.path.join(d, name)) as f:
            ja = json.load(f)
        with open(other) as f:
            jb = json.load(f)
        sign = -1 if ja['metric'] == 'rmse' else 1
        diffs.append(sign * (ja['v'] - jb['v']))
        wa.append(ja['wall'])
        wb.append(jb['wall'])
    n = len(diffs)
    if n < 2:
        return '%s: %s - %s: %d splits in common' % (os.path.basename(d), a, b, n)
    m, se = A.mean_se(diffs)
    w = sum(x > 1e-12 for x in diffs)
    l = sum(x < -1e-12 for x in diffs)
    return '%s: %s - %s over %d splits: %+.4f +- %.4f, W/T/L %d/%d/%d, wall %.1f / %.1f s' % (
        os.path.basename(d), a, b, n, m, se, w, n - w - l, l, sum(wa) / n, sum(wb) / n)


def main():
    argv = sys.argv[1:]
    cmp = None
    if '--compare' in argv:
        i = argv.index('--compare')
        cmp = argv[i + 1:i + 3]
        del argv[i:i + 3]
    if len(argv) < 4 or (cmp is not None and len(cmp) != 2):
        sys.exit(__doc__)
    out, name, first, last = argv[0], argv[1], int(argv[2]), int(argv[3])
    path = name if '/' in name else os.path.join(A.ROOT, 'datasets', name + '.csv')
    arms = []
    for spec in argv[4:]:
        if '=' not in spec or ':' not in spec.split('=', 1)[1]:
            sys.exit('auto_ab: %s: want TAG=CFL:ARGS' % spec)
        tag, rest = spec.split('=', 1)
        cfl, args = rest.split(':', 1)
        arms.append((tag, cfl, args))
    d = run(out, path, first, last, arms)
    if cmp:
        print(compare(d, cmp[0], cmp[1]))


if __name__ == '__main__':
    main()
