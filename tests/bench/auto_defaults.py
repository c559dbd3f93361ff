"""Would the user's own defaults help `cfl auto` as members of its final
ensemble?  A replay, before building it, on the runs
tests/bench/auto_splits.sh kept:

    python3 tests/bench/auto_defaults.py build/bench/auto_splits/SET ...

auto's bags are fold models, each trained on four fifths of the training
rows, and fcnn's stop early on a tenth of those; a user's `cfl train
--model M` fits every row, fcnn without stopping.  Here each of the five
defaults becomes one more member greedy selection may pick: its
out-of-fold rows are the predictions of the 5-fold cross-validation runs
auto_splits.py keeps for the CV-chosen default (cv-K-j: the default
fitted on four folds, predicting the fifth), its test prediction the one
of the default fitted on every training row (def-K), as the user would
have it.  auto's own final selection (greedy25 of
tests/bench/auto_rules.py, which reproduces auto's figure) is made again
over auto's bags plus these five, and scored on the split's test part.
Per set: with defaults - auto on test (mean +- standard error over the
splits, positive: better, RMSE turned so), wins/ties/losses, the greedy
weight the defaults take, and the mean rank among auto and the five
defaults (as tests/bench/auto_ranks.py counts it) of both.
AUTO_DEFAULTS=fcnn,forest adds only those defaults.  Needs numpy."""
import math, os, sqlite3, sys
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import auto_knn as K  # noqa: E402
import auto_rules as R  # noqa: E402
import auto_splits as S  # noqa: E402


ONLY = os.environ.get('AUTO_DEFAULTS', ','.join(S.MODELS)).split(',')


def classes(rows):
    """The class labels of rows, ordered as auto_rules.load orders them."""
    labs = set(r[-1] for r in rows)
    try:
        return sorted(labs, key=lambda v: float(v))
    except ValueError:
        return sorted(labs)


def preds(db, run_name, model):
    """The test predictions (n, n_out) of model's trial in run run_name."""
    row = db.execute("select p.n, p.n_out, p.data from predictions p join trials t on t.id = p.trial "
                     "join candidates c on c.id = t.candidate join runs r on r.id = c.run "
                     "where r.name = ? and c.model = ? and p.split = 'test' and t.status = 'done'",
                     (run_name, model)).fetchone()
    if not row:
        return None
    n, no, data = row
    return np.frombuffer(data, '<f8').reshape(n, no)


def widen(P, have, want):
    """P's columns (the classes `have`) placed among the classes `want`."""
    out = np.zeros((len(P), len(want)))
    for j, c in enumerate(have):
        out[:, want.index(c)] = P[:, j]
    return out


def default_bags(sd, sp):
    """The five defaults as bags: out of fold from the cv runs, test from
    the default fitted on every training row.  None where a run lacks one."""
    k, reg, tr = sp['k'], sp['reg'], sp['tr_body']
    db = sqlite3.connect(sd + '/runs-%s.db' % k)
    want = None if reg else classes(tr)
    folds = S.kfold(list(range(len(tr))), tr, not reg, 5, int(k))
    bags = []
    for m in S.MODELS:
        T = preds(db, 'def-%s' % k, m)
        if T is None:
            return None
        O = np.full((len(tr), 1 if reg else len(want)), np.nan)
        for j, fold in enumerate(folds):
            P = preds(db, 'cv-%s-%d' % (k, j), m)
            if P is None or len(P) != len(fold):
                return None
            if not reg:
                cv_tr = [tr[p] for p in range(len(tr)) if p not in set(fold)]
                P = widen(P, classes(cv_tr), want)
            O[fold] = P
        bags.append(dict(cid=-1, model='default ' + m, seq=-1, score=0, oof=O, test=T))
    return bags


def main():
    tot = {'auto': [], 'dflt': []}
    for sd in sys.argv[1:]:
        A, D, W, RK = [], [], [], {'auto': [], 'dflt': []}
        for sp in K.splits(sd):
            reg, ytr, yte, bags, r = sp['reg'], sp['ytr'], sp['yte'], sp['bags'], sp['r']
            db_bags = default_bags(sd, sp)
            if db_bags is None:
                print('  %s split %s: no default runs kept' % (sd, sp['k']), file=sys.stderr)
                continue
            sign = -1 if reg else 1
            for b in db_bags:	# the check: the stored test prediction gives the default's figure
                m = b['model'].split()[1]
                if abs(R.metric(reg, b['test'], yte) - sign * r['dflt'][m]) > 1e-4:
                    print('  %s split %s: %s gives %.6f, its report %.6f' % (
                        sd, sp['k'], m, R.metric(reg, b['test'], yte), sign * r['dflt'][m]),
                        file=sys.stderr)
            db_bags = [b for b in db_bags if b['model'].split()[1] in ONLY]
            a = R.metric(reg, R.greedy25(reg, ytr, bags), yte)
            w, bs = R.greedy(reg, ytr, bags + db_bags)
            d = R.metric(reg, R.combine(bs, w, 'test'), yte)
            dv = [sign * r['dflt'][m] for m in r['dflt']]
            RK['auto'].append(S.rank_among(a, dv))
            RK['dflt'].append(S.rank_among(d, dv))
            A.append(a)
            D.append(d)
            W.append(sum(x for x, b in zip(w, bs) if b['model'].startswith('default ')))
        if not A:
            continue
        diff = np.array(D) - np.array(A)
        n = len(diff)
        se = diff.std(ddof=1) / math.sqrt(n) if n > 1 else float('nan')
        print('| %s | %d | %.4f | %.4f | %+.4f +- %.4f | %d/%d/%d | %.2f | %.2f | %.2f |' % (
            os.path.basename(sd.rstrip('/')), n, abs(np.mean(A)), abs(np.mean(D)), diff.mean(), se,
            int((diff > 1e-9).sum()), int((abs(diff) <= 1e-9).sum()), int((diff < -1e-9).sum()),
            np.mean(W), np.mean(RK['auto']), np.mean(RK['dflt'])), flush=True)
        for key in tot:
            tot[key].append(np.mean(RK[key]))
    if tot['auto']:
        print('\nMean rank over the %d sets among auto and the five defaults: auto %.3f, with the '
              'defaults %.3f' % (len(tot['auto']), np.mean(tot['auto']), np.mean(tot['dflt'])))


if __name__ == '__main__':
    print('| set | splits | auto | with the defaults | with - auto | W/T/L | defaults\' weight '
          '| rank auto | rank with the defaults |')
    print('|---|---|---|---|---|---|---|---|---|')
    main()
