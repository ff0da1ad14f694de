"""Split a joint forward+backward graph into a forward graph and a backward graph.

In PyTorch: ``torch/_functorch/partitioners.py``.  The joint graph (``aot_autograd.trace_joint``)
has placeholders ``primals_*`` (the inputs) and ``tangents_*`` (the output gradients); its first
``num_fwd_outputs`` outputs are the function's, the rest the input gradients.  A partition picks
the **saved values**: the forward graph returns ``outputs + saved``, the backward graph takes
``saved + tangents`` and recomputes whatever else it needs from them.

* ``default_partition`` keeps every op where the program ran it: the forward graph is the ops up
  to the last forward op, and every forward value the backward reads is saved.
* ``min_cut_rematerialization_partition`` chooses the saved values that cost the least memory
  traffic, recomputing cheap ops (pointwise, views, reductions) in the backward.  It builds a flow
  network in which each node ``X`` is an edge ``X_in -> X_out`` whose capacity is the bytes of
  ``X``'s value, ``* 1.1 ** max(min(dist_from_bw, 100), 1)`` (values close to the backward are
  cheaper to keep) and ``* 2`` when ``X`` would not be written to memory anyway (it fuses into all
  its users).  Data edges have infinite capacity; what the backward needs is connected to the
  sink; what must not be recomputed (inputs, matmuls and convolutions, random ops, ops outside the recomputable
  list, reductions that shrink their input 4x, ...) hangs from the source with infinite capacity.
  The minimum source-sink cut (``networkx.minimum_cut``) crosses exactly the ``X_in -> X_out``
  edges of the values to save.

On ``a / (a.abs() + 1) * b`` the default partition saves ``primals_1, primals_2, add, div``; the
min-cut saves only ``primals_1, primals_2`` and recomputes ``abs``, ``add`` and ``div`` in the
backward (the inputs are needed anyway and recomputing is free).  On ``cos(cos(x))`` the default
saves ``primals_1, cos`` and the min-cut only ``primals_1``.  ``saved_values(bw_module)`` lists
them.

``build_flow_network`` returns that network (``networkx.DiGraph``, with each infinite edge's
reason) for drawing.  Not carried over from PyTorch: activation checkpointing tags, the activation
memory budget (as if 1.0), RNG functionalization, symbolic sizes, collectives, and reordering the
backward graph.
networkx is course_lib's ``compile`` extra; eager course_lib does not need it.
"""
from __future__ import annotations

import copy
import heapq
import math
import operator
from dataclasses import dataclass
from typing import Any, Sequence

try:
    import networkx as nx
except ImportError as e:  # pragma: no cover - exercised in a subprocess by the tests
    raise ImportError(
        "course_lib._functorch (AOT autograd) needs networkx for the min-cut partitioner. It is course_lib's "
        "'compile' extra: pip install -e '.[compile]' (or pip install networkx).") from e

from .._ops.registry import OPS, OpDef
from ..fx.graph import Graph
from ..fx.graph_module import GraphModule
from ..fx.node import Node
from ..fx.passes.cse_pass import common_subexpression_elimination

__all__ = ["default_partition", "min_cut_rematerialization_partition", "saved_values", "MinCutOptions",
           "OpTypes", "get_default_op_list", "classify_nodes", "build_flow_network", "solve_min_cut"]


# ---------------------------------------------------------------------------
# what a node is
# ---------------------------------------------------------------------------
def _is_primal(node: Node) -> bool:
    return node.op == "placeholder" and "tangents" not in str(node.target)


def _is_tangent(node: Node) -> bool:
    return node.op == "placeholder" and "tangents" in str(node.target)


def _target_name(node: Node) -> str | None:
    """The op's name (``"add"``), ``"getitem"``, or None for anything else (PyTorch's ``get_aten_target``)."""
    if node.op != "call_function":
        return None
    if isinstance(node.target, OpDef):
        return node.target.name
    if node.target is operator.getitem:
        return "getitem"
    return None


def _size_of(node: Node) -> int:
    """Bytes of the node's value (a tuple's: the sum); 0 when it has no tensor metadata."""
    meta = node.meta.get("tensor_meta")
    metas = meta if isinstance(meta, tuple) and not hasattr(meta, "shape") else (meta,)
    return sum(math.prod(m.shape) * m.dtype.itemsize for m in metas if m is not None)


def _is_tensor(node: Node) -> bool:
    return hasattr(node.meta.get("tensor_meta"), "shape")


@dataclass(frozen=True)
class OpTypes:
    """Op names by category (PyTorch's ``OpTypes``; names here, overload packets there)."""

    fusible_ops: frozenset[str]
    compute_intensive_ops: frozenset[str]
    random_ops: frozenset[str]
    view_ops: frozenset[str]
    recomputable_ops: frozenset[str]

    def is_fusible(self, node: Node) -> bool:
        return _target_name(node) in self.fusible_ops

    def is_compute_intensive(self, node: Node) -> bool:
        return _target_name(node) in self.compute_intensive_ops

    def is_random(self, node: Node) -> bool:
        return _target_name(node) in self.random_ops

    def is_view(self, node: Node) -> bool:
        return _target_name(node) in self.view_ops

    def is_recomputable(self, node: Node) -> bool:
        return _target_name(node) in self.recomputable_ops


# PyTorch's default_recomputable_ops (get_default_op_list), by name; names course_lib does not have
# are harmless.  Every op of kind "pointwise" is added, as PyTorch adds every op tagged pointwise.
_RECOMPUTABLE = """
add sub div atan2 mul max min pow remainder fmod __and__ __or__ __xor__ __lshift__ __rshift__ eq ne ge gt
le lt abs bitwise_not ceil floor frac neg relu round silu trunc log log10 log1p log2 lgamma exp expm1 erf
erfc cos acos cosh sin asin sinh tan atan tanh atanh sqrt rsqrt reciprocal sigmoid softplus threshold
threshold_backward clamp where lerp addcmul gelu gelu_backward sum mean _grad_sum_to_size sum_to_size amax
to type_as getitem squeeze unsqueeze rsub _to_copy
div convert_element_type prepare_softmax_online clone _to_copy full_like var sum var std broadcast_in_dim
select _unsafe_view view expand slice reshape broadcast_tensors scalar_tensor ones new_zeros
lift_fresh_copy arange triu var_mean isinf any full as_strided zeros empty empty_like argmax maximum iota
index gather zeros_like
""".split()
_VIEWS = "squeeze unsqueeze alias view slice t broadcast_in_dim expand as_strided permute select split".split()
_RANDOM = "native_dropout rand_like randn_like".split()
_COMPUTE_INTENSIVE = """
mm convolution convolution_backward bmm addmm _scaled_dot_product_flash_attention
_scaled_dot_product_efficient_attention _flash_attention_forward _efficient_attention_forward
upsample_bilinear2d _scaled_mm
""".split()


def get_default_op_list() -> OpTypes:
    """The op categories the min-cut partitioner uses (PyTorch's lists, by op name)."""
    pointwise = {name for name, op in OPS.items() if op.kind == "pointwise"}
    recomputable = frozenset(_RECOMPUTABLE) | frozenset(_VIEWS) | pointwise
    random = frozenset(_RANDOM)
    return OpTypes(recomputable | random, frozenset(_COMPUTE_INTENSIVE), random, frozenset(_VIEWS), recomputable)


# ---------------------------------------------------------------------------
# cutting a joint graph into two
# ---------------------------------------------------------------------------
class _InvalidNode:
    """Marks a joint-graph node the subgraph cannot compute (it depends on a missing input)."""


def _extract_graph_with_inputs_outputs(joint_graph: Graph, inputs: Sequence[Node], outputs: Sequence[Any]) -> Graph:
    """The part of ``joint_graph`` that computes ``outputs`` from ``inputs`` (which may be any nodes).

    Nodes are copied in order; one depending on a node that is neither an input nor computable
    from them is left out.  Then dead code goes.
    """
    new_graph = Graph()
    env: dict[Node, Any] = {}
    for node in inputs:
        new = new_graph.placeholder(node.name)
        new.meta = node.meta
        env[node] = new
    for node in joint_graph.nodes:
        if node in env:
            continue
        if node.op == "placeholder":
            env[node] = _InvalidNode
        elif node.op == "call_function":
            if any(env[x] is _InvalidNode for x in node.all_input_nodes):
                env[node] = _InvalidNode
            else:
                env[node] = new_graph.node_copy(node, lambda x: env[x])
        elif node.op == "get_attr":
            env[node] = new_graph.node_copy(node, lambda x: env[x])
    values = []
    for x in outputs:
        if isinstance(x, Node):
            if env[x] is _InvalidNode:
                raise AssertionError(f"Node {x} was invalid, but is output")
            values.append(env[x])
        else:
            values.append(x)
    new_graph.output(tuple(values))
    new_graph.eliminate_dead_code()
    new_graph.lint()
    return new_graph


def _extract_fwd_bwd_outputs(joint_module: GraphModule, *, num_fwd_outputs: int) -> tuple[list, list]:
    (output,) = joint_module.graph.find_nodes(op="output")
    outputs = list(output.args[0])
    return outputs[:num_fwd_outputs], outputs[num_fwd_outputs:]


def _extract_fwd_bwd_modules(joint_module: GraphModule, saved: list[Node], *,
                             num_fwd_outputs: int) -> tuple[GraphModule, GraphModule]:
    """The forward ``primals -> outputs + saved`` and backward ``saved + tangents -> gradients`` modules.

    Saved values the backward does not use after all are dropped first.
    """
    fwd_outputs, bwd_outputs = _extract_fwd_bwd_outputs(joint_module, num_fwd_outputs=num_fwd_outputs)
    placeholders = joint_module.graph.find_nodes(op="placeholder")
    primals = [n for n in placeholders if _is_primal(n)]
    tangents = [n for n in placeholders if _is_tangent(n)]
    bwd_graph = _extract_graph_with_inputs_outputs(joint_module.graph, saved + tangents, bwd_outputs)
    unused = {n.name for n in bwd_graph.find_nodes(op="placeholder") if not n.users}
    saved = [n for n in saved if n.name not in unused]
    fwd_graph = _extract_graph_with_inputs_outputs(joint_module.graph, primals, fwd_outputs + saved)
    bwd_graph = _extract_graph_with_inputs_outputs(joint_module.graph, saved + tangents, bwd_outputs)
    return GraphModule(joint_module, fwd_graph), GraphModule(joint_module, bwd_graph)


def saved_values(bw_module: GraphModule) -> list[str]:
    """The names of the values a partition saves: the backward graph's inputs that are not tangents."""
    return [n.name for n in bw_module.graph.find_nodes(op="placeholder") if not _is_tangent(n)]


# ---------------------------------------------------------------------------
# the default partition
# ---------------------------------------------------------------------------
def default_partition(joint_module: GraphModule, _joint_inputs: Any = None, *,
                      num_fwd_outputs: int) -> tuple[GraphModule, GraphModule]:
    """Split where the program ran each op, saving every forward value the backward reads.

    The forward is every node up to the last one traced in the forward (tangents excluded).
    """
    forward_nodes = []
    last = None
    for node in joint_module.graph.nodes:
        if node.meta.get("partitioner_tag") == "is_forward" or _is_primal(node):
            last = node
    for node in joint_module.graph.nodes:
        if not _is_tangent(node):
            forward_nodes.append(node)
        if node is last:
            break
    saved = []
    for node in forward_nodes:
        if node.op == "output":
            continue
        if node.users and all(u.target is operator.getitem for u in node.users):
            continue   # a tuple: its getitems are saved instead
        saved.append(node)
    fw_module, bw_module = _extract_fwd_bwd_modules(joint_module, saved, num_fwd_outputs=num_fwd_outputs)
    return fw_module, bw_module


# ---------------------------------------------------------------------------
# the min-cut partition
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class MinCutOptions:
    """Which nodes the min-cut may not recompute (PyTorch's ``functorch.config`` defaults)."""

    ban_if_used_far_apart: bool = True
    ban_if_long_fusible_chains: bool = True
    ban_if_materialized_backward: bool = True
    ban_if_not_in_allowlist: bool = True
    ban_if_reduction: bool = True


@dataclass
class NodeInfo:
    """Which joint-graph nodes the forward needs, which the backward needs, and forward order."""

    inputs: list[Node]
    required_fw_nodes: set[Node]
    required_bw_nodes: set[Node]
    tangents_closure: set[Node]
    fw_order: dict[Node, int]

    def is_required_fw(self, n: Node) -> bool:
        return n in self.required_fw_nodes


def classify_nodes(joint_module: GraphModule, *, num_fwd_outputs: int) -> NodeInfo:
    """The forward's nodes (what computes the outputs from the primals), the backward's (everything
    downstream of a tangent, plus the gradient outputs)."""
    required_bw: set[Node] = set()
    for node in joint_module.graph.nodes:
        if _is_tangent(node):
            required_bw.add(node)
        if node in required_bw:
            required_bw.update(node.users)
    tangents_closure = set(required_bw)
    fwd_outputs, bwd_outputs = _extract_fwd_bwd_outputs(joint_module, num_fwd_outputs=num_fwd_outputs)
    required_bw.update(o for o in bwd_outputs if isinstance(o, Node))
    inputs = [n for n in joint_module.graph.nodes if _is_primal(n)]
    forward_only = _extract_graph_with_inputs_outputs(joint_module.graph, inputs, fwd_outputs)
    by_name = {n.name: n for n in joint_module.graph.nodes}
    required_fw = {by_name[n.name] for n in forward_only.nodes if n.op != "output"}
    order = {}
    for node in joint_module.graph.nodes:
        if node in required_fw:
            order[node] = len(order)
    return NodeInfo(inputs, required_fw, required_bw, tangents_closure, order)


def _dist_from_bw(joint_graph: Graph, info: NodeInfo) -> dict[Node, int]:
    """How many forward ops lie between a node and its nearest use in the backward (0: a backward node)."""
    dist: dict[Node, int] = {}
    for node in reversed(joint_graph.nodes):
        if node.op == "output":
            dist[node] = int(1e9)
        elif not info.is_required_fw(node):
            dist[node] = 0
        else:
            dist[node] = min([int(1e9)] + [dist[u] + 1 for u in node.users])
    return dist


def build_flow_network(joint_graph: Graph, info: NodeInfo, options: MinCutOptions = MinCutOptions(),
                       op_types: OpTypes | None = None) -> tuple[Any, set[Node]]:
    """The min-cut's flow network (a ``networkx.DiGraph`` from "source" to "sink"; each edge has a
    ``capacity``, and ``reason`` where it is infinite) and the nodes banned from recomputation."""
    op_types = op_types or get_default_op_list()
    dist = _dist_from_bw(joint_graph, info)

    def is_fusible(a: Node, b: Node) -> bool:
        if _target_name(b) == "cat":   # "memory fusion" into a cat
            return True
        return op_types.is_fusible(a) and op_types.is_fusible(b)

    def is_materialized_backwards(node: Node) -> bool:
        """Does the backward have to write this value to memory anyway (an unfusible user)?"""
        if op_types.is_view(node):
            return False
        todo = [node]
        while todo:
            cur = todo.pop()
            for user in cur.users:
                if not info.is_required_fw(user) and not is_fusible(cur, user):
                    return True
                if op_types.is_view(user):
                    todo.append(user)
        return False

    def should_ban_recomputation(node: Node) -> str | None:
        if node.op != "call_function" or node.target is operator.getitem:
            return None
        if options.ban_if_not_in_allowlist:
            if not op_types.is_recomputable(node):
                return "not in recomputable allowlist"
        else:
            if op_types.is_random(node):
                return "random op"
            if op_types.is_compute_intensive(node):
                return "compute intensive op"
        if options.ban_if_materialized_backward and is_materialized_backwards(node):
            return "materialized in backward"
        if options.ban_if_reduction:
            inputs_size = sum(_size_of(i) for i in node.args if isinstance(i, Node))
            if _size_of(node) * 4 < inputs_size:
                return "reduction op"
        return None

    def is_materialized(node: Node) -> bool:
        if node.op == "placeholder":
            return True
        return not all(is_fusible(node, user) for user in node.users)

    def get_node_weight(node: Node) -> float:
        weight = int(_size_of(node) * 1.1 ** max(min(dist[node], 100), 1))
        return weight if is_materialized(node) else weight * 2

    nx_graph = nx.DiGraph()
    banned: set[Node] = set()

    def ban_recomputation(node: Node, reason: str = "") -> None:
        if op_types.is_view(node):
            return
        banned.add(node)
        nx_graph.add_edge("source", node.name + "_in", capacity=math.inf, reason=f"cannot recompute: {reason}")

    for node in joint_graph.nodes:
        if node.op == "output":
            continue
        if node in info.required_bw_nodes:
            if node not in info.tangents_closure:
                nx_graph.add_edge(node.name + "_out", "sink", capacity=math.inf, reason="input required for gradient")
            else:
                nx_graph.add_edge(node.name + "_in", "sink", capacity=math.inf, reason="required for gradient")
                continue
        if _is_primal(node):
            ban_recomputation(node, "primal input")
        reason = should_ban_recomputation(node)
        if info.is_required_fw(node) and reason:
            ban_recomputation(node, reason)
        if _is_tensor(node):
            nx_graph.add_edge(node.name + "_in", node.name + "_out", capacity=get_node_weight(node))
        else:
            nx_graph.add_edge(node.name + "_in", node.name + "_out", capacity=math.inf, reason="cannot save: a tuple")
        for user in node.users:
            nx_graph.add_edge(node.name + "_out", user.name + "_in", capacity=math.inf, reason="data dependency")

    fw_nodes = sorted(info.required_fw_nodes, key=info.fw_order.__getitem__)

    def find_first_unfusible(start_nodes: list[Node], max_range: int) -> int:
        """The forward position of the first unfusible op downstream of ``start_nodes``."""
        heap = [(info.fw_order[n], n.name, n, True) for n in start_nodes]
        heapq.heapify(heap)
        while heap:
            _, _, node, fusible = heapq.heappop(heap)
            if not fusible:
                return info.fw_order[node]
            for user in node.users:
                if info.is_required_fw(user) and info.fw_order[user] <= max_range:
                    item = (info.fw_order[user], user.name, user, is_fusible(node, user))
                    if item not in heap:
                        heapq.heappush(heap, item)
        return max_range

    if options.ban_if_used_far_apart:
        # a value used both near and far downstream: recomputing the far user will not fuse with the near
        for used in fw_nodes:
            fw_users = [u for u in used.users if info.is_required_fw(u)]
            if fw_users:
                first_unfusible = find_first_unfusible(fw_users, max(info.fw_order[u] for u in fw_users))
                for user in fw_users:
                    if info.fw_order[user] > first_unfusible and is_fusible(used, user) and user not in banned:
                        ban_recomputation(user, "used far apart")

    if options.ban_if_long_fusible_chains:
        # no chain of more than 100 fusible forward ops is recomputed from its start
        visited: set[Node] = set()
        for start in fw_nodes:
            start_order = info.fw_order[start]
            fusible = [(start_order, start.name, start)]
            while fusible:
                _, _, cur = heapq.heappop(fusible)
                if cur in visited:
                    continue
                visited.add(cur)
                if info.fw_order[cur] > start_order + 100 and not fusible:
                    ban_recomputation(cur, "long fusible chain")
                    break
                for user in cur.users:
                    if info.is_required_fw(user) and is_fusible(cur, user) and user not in banned:
                        heapq.heappush(fusible, (info.fw_order[user], user.name, user))

    return nx_graph, banned


def solve_min_cut(joint_graph: Graph, info: NodeInfo, options: MinCutOptions = MinCutOptions(),
                  op_types: OpTypes | None = None) -> tuple[list[Node], set[Node]]:
    """The values to save (in graph order) and the nodes banned from recomputation."""
    nx_graph, banned = build_flow_network(joint_graph, info, options, op_types)
    _, (reachable, non_reachable) = nx.minimum_cut(nx_graph, "source", "sink")
    cut: set[str] = set()
    for u in reachable:
        for v in nx_graph[u]:
            if v in non_reachable:
                if u[:-3] != v[:-4]:
                    raise AssertionError(f"the cut crosses {u} -> {v}, not a node's own edge")
                cut.add(u[:-3])
    saved = [n for n in joint_graph.nodes if n.name in cut]
    return saved, banned


def min_cut_rematerialization_partition(joint_module: GraphModule, _joint_inputs: Any = None, *,
                                        num_fwd_outputs: int,
                                        options: MinCutOptions = MinCutOptions()) -> tuple[GraphModule, GraphModule]:
    """Split so that the backward recomputes cheap forward ops instead of saving their values.

    Works on a copy of the joint graph after dead-code elimination and CSE (PyTorch does both on
    the joint graph itself).  ``options`` switches the bans off one by one (PyTorch: ``functorch.config``).
    """
    joint_module = GraphModule(joint_module, copy.deepcopy(joint_module.graph))
    joint_module.graph.eliminate_dead_code()
    common_subexpression_elimination(joint_module)
    joint_module.recompile()
    info = classify_nodes(joint_module, num_fwd_outputs=num_fwd_outputs)
    if not info.required_bw_nodes:
        return default_partition(joint_module, _joint_inputs, num_fwd_outputs=num_fwd_outputs)
    saved, _ = solve_min_cut(joint_module.graph, info, options)
    return _extract_fwd_bwd_modules(joint_module, saved, num_fwd_outputs=num_fwd_outputs)

