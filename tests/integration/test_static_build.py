"""The packaged (static, musl) binary's allocator: mimalloc, linked in
place of musl's malloc for the whole binary (packaging/static.sh). musl's
allocator returned memory to the kernel on nearly every free and took one
lock for every thread; this checks the replacement is the one running.
Skipped for a dynamically linked binary (glibc's malloc is kept there)."""
import subprocess

import pytest

from conftest import HOOKD_BIN


def is_static(path):
    with open(path, "rb") as f:
        elf = f.read(1 << 20)
    # a static executable has no program interpreter (PT_INTERP names ld.so)
    return b"/ld-linux" not in elf and b"ld-musl" not in elf


pytestmark = pytest.mark.skipif(not is_static(HOOKD_BIN), reason="dynamically linked binary: glibc malloc")


def test_malloc_is_mimalloc():
    """mimalloc answers MIMALLOC_VERBOSE=1 from inside the binary: its
    option dump on stderr, before hookd prints its version."""
    r = subprocess.run([HOOKD_BIN, "--version"], env={"MIMALLOC_VERBOSE": "1"}, capture_output=True, text=True,
                       timeout=10)
    assert r.returncode == 0, r
    assert any(l.startswith("mimalloc: ") for l in r.stderr.splitlines()), r.stderr[:500]


def test_malloc_and_free_are_mimalloc_symbols():
    """In an unstripped binary, malloc and free are mimalloc's (the same
    addresses as mi_malloc and mi_free), not musl's."""
    nm = subprocess.run(["nm", HOOKD_BIN], capture_output=True, text=True)
    if nm.returncode != 0 or "no symbols" in nm.stderr:
        pytest.skip("stripped binary")
    addr = {}
    for line in nm.stdout.splitlines():
        f = line.split()
        if len(f) == 3 and f[2] in ("malloc", "mi_malloc", "free", "mi_free"):
            addr[f[2]] = f[0]
    assert addr.get("malloc") and addr.get("malloc") == addr.get("mi_malloc"), addr
    assert addr.get("free") and addr.get("free") == addr.get("mi_free"), addr
