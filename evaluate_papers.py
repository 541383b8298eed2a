"""The papers' numbers beside ours: ``python -m evaluate_papers [paper=<name>|all] [quick=true]`` or ``... readme``.

A thin wrapper: the program is :mod:`edge_sched_gym.evaluate_papers` (also ``python evaluate.py experiment=papers``).
"""

import sys

from edge_sched_gym.evaluate_papers import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
