"""The `gpuscout` command line: a thin face over the Python API and the use cases."""
