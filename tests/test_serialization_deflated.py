"""Deflated (compressed) storage records: decompressed straight into the storage's buffer.

``torch.save`` and ``course_lib.save`` store records uncompressed, but a zip tool or a
hand-made archive may deflate them, and both loaders read those.  course_lib inflates a
record a megabyte at a time into the numpy array the storage will own, so a load needs
about the tensor's size in memory, not twice (the compressed bytes, then a copy).
"""
from __future__ import annotations

import io
import struct
import tracemalloc
import zipfile

import numpy as np
import pytest
from test_serialization_helpers import course_pickle, craft, values

import course_lib as cl

MB = 1 << 20


def deflated_checkpoint(path, t, *, level: int = 1) -> None:
    pkl, storages = course_pickle({"w": t})
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("ckpt/data.pkl", pkl)
        z.writestr("ckpt/byteorder", b"little")
        for k, v in storages.items():
            z.writestr(f"ckpt/data/{k}", v, compress_type=zipfile.ZIP_DEFLATED, compresslevel=level)
        z.writestr("ckpt/version", b"3\n")


def test_peak_memory_of_a_deflated_load_is_about_the_tensor(tmp_path):
    n = 16 * MB  # 64 MB of float32
    t = cl.from_numpy((np.arange(n, dtype=np.int64) % 1009).astype(np.float32))
    path = tmp_path / "deflated.pt"
    deflated_checkpoint(path, t)
    del t
    tracemalloc.start()
    try:
        r = cl.load(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    nbytes = 4 * n
    assert peak < 1.5 * nbytes, f"peak {peak / MB:.0f} MB for a {nbytes / MB:.0f} MB tensor"
    w = values(r["w"])
    assert w.shape == (n,) and w[1009] == 0.0 and w[-1] == (n - 1) % 1009


@pytest.mark.parametrize("numel", [0, 1, 1000, 3 * MB // 4 + 5])
def test_deflated_records_of_any_size_load(numel):
    for level in (0, 1, 9):
        t = cl.arange(float(numel))
        pkl, storages = course_pickle({"w": t})
        raw = io.BytesIO()
        with zipfile.ZipFile(raw, "w") as z:
            z.writestr("a/data.pkl", pkl)
            for k, v in storages.items():
                z.writestr(f"a/data/{k}", v, compress_type=zipfile.ZIP_DEFLATED, compresslevel=level)
            z.writestr("a/version", b"3\n")
        raw.seek(0)
        assert values(cl.load(raw)["w"]).tolist() == list(map(float, range(numel)))


def _corrupt(raw: bytes, name: str, how) -> bytes:
    z = zipfile.ZipFile(io.BytesIO(raw))
    info = z.getinfo(name)
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    b = bytearray(raw)
    how(b, start, info.compress_size)
    return bytes(b)


def _deflated_raw(numel: int = 50_000) -> bytes:
    pkl, storages = course_pickle({"w": cl.arange(float(numel))})
    return craft(pkl, storages, compression=zipfile.ZIP_DEFLATED)


@pytest.mark.parametrize("how", [
    lambda b, s, n: b.__setitem__(slice(s + n // 2, s + n // 2 + 8), b"\xff" * 8),
    lambda b, s, n: b.__setitem__(slice(s + n - 4, s + n), b"\x00" * 4),
    lambda b, s, n: b.__setitem__(s + 100, b[s + 100] ^ 0x10),
    lambda b, s, n: b.__setitem__(slice(s, s + n), b"\x00" * n),
], ids=["garbage", "end-zeroed", "bit-flip", "all-zero"])
def test_a_damaged_deflated_record_is_a_clean_error(how):
    raw = _corrupt(_deflated_raw(), "archive/data/0", how)
    damaged = "record 'archive/data/0' (cannot be read|is cut short|fails its CRC-32|holds)"
    with pytest.raises(RuntimeError, match=damaged):
        cl.load(io.BytesIO(raw))


def _claim_size(raw: bytes, name: str, size: int) -> bytes:
    """The archive with ``name``'s uncompressed size changed in its local and central headers."""
    z = zipfile.ZipFile(io.BytesIO(raw))
    b = bytearray(raw)
    struct.pack_into("<I", b, z.getinfo(name).header_offset + 22, size)
    pos = z.start_dir
    while b[pos:pos + 4] == b"PK\x01\x02":
        n, m, k = struct.unpack_from("<HHH", b, pos + 28)
        if b[pos + 46:pos + 46 + n].decode() == name:
            struct.pack_into("<I", b, pos + 24, size)
        pos += 46 + n + m + k
    return bytes(b)


def test_a_deflated_record_longer_than_claimed_is_refused():
    """The deflate stream holds 80 bytes, the headers (and the pickle) say 40: refused, not
    written past the storage's 40 bytes."""
    pkl, _ = course_pickle({"w": cl.arange(10.)})
    raw = craft(pkl, {"0": bytes(80)}, compression=zipfile.ZIP_DEFLATED)
    raw = _claim_size(raw, "archive/data/0", 40)
    with pytest.raises(RuntimeError, match="holds more than the 40 bytes its size says"):
        cl.load(io.BytesIO(raw))


def test_other_compression_methods_still_load():
    pkl, storages = course_pickle({"w": cl.arange(1000.)})
    raw = craft(pkl, storages, compression=zipfile.ZIP_BZIP2)
    assert values(cl.load(io.BytesIO(raw))["w"]).tolist() == list(map(float, range(1000)))


def test_torch_reads_the_same_deflated_files(tmp_path):
    torch = pytest.importorskip("torch")
    t = cl.from_numpy(np.arange(3 * MB, dtype=np.float32))
    deflated_checkpoint(tmp_path / "d.pt", t)
    theirs = torch.load(tmp_path / "d.pt", weights_only=True)["w"].numpy()
    np.testing.assert_array_equal(values(cl.load(tmp_path / "d.pt")["w"]), theirs)
