"""Chapter 04's checks: how their cases are drawn."""
from __future__ import annotations

from course.checks import get_exercise

#: The seeds in 0..400 whose 04.9 cases drew a tree with no parameter (ReLUs and BatchNorms only): its SGD raised
#: "optimizer got an empty parameter list" and grading the notebook crashed. Drawing all 401 takes 12 s.
_EMPTY_TREE_SEEDS = [53, 55, 77, 89, 110, 112, 134, 153, 173, 183, 189, 210, 227, 232, 259, 363, 394]


def test_04_9_trees_without_parameters_get_one() -> None:
    ex = get_exercise("04.9")
    for seed in _EMPTY_TREE_SEEDS:
        assert len(ex.trials(seed)) == 10
