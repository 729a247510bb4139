"""``python -m exactmem`` entry point."""

import sys

from .cli import main

if __name__ == "__main__":  # not when a spawned worker process (Dask, multiprocessing) re-imports it
    sys.exit(main())
