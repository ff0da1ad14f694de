"""Helpers shared by the serialization tests: crafting archives and pickles byte by byte.

(No tests here; pytest collects the module and finds none.)
"""
from __future__ import annotations

import io
import pickle
import struct
import zipfile

import numpy as np

import course_lib as cl
from course_lib import serialization as S

PROTO2 = b"\x80\x02"


def binunicode(s: str) -> bytes:
    b = s.encode("utf-8")
    return b"X" + struct.pack("<I", len(b)) + b


def global_op(module: str, name: str) -> bytes:
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n"


def arg(v) -> bytes:
    if isinstance(v, str):
        return binunicode(v)
    if isinstance(v, bool):
        return b"\x88" if v else b"\x89"
    if isinstance(v, int) and 0 <= v < 256:
        return b"K" + bytes([v])
    if isinstance(v, int):
        return b"J" + struct.pack("<i", v)
    if isinstance(v, bytes):  # already opcodes
        return v
    raise TypeError(v)


def call(module: str, name: str, *args) -> bytes:
    """Opcodes (no PROTO/STOP) that call module.name(*args)."""
    return global_op(module, name) + b"(" + b"".join(arg(a) for a in args) + b"tR"


def pickle_program(body: bytes, proto: bytes = PROTO2) -> bytes:
    return proto + body + b"."


def craft(data_pkl: bytes, storages: dict[str, bytes] | None = None, *, prefix: str = "archive",
          version: bytes | None = b"3\n", byteorder: bytes | None = b"little",
          compression: int = zipfile.ZIP_STORED, omit: tuple = (), extra: dict | None = None) -> bytes:
    """A torch.save-style zip around `data_pkl` and raw storage bytes."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=compression) as z:
        records = [("data.pkl", data_pkl)]
        if byteorder is not None:
            records.append(("byteorder", byteorder))
        records += [(f"data/{k}", v) for k, v in (storages or {}).items()]
        if version is not None:
            records.append(("version", version))
        records += list((extra or {}).items())
        for name, data in records:
            if name not in omit:
                z.writestr(f"{prefix}/{name}", data)
    return out.getvalue()


def course_pickle(obj) -> tuple[bytes, dict[str, bytes]]:
    """data.pkl and the storages' bytes, as course_lib.save would write them."""
    buf = io.BytesIO()
    p = S._Pickler(buf, 2)
    p.dump(obj)
    return buf.getvalue(), {k: s.data.tobytes() for k, s in p.storages.items()}


def saved_bytes(obj) -> bytes:
    buf = io.BytesIO()
    cl.save(obj, buf)
    return buf.getvalue()


def record_spans(raw: bytes) -> dict[str, tuple[int, int]]:
    """name -> (data offset, size) of each record of a zip, from its local headers."""
    z = zipfile.ZipFile(io.BytesIO(raw))
    out = {}
    for i in z.infolist():
        n, m = struct.unpack("<HH", raw[i.header_offset + 26:i.header_offset + 30])
        out[i.filename] = (i.header_offset + 30 + n + m, i.compress_size)
    return out


def layout(t) -> tuple:
    return (tuple(t.shape), tuple(t.stride()), t.storage_offset(), str(t.dtype).split(".")[-1])


def values(t) -> np.ndarray:
    """A tensor's values as numpy (course_lib or torch)."""
    if hasattr(t, "_np"):
        return np.array(t._np())
    return t.detach().numpy().copy()


def unpickling_error_text(e: BaseException) -> str:
    assert isinstance(e, pickle.UnpicklingError), type(e)
    return str(e)
