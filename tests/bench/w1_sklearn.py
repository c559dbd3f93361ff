"""W1 with scikit-learn: MLPClassifier / MLPRegressor (64, 64), ReLU, adam lr 1e-3,
batch 128, 40 epochs (max_iter), alpha 0, tol 0, no early stopping, shuffled
each epoch; regression targets z-scored and mapped back; seeds 0, 1, 2 on a
fork Pool(2).  Usage: w1_sklearn.py BENCH_DIR NAME [EPOCHS].  Prints lines as
w1_torch.py does, with 'sklearn'."""
import multiprocessing as mp
import sys
import time
import warnings

T0 = time.perf_counter()
from sklearn.neural_network import MLPClassifier, MLPRegressor

from w1_common import load, score

BENCH_DIR, NAME = sys.argv[1], sys.argv[2]
EPOCHS = int(sys.argv[3]) if len(sys.argv) > 3 else 40


def run(seed):
    warnings.simplefilter('ignore')
    xtr, ytr, xte, yte, k = load(BENCH_DIR, NAME)
    kw = dict(hidden_layer_sizes=(64, 64), activation='relu', solver='adam',
              learning_rate_init=1e-3, batch_size=128, max_iter=EPOCHS, alpha=0.0,
              tol=0.0, n_iter_no_change=EPOCHS + 1, early_stopping=False,
              shuffle=True, random_state=seed)
    t0 = time.perf_counter()
    if k == 0:
        ym, ys = ytr.mean(), ytr.std() or 1.0
        m = MLPRegressor(**kw).fit(xtr, (ytr - ym) / ys)
        train_s = time.perf_counter() - t0
        out = m.predict(xte) * ys + ym
    else:
        m = MLPClassifier(**kw).fit(xtr, ytr)
        train_s = time.perf_counter() - t0
        out = m.predict_proba(xte)
    return seed, score(yte, out, k), train_s, k


if __name__ == '__main__':
    with mp.get_context('fork').Pool(2) as pool:
        res = pool.map(run, [0, 1, 2])
    for seed, (a, b), train_s, k in res:
        names = ('rmse', 'r2') if k == 0 else ('acc', 'auc')
        print('sklearn %s seed %d %s %.6f %s %.6f train_s %.4f' % (NAME, seed, names[0], a, names[1], b, train_s))
    print('sklearn %s wall_s %.3f' % (NAME, time.perf_counter() - T0))
