"""``python -m exactmem`` entry point."""

import sys

from .cli import main

sys.exit(main())
