"""GPU catalog, `--gpus` spec parsing, and this machine's cores.

Memory is the total the CUDA runtime reports (`torch.cuda.mem_get_info`, MiB), a little
under the marketed size and under nvidia-smi's total; that total is what vLLM multiplies by
`--gpu-memory-utilization`. The H200's was measured (139.8 GiB, where nvidia-smi says
143,771 MiB).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from reviewbot_server.errors import UsageError

MIB = 1024**2
GIB = 1024**3


@dataclass(frozen=True)
class GpuType:
    name: str
    arch: str
    compute_capability: tuple[int, int]
    memory_mib: int
    bandwidth_gbs: int
    bf16: bool
    fp8: bool  # native FP8 tensor cores (Ada/Hopper): fp8 weights and KV cache at full speed
    interconnect: str  # "NVLink" or "PCIe": PCIe-only tensor parallel needs NCCL fallbacks

    @property
    def memory_bytes(self) -> int:
        return self.memory_mib * MIB

    @property
    def turing(self) -> bool:
        return self.compute_capability < (8, 0)


GPUS: dict[str, GpuType] = {
    g.name: g
    for g in (
        GpuType("T4", "Turing", (7, 5), 15_095, 320, bf16=False, fp8=False, interconnect="PCIe"),
        # NVIDIA T10: the 16 GB Turing card of GRID/vGPU servers, often resold (TU102, 150 W)
        GpuType("T10", "Turing", (7, 5), 15_095, 320, bf16=False, fp8=False, interconnect="PCIe"),
        GpuType("L4", "Ada", (8, 9), 22_700, 300, bf16=True, fp8=True, interconnect="PCIe"),
        GpuType("A10", "Ampere", (8, 6), 22_731, 600, bf16=True, fp8=False, interconnect="PCIe"),
        GpuType("A100-40", "Ampere", (8, 0), 40_442, 1_555, True, False, "NVLink"),
        GpuType("A100-80", "Ampere", (8, 0), 81_228, 2_039, True, False, "NVLink"),
        GpuType("RTX4090", "Ada", (8, 9), 24_217, 1_008, bf16=True, fp8=True, interconnect="PCIe"),
        GpuType("L40S", "Ada", (8, 9), 45_488, 864, bf16=True, fp8=True, interconnect="PCIe"),
        GpuType("H100", "Hopper", (9, 0), 81_559, 3_350, bf16=True, fp8=True, interconnect="NVLink"),
        GpuType("H200", "Hopper", (9, 0), 143_155, 4_800, True, True, "NVLink"),
    )
}

# Spellings people type, normalised (upper case, no spaces/dashes/underscores).
_ALIASES = {
    "TESLAT4": "T4",
    "TESLAT10": "T10",
    "NVIDIAT10": "T10",
    "NVIDIAT4": "T4",
    "A10G": "A10",
    "A100": "A100-80",
    "A10040": "A100-40",
    "A10040GB": "A100-40",
    "A10080": "A100-80",
    "A10080GB": "A100-80",
    "4090": "RTX4090",
    "GEFORCERTX4090": "RTX4090",
    "H100SXM": "H100",
    "H100NVL": "H100",
}

# Cards people name that vLLM cannot use, with the likely intended card.
_UNSUPPORTED = {
    "K80": "K80 (compute capability 3.7) is below vLLM's minimum of 7.0",
    "P100": "P100 (compute capability 6.0) is below vLLM's minimum of 7.0",
    "P40": "P40 (compute capability 6.1) is below vLLM's minimum of 7.0",
}

# Named profiles for the setups the docs cover (docs/deploy/).
PROFILES: dict[str, str] = {
    "4xT4": "4xT4",
    "4xT10": "4xT10",
    "2xA10": "2xA10",
    "1xRTX4090": "1xRTX4090",
    "1xH100": "1xH100",
    "1xH200": "1xH200",
    "8xH200": "8xH200",
    "t4-quad": "4xT4",
    "t10-quad": "4xT10",
    "a10-pair": "2xA10",
    "rtx4090": "1xRTX4090",
    "workstation": "1xRTX4090",
    "h100": "1xH100",
    "h200": "1xH200",
    "hgx-h200": "8xH200",
}


@dataclass(frozen=True)
class GpuSpec:
    """What one machine has: `count` cards of `gpu` (mixed specs keep the smallest card)."""

    gpu: GpuType
    count: int
    spec: str
    mixed: bool = False


def lookup_gpu(name: str) -> GpuType:
    key = re.sub(r"[\s_\-]", "", name).upper()
    key = key.removeprefix("NVIDIA")
    canonical = {re.sub(r"[\s_\-]", "", k).upper(): k for k in GPUS}
    if key in canonical:
        return GPUS[canonical[key]]
    if key in _ALIASES:
        return GPUS[_ALIASES[key]]
    if key.removeprefix("TESLA") in _UNSUPPORTED:
        raise UsageError(_UNSUPPORTED[key.removeprefix("TESLA")])
    known = ", ".join(GPUS)
    raise UsageError(f"unknown GPU type {name!r}; known: {known}")


def parse_gpus(spec: str) -> GpuSpec:
    """Parse `COUNTxTYPE[,COUNTxTYPE…]` or a named profile into one machine's GPUs."""
    text = PROFILES.get(spec.strip(), PROFILES.get(spec.strip().lower(), spec.strip()))
    groups: list[tuple[int, GpuType]] = []
    for part in text.split(","):
        match = re.fullmatch(r"\s*(\d+)\s*[xX×]\s*(.+?)\s*", part)
        if not match:
            raise UsageError(
                f"bad --gpus {spec!r}: expected COUNTxTYPE[,COUNTxTYPE…] such as 4xT4, "
                f"or a profile ({', '.join(sorted(PROFILES))})"
            )
        count = int(match.group(1))
        if not 1 <= count <= 16:
            raise UsageError(f"bad --gpus {spec!r}: between 1 and 16 GPUs per machine")
        groups.append((count, lookup_gpu(match.group(2))))
    total = sum(count for count, _ in groups)
    smallest = min((gpu for _, gpu in groups), key=lambda g: (g.memory_mib, g.compute_capability))
    mixed = len({gpu.name for _, gpu in groups}) > 1
    return GpuSpec(gpu=smallest, count=total, spec=text, mixed=mixed)


def local_cpus() -> int | None:
    """The cores this process may run on (a container's cpuset, not the host's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count()
