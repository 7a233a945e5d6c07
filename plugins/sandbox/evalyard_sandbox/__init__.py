"""evalyard-sandbox: python_unit_testing and pass@k, with candidate code run in layered isolation.

Kept import-free on purpose: the sandbox worker imports this package with no
site-packages and must not pull in the platform (see worker.py).
"""

__version__ = "0.1.0"
