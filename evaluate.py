"""Evaluate policies on identical instances and episode seeds: ``python evaluate.py env=uec-v0``.

A thin wrapper: the program is :mod:`edge_sched_gym.evaluate` (its docstring lists the keys and examples),
installed also as ``edge-sched-evaluate`` and ``python -m edge_sched_gym.evaluate``; the configs are
``edge_sched_gym/conf/``.
"""

from edge_sched_gym.evaluate import cli

if __name__ == "__main__":
    cli()
