"""The CoRaiS attention dispatcher: model.py (network), policy.py (greedy / sampling decoding), trainer.py (REINFORCE)."""
