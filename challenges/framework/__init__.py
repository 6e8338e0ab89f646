"""The challenge framework: the format, loader and validator, the data cache, the scoring harness, the scaffold."""
