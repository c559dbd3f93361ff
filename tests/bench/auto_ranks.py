"""Per set, auto's mean rank among itself and cfl's five defaults, and auto
against the forest default in test rows, from the split files that
tests/bench/auto_splits.sh keeps (issue 31's held-out check counts these):

    python3 tests/bench/auto_ranks.py build/bench/auto_splits/SET ...

A rank is 1 + the defaults better than auto on the split's test part + half
the defaults level with it (accuracy ties often on a few dozen test rows);
the mean over the splits, then the mean over the sets.  Also auto - forest
(positive: auto better; RMSE turned so) and, for accuracy, what one test
row is worth."""
import glob, json, os, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import auto_splits as S  # noqa: E402

MODELS = S.MODELS


def main():
    means = []
    for d in sys.argv[1:]:
        name = os.path.basename(d.rstrip('/'))
        files = sorted(glob.glob(os.path.join(d, 'split-*.json')))
        test = sorted(glob.glob(os.path.join(d, '*.test.csv')))
        if not files or not test:
            print('%s: no split files' % d, file=sys.stderr)
            continue
        _, body = S.read(test[0])
        reg = S.is_regression(body + S.read(test[0].replace('.test.', '.train.'))[1])
        sign = -1 if reg else 1
        ranks, vs_forest = [], []
        for f in files:
            with open(f) as fh:
                r = json.load(fh)
            a = sign * r['auto']
            better = sum(1 for m in MODELS if sign * r['dflt'][m] > a + 1e-12)
            level = sum(1 for m in MODELS if abs(sign * r['dflt'][m] - a) <= 1e-12)
            ranks.append(1 + better + level / 2)
            vs_forest.append(sign * (r['auto'] - r['dflt']['forest']))
        mean_rank = sum(ranks) / len(ranks)
        means.append(mean_rank)
        row = '' if reg else ' (one test row: %.4f)' % (1 / len(body))
        print('%-14s %2d splits  mean rank %.2f  auto - forest %+.4f %s%s' % (
            name, len(files), mean_rank, sum(vs_forest) / len(vs_forest),
            'rmse' if reg else 'acc', row))
    if means:
        print('mean rank over the %d sets: %.2f' % (len(means), sum(means) / len(means)))


if __name__ == '__main__':
    main()
