"""Compiled loops (numba): the hashing, minima and pairing kernels."""
