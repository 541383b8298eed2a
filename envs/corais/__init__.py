"""CoRaiS-v0: batch dispatch of requests to cooperating heterogeneous edges (Hu et al., IEEE IoT-J 2024).

types.py (Instance, Backlog, CostTables), generator.py (Scenario, presets, generate), dynamics.py (the
cost model, batched in numpy and torch), env.py (CoRaiSEnv, registered as ``CoRaiS-v0``).
"""
