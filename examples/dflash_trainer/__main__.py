"""``python -m examples.dflash_trainer``: see ``cli.py`` and README.md."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
