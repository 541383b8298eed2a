"""The CoRaiS attention dispatcher applied to UEC-v0 (``algo=corais_uec``).

An attention policy over the K·L server-profile candidates plus reject (:mod:`.model`), trained with
REINFORCE whose baseline is the mean of S rollouts of the same instance and episode seed (common random
numbers, :mod:`.trainer`).
"""
