"""OINC-specific learning code: Table II with the SAC-D rows over training seeds (:mod:`.table2`) and the prior
scheduler that starts as ``slo_liu`` and learns a correction (:mod:`.prior`, ``algo=oinc_prior``)."""
