"""One child process of the benchmark harness: times one library's workloads, writes a JSON report.

The parent (``harness.run``) starts it with the thread variables already in its environment, so
they are in place before numpy or torch is imported.  Not meant to be run by hand:

    python bench/_child.py SPEC.json
"""
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
for p in (str(HERE.parent), str(HERE)):
    if p not in sys.path:
        sys.path.insert(0, p)

import harness  # noqa: E402

if __name__ == "__main__":
    sys.exit(harness._child_main(sys.argv[1]))
