"""The zip archive a checkpoint is: writing its records, and reading them back.

In PyTorch: ``caffe2/serialize/inline_container.cc`` (C++), ``PyTorchStreamWriter`` and
``PyTorchStreamReader``, which Python sees as ``torch._C.PyTorchFileWriter`` and
``torch._C.PyTorchFileReader``; the version numbers are in ``caffe2/serialize/versions.h``.
Here :class:`_ArchiveWriter` and :class:`_ArchiveReader`, on Python's ``zipfile`` and ``zlib``.

A checkpoint is a zip archive whose records all sit in one folder (``model/data.pkl``,
``model/data/0``, ...).  The writer stores every record uncompressed, with its data at a
multiple of 64 bytes in the file, so that ``load(..., mmap=True)`` can view a storage
straight in the mapped file; it adds the ``version`` and ``.data/serialization_id``
records when it closes, as ``PyTorchStreamWriter::writeEndOfFile`` does.  The reader finds
records through the zip's central directory and turns every problem (a truncated file, a
bad CRC-32, a record that claims more bytes than the file has) into a ``RuntimeError``
that names the record.
"""
from __future__ import annotations

import hashlib
import os
import struct
import zipfile
import zlib
from typing import IO

import numpy as np

STORAGE_ALIGNMENT = 64                   # kFieldAlignment: each record's data starts at a multiple of it
FILE_FORMAT_VERSION = 3                  # what `version` holds ("3\n"), as torch.save writes it
MAX_SUPPORTED_FILE_FORMAT_VERSION = 10   # kMaxSupportedFileFormatVersion in caffe2/serialize/versions.h


# =============================================================================================
# Writing (PyTorchStreamWriter)
# =============================================================================================
_PAD_HEADER_ID = 0x4246               # "FB": the extra field PyTorch pads local headers with
_PARALLEL_CRC_BYTES = 1 << 20        # records this big get their CRC-32 computed in a second thread
_INFLATE_CHUNK = 1 << 20             # a compressed record is read and inflated this many bytes at a time
_U32 = 0xFFFFFFFF
_DOS_TIME, _DOS_DATE = 0, (0 << 9) | (1 << 5) | 1  # 1980-01-01 00:00: a fixed date, so saves are reproducible
_LOCAL = struct.Struct("<IHHHHHIIIHH")            # local file header (30 bytes)
_CENTRAL = struct.Struct("<IHHHHHHIIIHHHHHII")    # central directory header (46 bytes)
_EOCD = struct.Struct("<IHHHHIIH")                # end of central directory (22 bytes)
_EOCD64 = struct.Struct("<IQHHIIQQQQ")            # zip64 end of central directory (56 bytes)
_EOCD64_LOCATOR = struct.Struct("<IIQI")          # zip64 end of central directory locator (20 bytes)


class _ArchiveWriter:
    """Writes a zip archive of ``<prefix>/<name>`` records: stored, each record's data 64-byte aligned.

    A zip file is a sequence of records, each a *local header* (30 bytes, the name, an
    "extra" field) followed by the data, and at the end a *central directory* listing
    every record's name, CRC-32, size and offset, then an end record pointing at the
    directory.  Padding the extra field moves each record's data to the next multiple
    of 64, so that a memory-mapped storage starts aligned (``PyTorchStreamWriter::
    writeRecord`` does the same).  Sizes or offsets past 4 GiB use the zip64 variants.

    The CRC-32 of a large record is computed in a second thread while the main thread
    writes the bytes (both release the GIL), and patched into the local header after.
    """

    def __init__(self, fileobj: IO[bytes], prefix: str, force_zip64: bool = False):
        self.f = fileobj
        self.prefix = prefix
        try:
            self.pos = fileobj.tell()
            # (a file opened for appending "seeks" but writes at the end: no patching there)
            self.seekable = fileobj.seekable() and "a" not in str(getattr(fileobj, "mode", ""))
        except (AttributeError, OSError, ValueError):
            self.pos, self.seekable = 0, False
        self.force_zip64 = force_zip64
        self.entries: list[tuple] = []  # (name, flags, crc, size, header offset, zip64)
        self._digest = hashlib.sha1()
        self._pool = None

    def _write(self, data) -> None:
        view = memoryview(data).cast("B")
        while view.nbytes:
            n = self.f.write(view)
            if n is None or n == view.nbytes:  # buffered files write everything
                break
            view = view[n:]

    def _crc_later(self, data):
        if self._pool is None:
            from concurrent.futures import ThreadPoolExecutor
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="course_lib-crc32")
        return self._pool.submit(zlib.crc32, data)

    def write_record(self, name: str, data) -> None:
        if isinstance(data, np.ndarray):
            data = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
        data = memoryview(data).cast("B")
        size = data.nbytes
        fname = f"{self.prefix}/{name}".encode("utf-8")
        flags = 0 if fname.isascii() else 0x800  # bit 11: the name is UTF-8
        zip64 = self.force_zip64 or size >= _U32
        z64 = struct.pack("<HHQQ", 1, 16, size, size) if zip64 else b""
        pad = (-(self.pos + _LOCAL.size + len(fname) + len(z64) + 4)) % STORAGE_ALIGNMENT
        extra = z64 + struct.pack("<HH", _PAD_HEADER_ID, pad) + b"Z" * pad
        later = self.seekable and size >= _PARALLEL_CRC_BYTES
        future = self._crc_later(data) if later else None
        crc = 0 if later else zlib.crc32(data)
        header_offset = self.pos
        sizes = (_U32, _U32) if zip64 else (size, size)
        self._write(_LOCAL.pack(0x04034B50, 45 if zip64 else 20, flags, 0, _DOS_TIME, _DOS_DATE, crc, *sizes,
                                len(fname), len(extra)) + fname + extra)
        self._write(data)
        self.pos = header_offset + _LOCAL.size + len(fname) + len(extra) + size
        if future is not None:
            crc = future.result()
            self.f.seek(header_offset + 14)  # the CRC field of the local header
            self.f.write(struct.pack("<I", crc))
            self.f.seek(self.pos)
        self.entries.append((fname, flags, crc, size, header_offset, zip64))
        self._digest.update(f"{name}:{crc}:{size};".encode())

    def close(self) -> None:
        """Write the ``version`` and ``.data/serialization_id`` records, the central directory and the
        end records (``PyTorchStreamWriter::writeEndOfFile``)."""
        self.write_record("version", f"{FILE_FORMAT_VERSION}\n".encode())
        self.write_record(".data/serialization_id", self._digest.hexdigest().encode())
        cd_offset = self.pos
        central = []
        for fname, flags, crc, size, offset, zip64 in self.entries:
            big = []  # zip64 extra: the sizes and/or the offset that do not fit in 32 bits, in this order
            if zip64 or size >= _U32:
                big += [size, size]
            if offset >= _U32 or self.force_zip64:
                big.append(offset)
            extra = struct.pack(f"<HH{len(big)}Q", 1, 8 * len(big), *big) if big else b""
            version = 45 if big else 20
            sizes = (_U32, _U32) if (zip64 or size >= _U32) else (size, size)
            central.append(_CENTRAL.pack(
                0x02014B50, (3 << 8) | version, version, flags, 0, _DOS_TIME, _DOS_DATE, crc, *sizes, len(fname),
                len(extra), 0, 0, 0, 0o644 << 16, _U32 if (offset >= _U32 or self.force_zip64) else offset)
                + fname + extra)
        directory = b"".join(central)
        self._write(directory)
        n, cd_size = len(self.entries), len(directory)
        if self.force_zip64 or n >= 0xFFFF or cd_offset >= _U32 or cd_size >= _U32:
            self._write(_EOCD64.pack(0x06064B50, _EOCD64.size - 12, 45, 45, 0, 0, n, n, cd_size, cd_offset))
            self._write(_EOCD64_LOCATOR.pack(0x07064B50, 0, cd_offset + cd_size, 1))
        self._write(_EOCD.pack(0x06054B50, 0, 0, min(n, 0xFFFF), min(n, 0xFFFF), min(cd_size, _U32),
                               min(cd_offset, _U32), 0))
        self._shutdown()

    def abandon(self) -> None:
        """After a failure: stop, without writing the directory (the archive is left unreadable)."""
        self._shutdown()

    def _shutdown(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None


# =============================================================================================
# Reading (PyTorchStreamReader)
# =============================================================================================
class _ArchiveReader:
    """Reads the records of a ``torch.save`` zip.  Every problem is a ``RuntimeError`` naming it."""

    def __init__(self, fileobj: IO[bytes], source: str, check_crc32: bool = False):
        self._f = fileobj
        self.source = source
        self.check_crc32 = check_crc32  # also check the CRC-32 of records of 1 MiB or more
        try:
            start = fileobj.tell()
            fileobj.seek(0, os.SEEK_END)
            self._end = fileobj.tell()
            fileobj.seek(start)
        except (OSError, AttributeError, ValueError) as e:
            raise RuntimeError(f"{source}: course_lib.load needs a seekable binary file ({e})") from None
        try:
            self._zip = zipfile.ZipFile(fileobj)
        except Exception as e:  # noqa: BLE001 - zipfile raises many kinds on corrupt data
            raise RuntimeError(
                f"{source} is not a readable zip archive ({type(e).__name__}: {e}). Files written by torch.save "
                "(since PyTorch 1.6) and course_lib.save are zip archives; this one is truncated, corrupted, "
                "or in another format (course_lib does not read PyTorch's legacy pre-1.6 format)") from None
        infos = self._zip.infolist()
        if not infos:
            raise RuntimeError(f"{source}: the zip archive is empty, it holds no checkpoint")
        first = infos[0].filename
        if "/" not in first:
            raise RuntimeError(f"{source}: file in archive is not in a subdirectory: {first}")
        self.prefix = first.split("/", 1)[0]
        lead = self.prefix + "/"
        self._records = {i.filename[len(lead):]: i for i in infos if i.filename.startswith(lead)}
        self._pool = None
        self._pending: list = []  # (name, expected CRC, future) of CRC checks running in the background

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
        self._zip.close()

    def finish(self) -> None:
        """Wait for the background CRC checks; raise if a record failed its check."""
        pending, self._pending = self._pending, []
        for name, expected, future in pending:
            if future.result() != expected:
                raise self._damaged(name, "fails its CRC-32 check")

    def has_record(self, name: str) -> bool:
        return name in self._records

    def check_version(self) -> None:
        """The ``version`` record must be there and name a version this reader knows (as in
        ``PyTorchStreamReader::init``)."""
        if not self.has_record("version"):
            raise RuntimeError(
                f"{self.source}: the archive has no '{self.prefix}/version' record, so it is not a file torch.save "
                "or course_lib.save wrote (torch.load refuses it too: Expected hasRecord(\"version\") to be true, "
                "but got false.)")
        raw = self.get_record("version")
        try:
            version = int(raw.strip())
        except ValueError:
            raise RuntimeError(f"{self.source}: the 'version' record holds {raw[:20]!r}, not a number") from None
        if not 1 <= version <= MAX_SUPPORTED_FILE_FORMAT_VERSION:
            raise RuntimeError(
                f"{self.source}: Attempted to read a PyTorch file with version {version}, but the supported "
                f"versions for reading are 1 to {MAX_SUPPORTED_FILE_FORMAT_VERSION}.")

    def _info(self, name: str) -> zipfile.ZipInfo:
        try:
            return self._records[name]
        except KeyError:
            raise RuntimeError(f"{self.source}: record '{self.prefix}/{name}' is missing from the archive "
                               "(the file is incomplete or was not written by torch.save)") from None

    def _damaged(self, name: str, what: str) -> RuntimeError:
        return RuntimeError(f"{self.source}: record '{self.prefix}/{name}' {what}: the file is corrupted or truncated")

    def get_record(self, name: str) -> bytes:
        info = self._info(name)
        if info.compress_size > self._end or info.file_size > max(self._end, 1) * 1032:
            raise self._damaged(name, f"claims {info.file_size} bytes in a file of {self._end}")
        try:
            return self._zip.read(info)
        except Exception as e:  # noqa: BLE001 - BadZipFile (bad CRC), EOFError, zlib.error, ...
            raise self._damaged(name, f"cannot be read ({type(e).__name__}: {e})") from None

    def data_offset(self, name: str, mapped=None) -> int:
        """Where the record's bytes start in the file (from its local header; read from ``mapped``, if given)."""
        info = self._info(name)
        if mapped is not None:
            header = mapped[info.header_offset:info.header_offset + 30]
        else:
            self._f.seek(info.header_offset)
            header = self._f.read(30)
        if len(header) != 30 or header[:4] != b"PK\x03\x04":
            raise self._damaged(name, f"has no valid zip header at byte {info.header_offset}")
        name_len, extra_len = struct.unpack("<HH", header[26:30])
        offset = info.header_offset + 30 + name_len + extra_len
        if offset + info.compress_size > self._end:
            raise self._damaged(name, f"ends at byte {offset + info.compress_size}, past the end of the file "
                                      f"({self._end} bytes)")
        return offset

    def check_size(self, name: str, nbytes: int, what: str) -> None:
        info = self._info(name)
        if info.file_size != nbytes:
            raise RuntimeError(
                f"{self.source}: storage record '{self.prefix}/{name}' holds {info.file_size} bytes, but the "
                f"pickle says it holds {what} ({nbytes} bytes): the file is corrupted or truncated")

    def read_into(self, name: str, out: np.ndarray) -> None:
        """Fill the uint8 array ``out`` with the record's bytes (one copy; CRC checked, see ``check_crc32``)."""
        info = self._info(name)
        n = out.nbytes
        if info.compress_type != zipfile.ZIP_STORED:
            self._decompress_into(name, info, memoryview(out).cast("B"))
            return
        offset = self.data_offset(name)
        self._f.seek(offset)
        view = memoryview(out).cast("B")
        got = 0
        while got < n:
            k = self._f.readinto(view[got:])
            if not k:
                break
            got += k
        if got != n:
            raise self._damaged(name, f"is cut short: {got} of {n} bytes")
        if n < _PARALLEL_CRC_BYTES:
            if zlib.crc32(view) != info.CRC:
                raise self._damaged(name, "fails its CRC-32 check")
            return
        if not self.check_crc32:
            return
        # A large record is checked in a second thread while the next one is read (both
        # release the GIL); finish() collects the verdicts before load returns.
        if self._pool is None:
            from concurrent.futures import ThreadPoolExecutor
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="course_lib-crc32")
        self._pending.append((name, info.CRC, self._pool.submit(zlib.crc32, view)))

    def _decompress_into(self, name: str, info: zipfile.ZipInfo, out: memoryview) -> None:
        """Fill ``out`` with a compressed record, a chunk at a time, checking its size and CRC-32.

        Deflated records (the only compression PyTorch's reader knows) are inflated by
        ``zlib`` straight into ``out``; other methods go through ``zipfile``.  Either way
        the load needs the storage plus about a megabyte, not the storage twice.
        """
        n = out.nbytes
        got, crc = 0, 0
        try:
            if info.compress_type == zipfile.ZIP_DEFLATED and not info.flag_bits & 0x1:  # (bit 0: encrypted)
                self._f.seek(self.data_offset(name))
                left = info.compress_size
                inflate = zlib.decompressobj(-zlib.MAX_WBITS)  # raw deflate, as in a zip
                data = b""
                while not inflate.eof:
                    if not data and left:
                        data = self._f.read(min(_INFLATE_CHUNK, left))
                        if not data:
                            break
                        left -= len(data)
                    before = len(data)
                    # at most the room left (1 byte when full: more data means the record is too long)
                    chunk = inflate.decompress(data, min(_INFLATE_CHUNK, n - got) or 1)
                    data = inflate.unconsumed_tail
                    if len(chunk) > n - got:
                        raise self._damaged(name, f"holds more than the {n} bytes its size says")
                    if not chunk and len(data) == before:
                        break  # no input left, or none it can use
                    out[got:got + len(chunk)] = chunk
                    crc = zlib.crc32(chunk, crc)
                    got += len(chunk)
                if not inflate.eof:
                    raise self._damaged(name, f"is cut short: its compressed data ends after {got} of {n} bytes")
            else:
                with self._zip.open(info) as f:  # (zipfile checks the CRC-32 when it reaches the end)
                    while got < n:
                        k = f.readinto(out[got:got + _INFLATE_CHUNK])
                        if not k:
                            break
                        got += k
                    if got == n and f.read(1):
                        raise self._damaged(name, f"holds more than the {n} bytes its size says")
                crc = info.CRC
        except RuntimeError:
            raise
        except Exception as e:  # noqa: BLE001 - zlib.error, BadZipFile (bad CRC), EOFError, ...
            raise self._damaged(name, f"cannot be read ({type(e).__name__}: {e})") from None
        if got != n:
            raise self._damaged(name, f"holds {got} bytes instead of {n}")
        if crc != info.CRC:
            raise self._damaged(name, "fails its CRC-32 check")

    def stored_offset(self, name: str, mapped) -> int:
        """For mmap: the record's offset in ``mapped``; the record must be stored uncompressed."""
        info = self._info(name)
        if info.compress_type != zipfile.ZIP_STORED:
            raise RuntimeError(
                f"{self.source}: mmap=True maps storages straight from the file, so they must be stored "
                f"uncompressed (ZIP_STORED), but record '{self.prefix}/{name}' is compressed (method "
                f"{info.compress_type}). Load it without mmap, or save it again with course_lib.save/torch.save.")
        return self.data_offset(name, mapped)
