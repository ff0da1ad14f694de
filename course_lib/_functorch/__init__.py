"""AOT autograd: the joint forward+backward graph, its partition, and compiling both halves.

In PyTorch: ``torch/_functorch/`` (``aot_autograd.py``, ``partitioners.py``), also reachable as
``functorch.compile``.  Needs networkx (course_lib's ``compile`` extra) for the min-cut partitioner;
importing this package without it raises an ImportError that says so.

>>> from course_lib._functorch import aot_function, min_cut_rematerialization_partition
>>> f = aot_function(fn, fw_compiler, bw_compiler, partition_fn=min_cut_rematerialization_partition)
"""
from __future__ import annotations

from .aot_autograd import JointGraph, aot_function, aot_module, make_boxed_func, trace_joint
from .partitioners import MinCutOptions, default_partition, min_cut_rematerialization_partition, saved_values

__all__ = ["aot_function", "aot_module", "trace_joint", "JointGraph", "make_boxed_func", "default_partition",
           "min_cut_rematerialization_partition", "saved_values", "MinCutOptions"]
