"""CPU stand-in for the parts of pyxrt that mlir-air's KernelCache.load_and_run uses.

No NPU, no XRT: every buffer object (BO) holds two bytearrays, a host copy (what
.map() exposes) and a "device" copy (what kernels see). Only .sync() moves bytes
between them, so a host write that is skipped really leaves stale device bytes,
and a device write is invisible on the host until a FROM_DEVICE sync.

Kernels are numpy functions registered by symbol name (register_kernel). A run
calls fn(args) where args is a KernelArgs list: args[i] is a numpy view of the
DEVICE bytes of the BO bound to slot i (dtype/shape of the array the BO was
allocated for, see standin_tag), or None when no BO is bound to slot i.
args.get(i, shape, dtype) is what the toy kernels use: a view of the device
bytes reshaped to the kernel's compiled shape, or, when the slot is unbound or
its BO is too small, a fresh zero array (reads give zeros, writes are lost).

Stand-in-only API (not in real pyxrt): register_kernel, standin_tag, and the
attributes bo.standin_spec / bo.device_bytes().
"""

import enum
import itertools
import os

import numpy as np


class xclBOSyncDirection(enum.IntEnum):
    XCL_BO_SYNC_BO_TO_DEVICE = 0
    XCL_BO_SYNC_BO_FROM_DEVICE = 1


class ert_cmd_state(enum.IntEnum):
    ERT_CMD_STATE_NEW = 1
    ERT_CMD_STATE_QUEUED = 2
    ERT_CMD_STATE_RUNNING = 3
    ERT_CMD_STATE_COMPLETED = 4
    ERT_CMD_STATE_ERROR = 5
    ERT_CMD_STATE_ABORT = 6
    ERT_CMD_STATE_SUBMITTED = 7
    ERT_CMD_STATE_TIMEOUT = 8
    ERT_CMD_STATE_NORESPONSE = 9


# ---------------------------------------------------------------------------
# Kernel registry (stand-in for "the ELF contains a kernel with this symbol")
# ---------------------------------------------------------------------------

_KERNELS = {}  # symbol -> (fn, n_args)


def register_kernel(symbol, fn, n_args):
    """Make `symbol` loadable: fn(args) runs it, n_args is its declared arg count."""
    _KERNELS[symbol] = (fn, int(n_args))


def _lookup(symbol):
    if symbol not in _KERNELS:
        raise RuntimeError(f"stand-in pyxrt: no kernel registered as {symbol!r}")
    return _KERNELS[symbol]


# ---------------------------------------------------------------------------
# Device, binaries, contexts
# ---------------------------------------------------------------------------


class device:
    def __init__(self, index=0):
        self.index = index

    def register_xclbin(self, xb):
        return xb.get_uuid()


class _Binary:
    def __init__(self, path):
        path = str(path)
        if not os.path.isfile(path):
            raise RuntimeError(f"stand-in pyxrt: binary not found: {path}")
        self.path = path

    def get_uuid(self):
        return self.path


class elf(_Binary):
    pass


class xclbin(_Binary):
    def get_kernels(self):
        return []


class hw_context:
    def __init__(self, dev, binary_or_uuid):
        self.device = dev
        self.binary = binary_or_uuid


# ---------------------------------------------------------------------------
# Buffer objects
# ---------------------------------------------------------------------------

_addr = itertools.count(0x1000_0000, 0x1000)


class bo:
    # flag values as in xrt::bo::flags
    normal = 0
    cacheable = 1 << 24
    device_only = 1 << 25
    host_only = 1 << 29
    p2p = 1 << 30
    svm = 1 << 27

    def __init__(self, dev, size, flags=0, group=0):
        size = int(size)
        if size < 0:
            raise ValueError("bo size must be >= 0")
        self._device_obj = dev
        self._flags = flags
        self._group = group
        self._host = bytearray(size)  # zero-filled at allocation
        self._dev = bytearray(size)
        self._addr = next(_addr)
        self.standin_spec = None  # (dtype, shape) for kernel views; see standin_tag

    def size(self):
        return len(self._host)

    def address(self):
        return self._addr

    def map(self):
        """Writable view of the host copy (like pyxrt's bo.map())."""
        return memoryview(self._host)

    def sync(self, direction, size=None, offset=0):
        n = len(self._host) - offset if size is None else int(size)
        end = offset + n
        if offset < 0 or end > len(self._host):
            raise ValueError("sync range outside the BO")
        if direction == xclBOSyncDirection.XCL_BO_SYNC_BO_TO_DEVICE:
            self._dev[offset:end] = self._host[offset:end]
        elif direction == xclBOSyncDirection.XCL_BO_SYNC_BO_FROM_DEVICE:
            self._host[offset:end] = self._dev[offset:end]
        else:
            raise ValueError(f"bad sync direction {direction!r}")

    def write(self, data, offset=0):
        data = bytes(memoryview(data).cast("B"))
        if offset + len(data) > len(self._host):
            raise ValueError("write past the end of the BO")
        self._host[offset : offset + len(data)] = data

    def read(self, size, offset=0):
        return bytes(self._host[offset : offset + size])

    # stand-in only: a copy of the device bytes (for tests / debugging)
    def device_bytes(self):
        return bytes(self._dev)


def standin_tag(b, dtype, shape):
    """Record the dtype/shape a kernel should see for this BO (stand-in only)."""
    b.standin_spec = (np.dtype(dtype), tuple(shape))
    return b


class ext:
    """xrt.ext namespace: ELF-mode BOs and kernels."""

    @staticmethod
    def bo(dev, size):
        return bo(dev, size, bo.host_only, 0)

    @staticmethod
    def kernel(context, name):
        return kernel(context, name)


# ---------------------------------------------------------------------------
# Kernels and runs
# ---------------------------------------------------------------------------


class KernelArgs(list):
    """Per-slot numpy views of device memory (None = no BO bound)."""

    def __init__(self, views, bos):
        super().__init__(views)
        self._bos = bos

    def get(self, i, shape, dtype=np.float32):
        b = self._bos[i] if i < len(self._bos) else None
        shape = tuple(shape)
        count = int(np.prod(shape, dtype=np.int64))
        dt = np.dtype(dtype)
        if b is None or b.size() < count * dt.itemsize:
            return np.zeros(shape, dtype=dt)  # unbound / too small: zeros, writes lost
        return np.frombuffer(b._dev, dtype=dt, count=count).reshape(shape)


def _device_view(b):
    if b.standin_spec is None:
        return np.frombuffer(b._dev, dtype=np.uint8)
    dt, shape = b.standin_spec
    count = int(np.prod(shape, dtype=np.int64))
    if count * dt.itemsize > b.size():
        return np.frombuffer(b._dev, dtype=np.uint8)
    return np.frombuffer(b._dev, dtype=dt, count=count).reshape(shape)


def _execute(symbol, n_args, fn, bound):
    bos = [bound.get(i) for i in range(n_args)]
    views = [None if b is None else _device_view(b) for b in bos]
    fn(KernelArgs(views, bos))


class kernel:
    """xrt.kernel / xrt.ext.kernel. Callable in xclbin mode:
    kernel(opcode, bo_instr, n_instr, *bos) -> handle with .wait()."""

    def __init__(self, context, name):
        self.context = context
        self.name = name
        self._fn, self.n_args = _lookup(name)

    def group_id(self, i):
        return i

    def __call__(self, opcode, bo_instr, n_instr, *bos):
        if len(bos) > self.n_args:
            raise IndexError(
                f"kernel {self.name!r} has {self.n_args} args, got {len(bos)} BOs"
            )
        _execute(self.name, self.n_args, self._fn, dict(enumerate(bos)))
        return _Handle()


class _Handle:
    def wait(self, timeout_ms=0):
        return ert_cmd_state.ERT_CMD_STATE_COMPLETED

    def state(self):
        return ert_cmd_state.ERT_CMD_STATE_COMPLETED


class run:
    def __init__(self, krnl):
        self._kernel = krnl
        self._args = {}
        self._state = ert_cmd_state.ERT_CMD_STATE_NEW

    def set_arg(self, i, value):
        if not 0 <= i < self._kernel.n_args:
            raise IndexError(
                f"kernel {self._kernel.name!r} has no arg {i} "
                f"({self._kernel.n_args} declared)"
            )
        self._args[i] = value

    def start(self):
        # Synchronous: the kernel has finished when start() returns.
        _execute(self._kernel.name, self._kernel.n_args, self._kernel._fn, self._args)
        self._state = ert_cmd_state.ERT_CMD_STATE_COMPLETED

    def wait2(self, timeout_ms=0):
        return self._state

    def wait(self, timeout_ms=0):
        return self._state

    def state(self):
        return self._state
