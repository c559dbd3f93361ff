"""Per set, auto's mean rank among itself and cfl's five defaults, and auto
against the forest default in test rows, from the split files that
tests/bench/auto_splits.sh keeps (issue 31's held-out check counts these):

    python3 tests/bench/auto_ranks.py build/bench/auto_splits/SET ...

A rank is 1 + the defaults better than auto on the split's test part + half
the defaults level with it (accuracy ties often on a few dozen test rows);
the mean over the splits, then the mean over the sets.  auto's figure is
read from the leaderboard, printed to six decimals, and the defaults' from
their reports at full precision: a default within 1e-6 of auto is level with
it.  Beside it the floor: the mean rank of an entry that equals the best
default (chosen with hindsight) on every split, 1 + half the defaults level
with the best there; on sets where several defaults tie on the test part
nothing that only matches the best default ranks better.  Also auto - forest
(positive: auto better; RMSE turned so), for accuracy what one test row is
worth, and auto's rank by the means over the splits (its figure's mean
against each default's: the issue's "averaged over the splits it ranks
first on 4 of 12 sets"), with the sets where that rank is first.  Last,
the reading of the issue's "at least as good as the best single default":
the mean rank with the defaults level with auto not counted against it (1 +
the defaults better; an entry equal to the best default everywhere has 1),
and the share of the splits where no default beats auto."""
import glob, json, os, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import auto_splits as S  # noqa: E402


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
        res = []
        for f in files:
            with open(f) as fh:
                res.append(json.load(fh))
        mean_rank, floor = S.ranks(res, sign)
        means.append((mean_rank, floor, S.rank_of_means(res, sign)) + S.ties_first(res, sign))
        vs_forest = [sign * (r['auto'] - r['dflt']['forest']) for r in res]
        row = '' if reg else ' (one test row: %.4f)' % (1 / len(body))
        print('%-14s %2d splits  mean rank %.2f (floor %.2f)  rank of the means %.1f  '
              'ties first %.2f (none better on %.0f%%)  auto - forest %+.4f %s%s' % (
                  name, len(files), mean_rank, means[-1][1], means[-1][2], means[-1][3],
                  100 * means[-1][4], sum(vs_forest) / len(vs_forest), 'rmse' if reg else 'acc',
                  row))
    if means:
        n = len(means)
        print('mean rank over the %d sets: %.2f (floor %.2f); by the means over the splits '
              '%.2f, first on %d of %d; ties first %.2f, no default better on %.0f%% of the '
              'splits' % (
                  n, sum(m[0] for m in means) / n, sum(m[1] for m in means) / n,
                  sum(m[2] for m in means) / n, sum(m[2] == 1 for m in means), n,
                  sum(m[3] for m in means) / n, 100 * sum(m[4] for m in means) / n))


if __name__ == '__main__':
    main()
