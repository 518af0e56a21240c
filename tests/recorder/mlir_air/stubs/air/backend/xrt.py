"""Stand-in for air.backend.xrt (tests only): the two names mlir-air's cache.py imports, over the
CPU stand-in pyxrt (tests/recorder/standin/pyxrt.py). Only what load_and_run uses: load() opens
the kernel (ELF: xrt.ext.kernel; xclbin: xrt.kernel with an instruction BO) and sets `device`,
`kernel`, `bo_instr`, `instr_v`."""
import numpy as np


class XRTCompileArtifact:
    def __init__(self, output_binary, kernel, insts, txn_header=None):
        self.output_binary = output_binary
        self.kernel = kernel
        self.insts = insts
        self.txn_header = txn_header


class XRTBackend:
    def __init__(self, **backend_kwargs):
        self.backend_kwargs = dict(backend_kwargs)
        self.device = self.kernel = self.context = self.bo_instr = self.instr_v = None

    def load(self, artifact):
        import pyxrt as xrt

        self.device = xrt.device(0)
        if artifact.output_binary.endswith(".elf"):
            self.context = xrt.hw_context(self.device, xrt.elf(artifact.output_binary))
            self.kernel = xrt.ext.kernel(self.context, artifact.kernel)
        else:
            xb = xrt.xclbin(artifact.output_binary)
            self.context = xrt.hw_context(self.device, self.device.register_xclbin(xb))
            self.kernel = xrt.kernel(self.context, artifact.kernel)
            self.instr_v = np.fromfile(artifact.insts, dtype=np.uint32)
            self.bo_instr = xrt.bo(self.device, max(len(self.instr_v) * 4, 4),
                                   xrt.bo.cacheable, self.kernel.group_id(1))
            self.bo_instr.write(self.instr_v.tobytes(), 0)
        return None

    def unload(self):
        self.device = self.kernel = self.context = self.bo_instr = self.instr_v = None
