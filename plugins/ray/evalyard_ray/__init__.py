"""evalyard-ray: the ``ray`` executor.

``evalyard run SUITE --executor ray`` scores every non-async scorer's batches on a pool of
Ray actors per (scorer, config): each actor rebuilds its scorer once and keeps it (model or
sandbox worker included) for the whole run. Results come back to the driver, the only
database writer. Nothing here imports Ray until a run uses the executor.
"""

__version__ = "0.1.0"
