"""OINC-specific learning code: Table II with the SAC-D rows over training seeds (:mod:`.table2`)."""
