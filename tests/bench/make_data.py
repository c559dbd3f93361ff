"""Writes the synthetic benchmark datasets of ../shared/WORKLOADS.md into DIR
(once: existing files are kept) and, for every dataset, the train/test split
the peers use (train_test_split(test_size=0.2, random_state=0, stratify=y
for classification)) as DIR/NAME.train.csv and DIR/NAME.test.csv, so cfl and
the peers see the same rows."""
import csv, os, sys

from sklearn.datasets import make_classification, make_regression
from sklearn.model_selection import train_test_split

out = sys.argv[1]
root = os.path.join(os.path.dirname(__file__), '..', '..')


def write(path, header, X, y, fmt_y):
    tmp = path + '.tmp'
    with open(tmp, 'w', newline='') as f:
        w = csv.writer(f, lineterminator='\n')
        w.writerow(header)
        for r, t in zip(X, y):
            w.writerow(['%.6g' % v for v in r] + [fmt_y(t)])
    os.replace(tmp, path)


def ensure(name, make, clf):
    path = os.path.join(out, name + '.csv')
    if not os.path.exists(path):
        X, y = make()
        header = ['x%d' % i for i in range(X.shape[1])] + ['y']
        write(path, header, X, y, (lambda t: '%d' % t) if clf else (lambda t: '%.6g' % t))
    return path


sets = {
    'synth_clf_100k': (ensure('synth_clf_100k', lambda: make_classification(
        n_samples=100000, n_features=20, n_informative=10, n_classes=2, random_state=0), True), True),
    'synth_reg_100k': (ensure('synth_reg_100k', lambda: make_regression(
        n_samples=100000, n_features=20, noise=10, random_state=0), False), False),
}
for name, clf in [('iris', 1), ('wine', 1), ('breast_cancer', 1), ('digits', 1), ('diabetes', 0)]:
    sets[name] = (os.path.join(root, 'datasets', name + '.csv'), bool(clf))

for name, (path, clf) in sets.items():
    tr = os.path.join(out, name + '.train.csv')
    te = os.path.join(out, name + '.test.csv')
    if os.path.exists(tr) and os.path.exists(te):
        continue
    with open(path) as f:
        rows = list(csv.reader(f))
    header, body = rows[0], rows[1:]
    y = [r[-1] for r in body]
    a, b = train_test_split(body, test_size=0.2, random_state=0, stratify=y if clf else None)
    for p, part in ((tr, a), (te, b)):
        with open(p + '.tmp', 'w', newline='') as f:
            w = csv.writer(f, lineterminator='\n')
            w.writerow(header)
            w.writerows(part)
        os.replace(p + '.tmp', p)
