"""Scripts that build solutions notebooks with :mod:`course_lib.grading.notebook`.

``python -m course_lib.grading.sources.ch00`` rewrites ``solutions/00_welcome.ipynb``
(without outputs); then ``course execute`` stores the check outputs and
``course make-student`` regenerates ``notebooks/``.
"""
