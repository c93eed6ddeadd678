"""The fallback memory limit of the LinkBench post: a process that mlocks memory so that only
the requested amount is left for the server and the page cache.

    python -m enginebench.resources.hog BYTES
Prints "locked N" once the memory is locked, then sleeps until killed (or its parent dies).
"""
from __future__ import annotations

import ctypes
import mmap
import signal
import sys
import time


def main(size: int) -> int:
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(1, signal.SIGTERM)  # die with the parent
    region = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    address = ctypes.addressof(ctypes.c_char.from_buffer(region))
    if libc.mlock(ctypes.c_void_p(address), ctypes.c_size_t(size)) != 0:
        print(f"failed mlock errno={ctypes.get_errno()}", flush=True)
        return 1
    print(f"locked {size}", flush=True)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1])))
