"""Agent code specific to ASET-v0: the convolutional feature extractor over the (features x sub-windows) state."""
