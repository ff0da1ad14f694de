"""``python -m course ...`` is the same as ``course ...``."""
import sys

from .cli import main

sys.exit(main())
