"""The course's tooling: the check runtime, the grader and the notebook builder.

- ``check("03.2", obj)`` (:mod:`course.checks`): what a notebook's check cells call;
  each chapter registers its checks in ``chapters/NN_name/checks.py``;
- ``course build`` (:mod:`course.build`): ``chapters/NN_name/notebook.py`` -> ``solutions/NN_name.ipynb``;
- ``course execute`` (:mod:`course.execute`): store the solutions' check outputs;
- ``course make-student`` / ``course reset`` (:mod:`course.student`): learner notebooks;
- ``course grade`` (:mod:`course.grader`): grade learner notebooks;
- :mod:`course.notebook`: reading, writing and building notebook cells the same way everywhere.

Importing this package is light (no Jupyter, no nbformat): every notebook does it.
"""
from .checks import CheckFailure, NotAttempted, Trial, call, check, exercise, probe

__all__ = ["check", "call", "probe", "Trial", "exercise", "CheckFailure", "NotAttempted"]
