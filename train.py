"""Train a learner (or log a non-learning reference): ``python train.py env=uec-v0 algo=sac``.

A thin wrapper: the program is :mod:`edge_sched_gym.train` (its docstring lists the keys and examples),
installed also as ``edge-sched-train`` and ``python -m edge_sched_gym.train``; the configs are
``edge_sched_gym/conf/``.
"""

from edge_sched_gym.train import main

if __name__ == "__main__":
    main()
