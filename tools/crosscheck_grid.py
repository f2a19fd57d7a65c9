"""`make crosscheck-grid`: the kernel-against-model agreement grid (l4slab.crosscheck_grid).

    .venv/bin/python tools/crosscheck_grid.py OUT [-n RUNS] [--regime 12M20ms] [--duration 10s]
"""

import sys

from l4slab.crosscheck_grid import main

if __name__ == "__main__":
    sys.exit(main())
