"""Stand-in for mlir-air's shared/infra/cache.py (KernelCache), for tests.

Written from the documented behaviour of Xilinx/mlir-air e972f29
programming_examples/llms/shared/infra/cache.py ("R<n>" = a line there), not
copied from it. load_and_run keeps the real signature and contract; kernels run
on the CPU through the stand-in pyxrt module (tests/recorder/standin/pyxrt.py).

Differences from the real file (all outside load_and_run's contract):
  * compile_and_cache / manifests / toolchain ids are replaced by register(),
    which registers a numpy kernel and writes a small placeholder binary;
  * no filelock (single process), no ml_dtypes import (bf16 arrays, if any,
    are still viewed as int16 before writing, as at R680-681);
  * XRTBackend / XRTCompileArtifact are minimal local stand-ins;
  * the Profiler keeps only the methods the stand-in programs call.
"""

import contextlib
import os
import tempfile
import time
from pathlib import Path

import numpy as np


class Profiler:
    """Minimal profiler with the real method names (records only when enabled)."""

    def __init__(self, enabled=False):
        self.enabled = enabled
        self.kernel_times = {}
        self.cpu_times = {}
        self.layer_times = []
        self.kernel_breakdowns = {}

    def record_kernel(self, name, duration):
        if self.enabled:
            self.kernel_times.setdefault(name, []).append(duration)

    def record_breakdown(
        self, name, write_ms, kernel_ms, read_ms, n_written, bytes_written, n_readback
    ):
        if self.enabled:
            self.kernel_breakdowns.setdefault(name, []).append(
                dict(
                    write_ms=write_ms,
                    kernel_ms=kernel_ms,
                    read_ms=read_ms,
                    n_written=n_written,
                    bytes_written=bytes_written,
                    n_readback=n_readback,
                )
            )

    @contextlib.contextmanager
    def time_cpu(self, name):
        t0 = time.perf_counter()
        try:
            yield
        finally:
            if self.enabled:
                self.cpu_times.setdefault(name, []).append(time.perf_counter() - t0)

    def start_layer(self):
        return time.perf_counter() if self.enabled else None

    def end_layer(self, layer_idx, t0):
        if self.enabled and t0 is not None:
            self.layer_times.append((layer_idx, time.perf_counter() - t0))


class XRTCompileArtifact:
    """Same fields as air.backend.xrt.XRTCompileArtifact."""

    def __init__(self, output_binary, kernel, insts, txn_header=None):
        self.output_binary = output_binary
        self.kernel = kernel
        self.insts = insts
        self.txn_header = txn_header


class XRTBackend:
    """Just enough of air.backend.xrt.XRTBackend for load_and_run."""

    def __init__(self, **backend_kwargs):
        self.backend_kwargs = dict(backend_kwargs)
        self.device = None
        self.kernel = None
        self.context = None
        self.bo_instr = None
        self.instr_v = None

    def load(self, artifact):
        import pyxrt as xrt

        self.device = xrt.device(0)
        if artifact.output_binary.endswith(".elf"):
            self.context = xrt.hw_context(self.device, xrt.elf(artifact.output_binary))
            self.kernel = xrt.ext.kernel(self.context, artifact.kernel)
            self.bo_instr = None
            self.instr_v = None
        else:
            xb = xrt.xclbin(artifact.output_binary)
            self.context = xrt.hw_context(self.device, self.device.register_xclbin(xb))
            self.kernel = xrt.kernel(self.context, artifact.kernel)
            self.instr_v = np.fromfile(artifact.insts, dtype=np.uint32)
            self.bo_instr = xrt.bo(
                self.device,
                max(len(self.instr_v) * 4, 4),
                xrt.bo.cacheable,
                self.kernel.group_id(1),
            )
            self.bo_instr.write(self.instr_v.tobytes(), 0)

        def invoker(*args):
            """Fresh BOs, write every arg, run, read every arg back (copies)."""
            sync = xrt.xclBOSyncDirection
            bos = []
            for i, a in enumerate(args):
                s = a.size * a.itemsize
                if self.bo_instr is None:
                    b = xrt.ext.bo(self.device, s)
                else:
                    b = xrt.bo(
                        self.device, s, xrt.bo.host_only, self.kernel.group_id(i + 3)
                    )
                xrt.standin_tag(b, a.dtype, a.shape)
                np.frombuffer(b.map(), dtype=np.uint8)[:s] = np.frombuffer(
                    np.ascontiguousarray(a).tobytes(), dtype=np.uint8
                )
                b.sync(sync.XCL_BO_SYNC_BO_TO_DEVICE)
                bos.append(b)
            if self.bo_instr is None:
                r = xrt.run(self.kernel)
                for i, b in enumerate(bos):
                    r.set_arg(i, b)
                r.start()
                r.wait2()
            else:
                self.bo_instr.sync(sync.XCL_BO_SYNC_BO_TO_DEVICE)
                self.kernel(3, self.bo_instr, len(self.instr_v), *bos).wait()
            out = []
            for b, a in zip(bos, args):
                b.sync(sync.XCL_BO_SYNC_BO_FROM_DEVICE)
                out.append(np.frombuffer(bytes(b.map()), dtype=a.dtype))
            return tuple(out)

        return invoker

    def unload(self):
        self.bo_instr = None
        self.kernel = None
        self.context = None
        self.device = None


def _default_cache_dir():
    return Path(tempfile.gettempdir()) / "bo-doctor-standin-kernel-cache"


class KernelCache:
    """Stand-in KernelCache: same state and load_and_run contract as the real one."""

    def __init__(self, cache_dir=None, verbose=False, profiler=None):
        self.cache_dir = Path(cache_dir) if cache_dir else _default_cache_dir()
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        self.verbose = verbose
        self.profiler = profiler or Profiler()
        self.artifacts = {}  # name -> XRTCompileArtifact
        self._loaded = {}  # name -> (backend, invoker)
        self._cached_bos = {}  # bo_key -> list of BOs
        self._shared_bos = {}  # pool: (name, i, size) / ("__alias__", alias, size)

    def _log(self, msg):
        if self.verbose:
            print(f"  [KernelCache] {msg}")

    def register(self, name, fn, n_args, binary_format="elf"):
        """Stand-in for compile_and_cache: make kernel `name` runnable.

        fn(args) is the kernel (see pyxrt.KernelArgs); n_args is the arg count
        the "binary" declares. Writes a small placeholder binary (content is
        deterministic) so artifacts[name].output_binary is a real path.
        """
        import pyxrt as xrt

        if binary_format not in ("elf", "xclbin"):
            raise ValueError("binary_format must be 'elf' or 'xclbin'")
        xrt.register_kernel(name, fn, n_args)
        binary = self.cache_dir / f"{name}.{binary_format}"
        _write_atomic(
            binary,
            f"bo-doctor stand-in {binary_format}\nkernel={name}\nn_args={n_args}\n".encode(),
        )
        insts = None
        if binary_format == "xclbin":
            insts = self.cache_dir / f"{name}.insts.bin"
            _write_atomic(insts, np.arange(16, dtype=np.uint32).tobytes())
            insts = str(insts)
        self.artifacts[name] = XRTCompileArtifact(str(binary), name, insts)

    def load_and_run(
        self,
        name,
        backend_kwargs,
        *inputs,
        output_indices=None,
        static_input_indices=None,
        intermediate_indices=None,
        bo_key=None,
        shared_nonstatic=False,
        shared_alias=None,
    ):
        """Run kernel `name` on `inputs`, reusing BOs per bo_key (real contract).

        See the real docstring (R506-564). Returns one array per input: a
        zero-copy view of the BO's host memory for every readback index
        (output_indices, default the last), np.empty(0) for the rest.
        """
        import pyxrt as xrt

        if name not in self.artifacts:
            raise RuntimeError(
                f"Kernel '{name}' not found in cache. "
                f"Available: {list(self.artifacts.keys())}"
            )

        # R575-601: alias validation, before anything is loaded or allocated.
        if shared_alias:
            static_now = set(static_input_indices or [])
            on_static = sorted(set(shared_alias) & static_now)
            if on_static:
                raise ValueError(
                    f"shared_alias must not target static_input_indices {on_static}: "
                    f"static BOs are per-bo_key, aliases are process-wide"
                )
            out_of_range = sorted(i for i in shared_alias if not 0 <= i < len(inputs))
            if out_of_range:
                raise ValueError(
                    f"shared_alias indices {out_of_range} out of range "
                    f"for {len(inputs)} args"
                )
            bad_names = sorted(
                i for i, n in shared_alias.items() if not isinstance(n, str) or not n
            )
            if bad_names:
                raise ValueError(
                    f"shared_alias pool names must be non-empty strings; "
                    f"bad at arg indices {bad_names}"
                )

        # R610-618: one backend + invoker per kernel name.
        if name not in self._loaded:
            backend = XRTBackend(**backend_kwargs)
            invoker = backend.load(self.artifacts[name])
            self._loaded[name] = (backend, invoker)
            self._log(f"Loaded {name}")
        backend = self._loaded[name][0]

        # R622-658: BO set per key; pool lookup only on the key's first call.
        key = name if bo_key is None else bo_key
        sizes = [a.size * a.itemsize for a in inputs]
        elf_mode = self.artifacts[name].output_binary.endswith(".elf")
        static = set(static_input_indices or [])
        intermediate = set(intermediate_indices or [])
        aliases = dict(shared_alias or {})
        pooled = set(range(len(inputs))) - static if shared_nonstatic else set()
        pooled |= set(aliases)

        def new_bo(i, nbytes):
            if elf_mode:
                b = xrt.ext.bo(backend.device, nbytes)
            else:
                b = xrt.bo(
                    backend.device,
                    nbytes,
                    xrt.bo.host_only,
                    backend.kernel.group_id(i + 3),
                )
            return xrt.standin_tag(b, inputs[i].dtype, inputs[i].shape)

        first_call = key not in self._cached_bos
        if first_call:
            bos = []
            for i, nbytes in enumerate(sizes):
                if i not in pooled:
                    bos.append(new_bo(i, nbytes))
                    continue
                if i in aliases:
                    pool_key = ("__alias__", aliases[i], nbytes)
                else:
                    pool_key = (name, i, nbytes)
                b = self._shared_bos.get(pool_key)
                if b is None:
                    b = self._shared_bos[pool_key] = new_bo(i, nbytes)
                bos.append(b)
            self._cached_bos[key] = bos
            if not elf_mode and backend.bo_instr is not None:
                backend.bo_instr.sync(xrt.xclBOSyncDirection.XCL_BO_SYNC_BO_TO_DEVICE)
            self._log(f"Allocated {len(bos)} BOs for {key}")
        bos = self._cached_bos[key]

        t0 = time.time()
        # R669-689: host writes; static and intermediate slots only on first call.
        t_write = time.perf_counter()
        n_written = 0
        bytes_written = 0
        for i, a in enumerate(inputs):
            if not first_call and (i in static or i in intermediate):
                continue
            if a.dtype.name == "bfloat16":
                a = a.view(np.int16)
            src = np.frombuffer(a, dtype=np.uint8)  # non-contiguous -> ValueError
            dst = np.frombuffer(bos[i].map(), dtype=np.uint8, count=len(src))
            np.copyto(dst, src, casting="no")  # larger than the BO -> ValueError above
            bos[i].sync(xrt.xclBOSyncDirection.XCL_BO_SYNC_BO_TO_DEVICE)
            n_written += 1
            bytes_written += len(src)
        t_write_ms = (time.perf_counter() - t_write) * 1000

        # R691-702: launch with every cached BO; the run state is not checked.
        t_kernel = time.perf_counter()
        if elf_mode:
            r = xrt.run(backend.kernel)
            for i, b in enumerate(bos):
                r.set_arg(i, b)
            r.start()
            r.wait2()
        else:
            backend.kernel(3, backend.bo_instr, len(backend.instr_v), *bos).wait()
        t_kernel_ms = (time.perf_counter() - t_kernel) * 1000

        # R704-724: sync readback slots from the device, return zero-copy views.
        t_read = time.perf_counter()
        readback = (
            {len(inputs) - 1} if output_indices is None else set(output_indices)
        )
        for i in readback:
            bos[i].sync(xrt.xclBOSyncDirection.XCL_BO_SYNC_BO_FROM_DEVICE)
        results = tuple(
            np.frombuffer(bos[i].map(), dtype=a.dtype, count=a.size)
            if i in readback
            else np.empty(0, dtype=a.dtype)
            for i, a in enumerate(inputs)
        )
        t_read_ms = (time.perf_counter() - t_read) * 1000

        self.profiler.record_kernel(name, time.time() - t0)
        self.profiler.record_breakdown(
            name, t_write_ms, t_kernel_ms, t_read_ms, n_written, bytes_written,
            len(readback),
        )
        return results


def _write_atomic(path, data):
    path = Path(path)
    try:
        if path.read_bytes() == data:
            return
    except OSError:
        pass
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)
