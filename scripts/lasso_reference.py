#!/usr/bin/env python3
"""The optimum of a Lasso problem by an independent solver: scikit-learn's coordinate descent (Debian's
python3-sklearn), for dsgd's STRADS tests (algorithms/strads/, docs/strads.md "Correctness").

usage: lasso_reference.py FILE LAMBDA
  FILE    a LIBSVM regression file (dsgd writes one: `dsgd lasso --write-problem FILE`)
  LAMBDA  the penalty of F(beta) = 1/2 |y - X beta|^2 + LAMBDA |beta|_1

Prints one JSON line: {"objective": F(beta*), "nonzeros": ..., "iterations": ..., "solver": ...}. scikit-learn
minimises |y - X beta|^2 / (2 n) + alpha |beta|_1, which is F / n for alpha = LAMBDA / n: the same minimiser.
Exit status 2 for bad arguments, 3 when scikit-learn is not installed.
"""
import json
import sys


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[3], file=sys.stderr)
        return 2
    path, text = argv[1], argv[2]
    try:
        lam = float(text)
    except ValueError:
        print(f"lasso_reference.py: LAMBDA '{text}' is not a number", file=sys.stderr)
        return 2
    try:
        import numpy as np
        import sklearn
        from sklearn.datasets import load_svmlight_file
        from sklearn.linear_model import Lasso
    except ImportError as error:
        print(f"lasso_reference.py: scikit-learn is not installed ({error}); apt-get install python3-sklearn",
              file=sys.stderr)
        return 3
    try:
        x, y = load_svmlight_file(path, dtype=np.float64)
    except (OSError, ValueError) as error:
        print(f"lasso_reference.py: {path}: {error}", file=sys.stderr)
        return 2
    n = x.shape[0]
    model = Lasso(alpha=lam / n, fit_intercept=False, tol=1e-12, max_iter=1_000_000, selection="cyclic")
    model.fit(x, y)
    beta = model.coef_
    residual = y - x @ beta
    objective = 0.5 * float(residual @ residual) + lam * float(np.abs(beta).sum())
    print(json.dumps({"objective": objective, "nonzeros": int((beta != 0).sum()), "iterations": int(model.n_iter_),
                      "solver": f"scikit-learn {sklearn.__version__} Lasso (cyclic coordinate descent, tol 1e-12)"}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
