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
AUTO_DEFAULTS=fcnn,forest adds only those defaults.  AUTO_DEFAULTS_TEST=bag
gives each added default the test prediction of a bag instead: the mean of
its five fold models' (fitted again by `cfl repeat`, CFL=the binary, on
each fold's training rows, predicting the fold's rows, checked against the
cv run's, and the test part), so that the models greedy weighed out of
fold are the ones that predict the test part.  Needs numpy."""
import os, sqlite3, sys
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import auto_knn as K  # noqa: E402
import auto_rules as R  # noqa: E402
import auto_splits as S  # noqa: E402


CFL = os.environ.get('CFL', os.path.join(S.ROOT, 'cfl'))
ONLY = os.environ.get('AUTO_DEFAULTS', ','.join(S.MODELS)).split(',')


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


def fold_tests(sd, k, j, reg, n_valid):
    """(valid, test) predictions of the defaults in ONLY fitted on fold j's
    training rows, as the cv run fitted them, on fold j's rows and on the
    test part: one `cfl repeat` (same data, models and seed as cv-K-j) whose
    test file is the fold's rows followed by the test part's, kept in
    bagdef-K.db under a name with the models.  {model: (valid, test)}."""
    path = sd + '/bagdef-%s.db' % k
    name = 'cvt-%s-%d-%s' % (k, j, '+'.join(ONLY))
    db = sqlite3.connect(path)
    have = db.execute("select count(*) from sqlite_master where name = 'runs'").fetchone()[0] and \
        db.execute("select count(*) from runs where name = ?", (name,)).fetchone()[0]
    db.close()
    if not have:
        hdr, va = S.read(sd + '/%s.cv%d.valid.csv' % (k, j))
        _, te = S.read(sd + '/%s.test.csv' % k)
        both = sd + '/%s.cv%d.both.csv' % (k, j)
        S.write(both, hdr, va + te)
        S.run([CFL, 'repeat', sd + '/%s.cv%d.train.csv' % (k, j), '--test', both, '--models',
               ','.join(ONLY), '--num-repeat', '1', '--metrics', 'rmse' if reg else 'acc',
               '--ensemble', 'none', '--num-jobs', '2', '--db', path, '--name', name, '-q'],
              sd + '/%s.err' % name)
    db = sqlite3.connect(path)
    out = {}
    for m in ONLY:
        P = preds(db, name, m)
        out[m] = (P[:n_valid], P[n_valid:])
    return out


def default_bags(sd, sp):
    """The five defaults as bags: out of fold from the cv runs, test from
    the default fitted on every training row (AUTO_DEFAULTS_TEST=bag: the
    mean of the five fold models' test predictions, fold_tests).  None
    where a run lacks one."""
    k, reg, tr = sp['k'], sp['reg'], sp['tr_body']
    db = sqlite3.connect(sd + '/runs-%s.db' % k)
    want = None if reg else R.classes(r[-1] for r in tr)
    folds = S.kfold(list(range(len(tr))), tr, not reg, 5, int(k))
    bag = os.environ.get('AUTO_DEFAULTS_TEST') == 'bag'
    ft = [fold_tests(sd, k, j, reg, len(f)) for j, f in enumerate(folds)] if bag else None
    bags = []
    for m in S.MODELS:
        T = preds(db, 'def-%s' % k, m)
        if T is None:
            return None
        # the check: the stored test prediction gives the default's figure
        got, rep = R.metric(reg, T, sp['yte']), sp['sign'] * sp['r']['dflt'][m]
        if abs(got - rep) > 1e-4:
            print('  %s split %s: %s gives %.6f, its report %.6f' % (sd, k, m, got, rep),
                  file=sys.stderr)
        O = np.full((len(tr), 1 if reg else len(want)), np.nan)
        if bag and m in ONLY:
            T = 0
        for j, fold in enumerate(folds):
            P = preds(db, 'cv-%s-%d' % (k, j), m)
            if P is None or len(P) != len(fold):
                return None
            Q = None
            if bag and m in ONLY:
                V, Q = ft[j][m]
                # the same model as the cv run's: fcnn's float predictions
                # differ in batches of another size (on real_cpus, whose target
                # runs to 1,150, by up to 3e-5)
                if (np.abs(V - P) > 1e-4 * np.maximum(1, np.abs(P))).any():
                    print('  %s split %s fold %d: %s differs from its cv run by %g' % (
                        sd, k, j, m, np.abs(V - P).max()), file=sys.stderr)
            if not reg:
                cv_tr = [tr[p] for p in range(len(tr)) if p not in set(fold)]
                P = widen(P, R.classes(r[-1] for r in cv_tr), want)
                if Q is not None:
                    Q = widen(Q, R.classes(r[-1] for r in cv_tr), want)
            O[fold] = P
            if Q is not None:
                T = T + Q / len(folds)
        bags.append(dict(cid=-1, model='default ' + m, seq=-1, score=0, oof=O, test=T))
    return bags


def main():
    tot = {'auto': [], 'dflt': []}
    for sd in sys.argv[1:]:
        A, D, W, RK = [], [], [], {'auto': [], 'dflt': []}
        for sp in K.splits(sd):
            reg, ytr, yte, bags, a, dv = sp['reg'], sp['ytr'], sp['yte'], sp['bags'], sp['auto'], sp['dv']
            db_bags = default_bags(sd, sp)
            if db_bags is None:
                print('  %s split %s: no default runs kept' % (sd, sp['k']), file=sys.stderr)
                continue
            db_bags = [b for b in db_bags if b['model'].split()[1] in ONLY]
            w, bs = R.greedy(reg, ytr, bags + db_bags)
            d = R.metric(reg, R.combine(bs, w, 'test'), yte)
            RK['auto'].append(S.rank_among(a, dv))
            RK['dflt'].append(S.rank_among(d, dv))
            A.append(a)
            D.append(d)
            W.append(sum(x for x, b in zip(w, bs) if b['model'].startswith('default ')))
        if not A:
            continue
        print('| %s | %d | %.4f | %.4f | %+.4f +- %.4f | %d/%d/%d | %.2f | %.2f | %.2f |' % (
            os.path.basename(sd.rstrip('/')), len(A), abs(np.mean(A)), abs(np.mean(D)),
            *S.paired(D, A), np.mean(W), np.mean(RK['auto']), np.mean(RK['dflt'])), flush=True)
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
