"""``python -m exactmem.export CERT --out FILE [--dtype float32]``."""

from .cli import main

raise SystemExit(main())
