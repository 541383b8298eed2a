"""Learning agents: discrete SAC (``agents.sac``), masked DQN (``agents.dqn``), the algorithm registry
(``agents.registry``), training callbacks (``agents.callbacks``) and loading trained runs as policies
(``agents.loading.load_run_policy``). ``python train.py env=<env> algo=<algo>`` trains them.

Submodules are imported on demand so ``import agents`` stays cheap (no torch import).
"""
