"""Fuzzing ``course_lib.load``: truncated and bit-flipped archives never crash or hang.

Every damaged file must either load or raise ``RuntimeError`` / ``pickle.UnpicklingError``
(a clean error naming the problem) within a second.  The campaigns run in a child
process, so a segfault or a hang shows up as a failure instead of killing pytest.
Seeded: the same bytes are tried on every run.
"""
from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import textwrap
from collections import OrderedDict

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_serialization_helpers import record_spans

import course_lib as cl
from course_lib import _weights_only_unpickler as W
from course_lib import nn

HERE = os.path.dirname(os.path.abspath(__file__))

CAMPAIGN = textwrap.dedent(r"""
    import io, json, pickle, random, sys, time
    import course_lib as cl

    path, out_dir = sys.argv[1], sys.argv[2]
    seed, n_flips, n_mmap = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    raw = open(path, "rb").read()
    pkl_start, pkl_len = json.loads(sys.argv[6])
    rng = random.Random(seed)
    stats = {"loaded": 0, "refused": 0, "unexpected": [], "slow": [], "cases": 0}

    def attempt(label, data, mmap=False):
        stats["cases"] += 1
        t0 = time.perf_counter()
        try:
            if mmap:
                fpath = out_dir + "/fuzz.pt"
                with open(fpath, "wb") as f:
                    f.write(data)
                obj = cl.load(fpath, mmap=True)
            else:
                obj = cl.load(io.BytesIO(data))
            repr(obj)  # touching the result must not crash either
            stats["loaded"] += 1
        except (RuntimeError, pickle.UnpicklingError) as e:
            stats["refused"] += 1
            if not str(e).strip():
                stats["unexpected"].append(f"{label}: {type(e).__name__} with an empty message")
        except Exception as e:
            stats["unexpected"].append(f"{label}: {type(e).__name__}: {e}"[:300])
        dt = time.perf_counter() - t0
        if dt > 1.0:
            stats["slow"].append(f"{label}: {dt:.2f}s")

    n = len(raw)
    cuts = sorted(set(range(0, n, max(1, n // 300))) | set(range(max(0, n - 300), n)))
    for cut in cuts:
        attempt(f"truncated to {cut}", raw[:cut])
    for i in range(n_flips):
        pos = rng.randrange(n)
        b = bytearray(raw)
        b[pos] ^= rng.randrange(1, 256)
        attempt(f"flip at {pos}", bytes(b))
    for pos in range(pkl_start, pkl_start + pkl_len):
        for x in (0x01, 0x80, 0xFF):
            b = bytearray(raw)
            b[pos] ^= x
            attempt(f"data.pkl flip {x:#x} at {pos}", bytes(b))
    for i in range(n_mmap):
        pos = rng.randrange(n)
        b = bytearray(raw)
        b[pos] ^= rng.randrange(1, 256)
        attempt(f"mmap flip at {pos}", bytes(b), mmap=True)
    print(json.dumps(stats))
""")


def _sample_checkpoint():
    base = cl.arange(24.)
    sd = OrderedDict([("w", nn.Parameter(cl.randn(3, 4))), ("b", cl.zeros(4)), ("n", cl.tensor(7)),
                      ("half", cl.ones(5, dtype=cl.float16)), ("mask", cl.tensor([True, False])),
                      ("empty", cl.empty(0, 2)), ("i8", cl.arange(6, dtype=cl.int8))])
    sd._metadata = OrderedDict([("", {"version": 1})])
    return {"model": sd, "views": [base, base[3:], base.view(4, 6).t()], "epoch": 5,
            "extra": {"lr": 0.1, "name": "run-1", "set": {1, 2}, "bytes": b"\x00\x01"}}


def _run_campaign(path, tmp_path, seed, n_flips, n_mmap):
    raw = path.read_bytes()
    spans = record_spans(raw)
    pkl = next(v for k, v in spans.items() if k.endswith("/data.pkl"))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([HERE, os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-c", CAMPAIGN, str(path), str(tmp_path), str(seed), str(n_flips),
                           str(n_mmap), json.dumps(list(pkl))],
                          capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, f"the fuzzing process died (status {proc.returncode}):\n{proc.stderr[-3000:]}"
    stats = json.loads(proc.stdout.strip().splitlines()[-1])
    assert stats["unexpected"] == [], stats["unexpected"][:20]
    assert stats["slow"] == [], stats["slow"][:20]
    assert stats["refused"] > 0 and stats["loaded"] > 0
    return stats


@pytest.mark.slow
def test_fuzz_course_lib_archive(tmp_path):
    path = tmp_path / "ckpt.pt"
    cl.manual_seed(0)
    cl.save(_sample_checkpoint(), path)
    stats = _run_campaign(path, tmp_path, seed=1234, n_flips=1500, n_mmap=150)
    assert stats["cases"] > 3000


@pytest.mark.slow
def test_fuzz_torch_archive(tmp_path):
    torch = pytest.importorskip("torch")
    base = torch.arange(24.)
    sd = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4)).state_dict()
    path = tmp_path / "torch.pt"
    torch.save({"sd": sd, "views": [base, base[3:], base.view(4, 6).t()], "step": torch.tensor(3)}, path)
    _run_campaign(path, tmp_path, seed=99, n_flips=1000, n_mmap=100)


# ------------------------------------------------------------------ the unpickler on random opcode streams

_OPS = [b"(", b".", b"Q", b"R", b"b", b"a", b"e", b"s", b"u", b"N", b"\x88", b"\x89", b")", b"]", b"}",
        b"\x8f", b"t", b"\x85", b"\x86", b"\x87", b"\x81", b"0", b"\x93", b"\x95"]
_WITH_ARGS = st.one_of(
    st.sampled_from(_OPS),
    st.binary(min_size=1, max_size=4).map(lambda b: b"K" + b[:1]),
    st.binary(min_size=4, max_size=4).map(lambda b: b"J" + b),
    st.binary(min_size=2, max_size=2).map(lambda b: b"M" + b),
    st.binary(min_size=8, max_size=8).map(lambda b: b"G" + b),
    st.integers(0, 255).map(lambda i: b"h" + bytes([i % 8])),
    st.integers(0, 255).map(lambda i: b"q" + bytes([i % 8])),
    st.text(max_size=8).map(lambda s: b"X" + len(s.encode()).to_bytes(4, "little") + s.encode()),
    st.binary(max_size=8).map(lambda b: b"\x8a" + bytes([len(b)]) + b),
    st.sampled_from([b"ccollections\nOrderedDict\n", b"ctorch._utils\n_rebuild_tensor_v2\n", b"ctorch\nFloatStorage\n",
                     b"cbuiltins\nset\n", b"c_codecs\nencode\n", b"ctorch\nSize\n", b"cposix\nsystem\n",
                     b"cbuiltins\neval\n", b"ctorch.nn.parameter\nParameter\n", b"ctorch\nfloat32\n"]),
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(st.lists(_WITH_ARGS, max_size=40), st.booleans())
def test_random_opcode_streams_fail_cleanly(ops, with_stop):
    data = b"\x80\x02" + b"".join(ops) + (b"." if with_stop else b"")
    u = W.Unpickler(data)
    u.persistent_load = lambda pid: cl.arange(4.)._storage
    try:
        u.load()
    except (pickle.UnpicklingError, RuntimeError):
        pass


def test_short_reads_and_bad_memo_are_unpickling_errors():
    for data in (b"", b"\x80", b"\x80\x02X\xff\xff\xff\x7fab", b"\x80\x02h\x05.", b"\x80\x02t.", b"\x80\x02.",
                 b"\x80\x02cposix", b"\x80\x02K\x01K\x02u.", b"\x80\x02\x8a\x05ab."):
        with pytest.raises(pickle.UnpicklingError):
            W.Unpickler(data).load()
