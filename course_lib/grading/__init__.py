"""Grading and authoring tools of the course.

- ``check("03.2", obj)`` (from :mod:`course_lib.grading.checks`): used in notebooks;
- ``course grade`` (:mod:`course_lib.grading.grader`): grade learner notebooks;
- ``course make-student`` / ``course reset`` (:mod:`course_lib.grading.student`);
- ``course execute`` (:mod:`course_lib.grading.execute`): refresh solution outputs;
- :mod:`course_lib.grading.notebook`: helpers to build chapter notebooks.
"""
from .checks import CheckFailure, NotAttempted, check

__all__ = ["check", "CheckFailure", "NotAttempted"]
