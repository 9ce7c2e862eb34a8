"""The kernel: domain types with units, errors, the clock, the GPU catalog and label resolution.

It imports nothing else of gpuscout; every other layer stands on it.
"""
