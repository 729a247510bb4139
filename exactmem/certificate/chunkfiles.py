"""Reading the chunk files of a version-2 certificate from the directory it lies in.

Outside the kernel: the kernel (``schema.parse_chunk``) verifies each chunk's SHA-256 against
the hashed certificate before it reads a field, so this reader need not be trusted for
soundness. It reads only regular files inside the certificate's folder (the kernel accepts only
plain names, no path separators): no symbolic links, FIFOs or devices, sizes checked before
reading (``schema.read_bytes`` with ``follow=False``), so a folder's writer learns nothing of
other files and cannot make ``check`` block.
"""

from __future__ import annotations

import os
from typing import Optional

from ..kernel.limits import LimitExceeded, Limits
from ..kernel.schema import MalformedCertificate, read_bytes


def chunk_reader(directory: str, limits: Optional[Limits] = None):
    """file name -> bytes of a chunk file in ``directory`` (at most max_bytes); a missing file is malformed."""
    cap = (limits or Limits()).max_bytes

    def read(name: str) -> bytes:
        data = read_bytes(os.path.join(directory, name), limits, f"chunk file {name}", follow=False)
        if len(data) > cap:
            raise MalformedCertificate(f"{name}: " + str(LimitExceeded("max_bytes", f"the chunk file is larger than "
                                                                                     f"{cap} bytes")))
        return data

    return read
