"""Two process-wide settings a model process makes before it loads the model (`classifier.Classifier`).

- **The tokenizer's threads stay within the forward pass's budget.** The Rust tokenizer splits every
  ``encode_batch`` over a thread pool of its own, one thread per CPU it sees, whatever share of them the process
  was given (cpus.py). With one thread per model worker, each batch's tokenization was handed to pool threads
  that had to be scheduled on CPUs already busy with the other worker and the event loop, while the worker's
  main thread waited (2 CPUs, tiny model: about four voluntary context switches per batch in each worker; with
  ``TOKENIZERS_PARALLELISM=false`` none). A budget of one thread turns the pool off; a larger one sizes it
  (``RAYON_NUM_THREADS``, read when the pool starts, i.e. at the first parallel batch).
- **glibc keeps freed memory for the next batch.** A forward pass allocates and frees the same activations batch
  after batch. glibc returns freed memory at the top of its heap to the kernel past a threshold that it moves
  by itself, so some processes settle into giving it back and faulting it in again on every batch: in one of
  several server starts (``mini`` model, 2 CPUs), one worker took about 25 page faults per text (40-60 µs of
  system time per text, up to a fifth of its CPU) where the other took none. Fixed thresholds (`mallopt`) end
  that: memory freed stays in the heap, up to what the largest batch used.

An operator's own setting wins: ``TOKENIZERS_PARALLELISM`` or ``RAYON_NUM_THREADS`` in the environment, or any
of glibc's ``MALLOC_*_`` tunables (or another allocator preloaded: its ``mallopt`` is glibc's, and unused).
"""

import ctypes
import os
from collections.abc import MutableMapping
from typing import Any, Optional

# glibc's mallopt parameters (malloc.h).
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
# The largest mmap threshold glibc accepts on 64-bit (HEAP_MAX_SIZE / 2): blocks above it are still mapped and
# unmapped one by one, as glibc does by default from 128 KiB up.
MMAP_THRESHOLD_BYTES = 32 << 20
# Free memory at the top of the heap kept rather than trimmed: more than a batch of the base model's activations.
TRIM_THRESHOLD_BYTES = 256 << 20
MALLOC_ENVIRONMENT = ("MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TOP_PAD_", "MALLOC_MMAP_MAX_")


def limit_tokenizer_threads(threads: int, environ: MutableMapping[str, str] = os.environ) -> None:
    """Keep the tokenizer's thread pool within ``threads`` (0: leave the defaults, as PyTorch's are left)."""
    if threads <= 0 or "TOKENIZERS_PARALLELISM" in environ or "RAYON_NUM_THREADS" in environ:
        return
    if threads == 1:
        environ["TOKENIZERS_PARALLELISM"] = "false"
    else:
        environ["RAYON_NUM_THREADS"] = str(threads)


def keep_freed_memory(libc: Optional[Any] = None, environ: MutableMapping[str, str] = os.environ) -> bool:
    """Fix glibc's trim and mmap thresholds; True when set (False: not glibc, or the operator tuned malloc)."""
    if any(name in environ for name in MALLOC_ENVIRONMENT):
        return False
    if libc is None:
        try:
            libc = ctypes.CDLL(None)
        except OSError:
            return False
    if not hasattr(libc, "gnu_get_libc_version") or not hasattr(libc, "mallopt"):  # musl, macOS
        return False
    # mallopt returns 1 on success, 0 when it rejects a value.
    return bool(libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)) and bool(
        libc.mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES))
