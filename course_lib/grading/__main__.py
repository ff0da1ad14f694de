"""``python -m course_lib.grading ...`` is the same as ``course ...``."""
import sys

from .cli import main

sys.exit(main())
