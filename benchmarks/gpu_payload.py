"""Prepare, on this machine, everything the H200 run (benchmarks/gpu_run.py) needs offline.

    python benchmarks/gpu_payload.py [--work /work/gpuprep] [--out gpu-payload] [--piece-mb 52.9 | --pieces N] [--split-only]

The device machine reaches nothing outside itself, and each `run` call carries at most 64 MiB of
ignored paths. So this script builds one xz-compressed tarball and splits it into pieces of
`--piece-mb` MB under `gpu-payload/` (ignored by git), to be carried one piece per call:

- `site/`: vLLM 0.26.0 unpacked from its wheel (cp38-abi3, manylinux_2_28), minus what a Hopper
  run of a bf16 MoE model never loads: `vllm_flash_attn/_vllm_fa2_C.abi3.so` (FlashAttention 2;
  Hopper uses FA3), `vllm/vllm-rs` (the optional Rust frontend), `third_party/deep_gemm/include`
  and `third_party/fmha_sm100` (CUDA headers for JIT builds; Blackwell attention);
- `wheels/`: vLLM's dependencies (its METADATA `Requires-Dist`, followed transitively) that the
  device image does not already hold (DEVICE below, from the workplace's package list), minus
  SKIP (GPU kernels libraries a bf16 Qwen3-MoE serve on Hopper does not import: FlashInfer,
  TileLang, CUTLASS DSL, ...; and torch and friends, which the image has in the matching 2.11);
  plus reviewbot's own runtime deps that the image lacks (openai, unidiff, ...);
- `model/`: a Qwen3-Coder-30B-A3B-shaped config.json and Qwen's real tokenizer, from
  benchmarks/qwen_tokenizer.py (`--config qwen3-coder-30b-a3b`), served with --load-format dummy;
- `diffs/`: the two diffs the run reviews, generated deterministically from
  benchmarks/chunking.py's seeded synthetic trees: `small.diff` (~1,000 lines) and `large.diff`
  (~25k lines).

On the device: `cat gpu-payload/payload.tar.xz.* | xz -d | tar -x -C /tmp/payload`, then
`pip install --no-index --no-deps --target /tmp/payload/deps /tmp/payload/wheels/*.whl` and
`PYTHONPATH=/tmp/payload/site:/tmp/payload/deps`. benchmarks/gpu_run.py does both.
"""

from __future__ import annotations

import argparse
import email.parser
import hashlib
import json
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
VLLM = "vllm==0.26.0"
PY = "3.12"  # the device image's python3 (3.12.3, /opt/torch/.venv)
PLATFORMS = ("manylinux_2_35_x86_64", "manylinux_2_34_x86_64", "manylinux_2_31_x86_64",
             "manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_24_x86_64",
             "manylinux_2_17_x86_64", "manylinux2014_x86_64", "manylinux1_x86_64", "any")
STRIP = ("vllm/vllm_flash_attn/_vllm_fa2_C.abi3.so", "vllm/vllm-rs",
         "vllm/third_party/deep_gemm/include", "vllm/third_party/fmha_sm100")

# The 'cuda' image's Python packages, as the workplace lists them (KINDS.md, read 2026-11-17).
DEVICE = ["absl-py", "accelerate", "aiofiles", "aiohappyeyeballs", "aiohttp", "aiosignal", "annotated-doc", "anyio", "attrs", "botorch", "build", "certifi", "charset-normalizer", "chex", "click", "cloudpickle", "cmake", "colorama", "contourpy", "coverage", "cuda-bindings", "cuda-core", "cuda-pathfinder", "cuda-toolkit", "cupy-cuda13x", "cycler", "cython", "diffrax", "e3nn", "einops", "equinox", "etils", "execnet", "filelock", "flatbuffers", "flax", "fonttools", "formulaic", "frozenlist", "fsspec", "gpytorch", "grpcio", "h11", "h5py", "hf-xet", "httpcore", "httpx", "huggingface-hub", "humanize", "hypothesis", "idna", "imageio", "iniconfig", "interface-meta", "jax", "jax-cuda13-pjrt", "jax-cuda13-plugin", "jaxlib", "jaxtyping", "jinja2", "joblib", "kiwisolver", "lazy-loader", "lightning", "lightning-utilities", "linear-operator", "lineax", "llvmlite", "lxml", "markdown", "markdown-it-py", "markupsafe", "matplotlib", "mdurl", "meson", "ml-dtypes", "mpi4py", "mpmath", "msgpack", "multidict", "multipledispatch", "mypy-extensions", "nanobind", "narwhals", "networkx", "ninja", "numba", "numba-cuda", "numpy", "numpyro", "nvidia-cublas", "nvidia-cuda-cupti", "nvidia-cuda-nvrtc", "nvidia-cuda-runtime", "nvidia-cudnn-cu13", "nvidia-cufft", "nvidia-cufile", "nvidia-curand", "nvidia-cusolver", "nvidia-cusparse", "nvidia-cusparselt-cu13", "nvidia-ml-py", "nvidia-nccl-cu13", "nvidia-nvjitlink", "nvidia-nvshmem-cu13", "nvidia-nvtx", "onnx", "onnx-ir", "onnxruntime", "onnxscript", "opencv-python-headless", "optax", "opt-einsum", "opt-einsum-fx", "optimistix", "orbax-checkpoint", "packaging", "pandas", "pathspec", "patsy", "peft", "pillow", "pip", "pluggy", "portalocker", "prometheus-client", "propcache", "protobuf", "psutil", "pyarrow", "pybind11", "py-cpuinfo", "pygments", "pyparsing", "pyproject-hooks", "pyre-extensions", "pytest", "pytest-benchmark", "pytest-cov", "pytest-mock", "pytest-timeout", "pytest-xdist", "python-dateutil", "pytorch-lightning", "pyyaml", "regex", "requests", "rich", "sacrebleu", "safetensors", "scikit-build-core", "scikit-image", "scikit-learn", "scipy", "seaborn", "sentencepiece", "sentence-transformers", "setuptools", "shellingham", "simplejson", "six", "sortedcontainers", "statsmodels", "sympy", "tabulate", "tensorboard", "tensorboard-data-server", "tensorstore", "threadpoolctl", "tifffile", "tiktoken", "timm", "tokenizers", "toolz", "torch", "torchaudio", "torchdiffeq", "torch-geometric", "torchmetrics", "torchvision", "tqdm", "transformers", "treescope", "triton", "typer", "typing-extensions", "typing-inspect", "urllib3", "uvloop", "wadler-lindig", "werkzeug", "wheel", "wrapt", "xarray", "xxhash", "yarl", "zipp"]

# Declared by vLLM, not imported on this path (bf16 Qwen3-MoE on Hopper with FA3, no
# multimodal input, no FP4/FP8 kernels); FlashInfer's sampler is off (VLLM_USE_FLASHINFER_SAMPLER=0).
SKIP = ["torch", "torchaudio", "torchvision", "torchcodec", "pynvvideocodec", "flashinfer-python", "flashinfer-cubin", "tilelang", "nvidia-cutlass-dsl", "nvidia-cutlass-dsl-libs-cu13", "quack-kernels", "tokenspeed-mla", "humming-kernels", "fastsafetensors", "nvidia-cudnn-frontend", "triton"]

# vLLM pins apache-tvm-ffi==0.1.10 for FlashInfer (not used here); xgrammar 0.2.9, the structured
# output backend, imports tvm_ffi and asks for >=0.1.11
OVERRIDE = {"apache-tvm-ffi": "apache-tvm-ffi>=0.1.11"}

# reviewbot's runtime imports on the review path (pyproject), for benchmarks/gpu_run.py; and
# one module vLLM's import chain needs that no Requires-Dist names
REVIEWBOT_DEPS = [
    # not a declared dependency, but imported on the serve path: vLLM's guidance backend imports
    # transformers.MistralCommonBackend -> mistral_common -> pydantic_extra_types.language_code,
    # which raises without pycountry (the H200 run's first start died on it)
    "pycountry",
    # imported by vLLM 0.26's model loader at start-up whatever the load format, and missing
    # from the image
    "gguf",
    "openai>=1.40", "httpx>=0.27", "unidiff>=0.7.5", "jinja2>=3.1", "rich>=13", "click>=8.1",
    "tokenizers>=0.19", "tenacity>=8"]

MARKER_ENV = {"python_version": PY, "python_full_version": PY + ".3", "sys_platform": "linux",
              "platform_system": "Linux", "platform_machine": "x86_64", "os_name": "posix",
              "implementation_name": "cpython", "platform_python_implementation": "CPython"}


def run(*argv: str, **kw: object) -> subprocess.CompletedProcess:
    print("+", " ".join(argv), file=sys.stderr)
    return subprocess.run(argv, check=True, **kw)  # type: ignore[call-overload]


def pip_download(reqs: list[str], dest: Path) -> None:
    argv = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
            "--python-version", PY, "--implementation", "cp", "--abi", "cp312", "--abi", "abi3",
            "--abi", "none", "-d", str(dest), "-q"]
    for p in PLATFORMS:
        argv += ["--platform", p]
    run(*argv, *reqs)


def wheel_meta(path: Path) -> tuple[str, Version, list[str]]:
    with zipfile.ZipFile(path) as zf:
        name = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        text = zf.read(name).decode("utf-8", "replace")
    msg = email.parser.HeaderParser().parsestr(text.replace("\r\n", "\n"))
    requires = [" ".join(v.split()) for v in msg.get_all("Requires-Dist") or []]
    return canonicalize_name(msg["Name"].strip()), Version(msg["Version"].strip()), requires


def wanted(req: Requirement, extras: set[str]) -> bool:
    if req.marker is None:
        return True
    return any(req.marker.evaluate({**MARKER_ENV, "extra": e}) for e in (extras or {""}))


def resolve(roots: list[str], dest: Path) -> dict[str, Path]:
    """Download the closure of `roots` minus DEVICE and SKIP, one pip call per level."""
    dest.mkdir(parents=True, exist_ok=True)
    skip = {canonicalize_name(n) for n in DEVICE + SKIP}
    have: dict[str, tuple[Version, Path]] = {}
    for whl in dest.glob("*.whl"):
        name, version, _ = wheel_meta(whl)
        have[name] = (version, whl)
    seen: dict[str, Requirement] = {}
    level = [Requirement(r) for r in roots]
    level = [Requirement(OVERRIDE.get(canonicalize_name(r.name), str(r))) for r in level]
    done: dict[str, Path] = {}
    checks: list[tuple[str, Requirement]] = []
    while level:
        todo = []
        for req in level:
            name = canonicalize_name(req.name)
            checks.append((name, req))
            if name in skip or name in seen:
                continue
            seen[name] = req
            todo.append(req)
        missing = [str(r) for r in todo if canonicalize_name(r.name) not in have]
        if missing:
            pip_download(missing, dest)
            for whl in dest.glob("*.whl"):
                name, version, _ = wheel_meta(whl)
                have.setdefault(name, (version, whl))
        nxt = []
        for req in todo:
            name = canonicalize_name(req.name)
            version, whl = have[name]
            done[name] = whl
            for dep in wheel_meta(whl)[2]:
                d = Requirement(dep)
                if wanted(d, set(req.extras)):
                    d.marker = None
                    nxt.append(Requirement(OVERRIDE.get(canonicalize_name(d.name), str(d))))
        level = nxt
    for name, req in checks:
        if name in OVERRIDE:
            continue
        if name in done and not req.specifier.contains(have[name][0], prereleases=True):
            print(f"warning: {name} {have[name][0]} does not satisfy {req}", file=sys.stderr)
    for name, (_, whl) in have.items():  # leftovers of earlier runs
        if name not in done:
            whl.unlink()
    return done


def vllm_site(work: Path) -> Path:
    wheels = work / "vllm-wheel"
    if not list(wheels.glob("vllm-0.26.0-*.whl")):
        pip_download([VLLM], wheels)
    whl = next(wheels.glob("vllm-0.26.0-*.whl"))
    site = work / "site"
    if site.exists():
        shutil.rmtree(site)
    site.mkdir(parents=True)
    with zipfile.ZipFile(whl) as zf:
        zf.extractall(site)
    for rel in STRIP:
        p = site / rel
        if p.is_dir():
            shutil.rmtree(p)
        elif p.exists():
            p.unlink()
        else:
            raise SystemExit(f"expected {rel} in the vllm wheel; the layout changed")
    for so in site.rglob("*.so"):  # zipfile drops the mode bits
        so.chmod(0o755)
    return whl


def model_dir(work: Path) -> Path:
    out = work / "model"
    if out.exists():
        shutil.rmtree(out)
    run(sys.executable, str(ROOT / "benchmarks" / "qwen_tokenizer.py"), str(out),
        "--config", "qwen3-coder-30b-a3b")
    config = json.loads((out / "config.json").read_text())
    print("model:", {k: config.get(k) for k in (
        "architectures", "num_hidden_layers", "hidden_size", "num_attention_heads",
        "num_key_value_heads", "head_dim", "num_experts", "num_experts_per_tok",
        "moe_intermediate_size", "vocab_size", "torch_dtype", "max_position_embeddings")},
        file=sys.stderr)
    return out


def diffs(work: Path) -> dict[str, int]:
    """small.diff (~1,000 lines) and large.diff (~25k lines) from the seeded synthetic trees."""
    sys.path.insert(0, str(ROOT))
    from benchmarks.chunking import range_diff, synthetic_trees

    _, old, new = synthetic_trees()
    out = work / "diffs"
    out.mkdir(parents=True, exist_ok=True)
    paths = sorted(set(old) | set(new))
    sizes = {}
    for name, target in (("small", 1_000), ("large", 25_000)):
        # whole files, in path order, until the diff reaches the target line count
        chosen: list[str] = []
        raw = b""
        for p in paths:
            if p.endswith((".min.js", ".json")):
                continue
            chosen.append(p)
            if len(chosen) % (1 if target < 5000 else 10) == 0:
                raw = range_diff({k: old[k] for k in chosen if k in old},
                                 {k: new[k] for k in chosen if k in new})
                if raw.count(b"\n") >= target:
                    break
        (out / f"{name}.diff").write_bytes(raw)
        sizes[name] = raw.count(b"\n")
    print("diffs:", sizes, file=sys.stderr)
    return sizes


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", type=Path, default=Path("/work/gpuprep"))
    ap.add_argument("--out", type=Path, default=ROOT / "gpu-payload")
    ap.add_argument("--piece-mb", type=float, default=52.9,
                    help="piece size; a call carries at most 64 MiB with the working tree")
    ap.add_argument("--pieces", type=int, default=0, help="split evenly into N pieces instead")
    ap.add_argument("--split-only", action="store_true",
                    help="re-split an existing payload.tar.xz in --work")
    args = ap.parse_args()
    work: Path = args.work
    work.mkdir(parents=True, exist_ok=True)

    tar_path = work / "payload.tar"
    xz = tar_path.with_suffix(".tar.xz")
    if args.split_only and xz.exists():
        vllm_whl = next((work / "vllm-wheel").glob("vllm-0.26.0-*.whl"))
        deps = {w.name: w for w in (work / "wheels").glob("*.whl")}
        sizes = {d.stem: d.read_bytes().count(b"\n") for d in (work / "diffs").glob("*.diff")}
    else:
        vllm_whl = vllm_site(work)
        roots = [r for r in wheel_meta(vllm_whl)[2] if wanted(Requirement(r), set())] + REVIEWBOT_DEPS
        deps = resolve(roots, work / "wheels")
        model_dir(work)
        sizes = diffs(work)
        # small things first, the big shared objects last: the first piece alone then holds the
        # wheels, the model dir, the diffs and vLLM's Python files, so the first call can unpack
        # the truncated stream, install the wheels and check imports while the rest travels
        with tarfile.open(tar_path, "w") as tar:
            for whl in sorted(deps.values()):
                tar.add(whl, arcname=f"wheels/{whl.name}")
            for sub in ("model", "diffs"):
                tar.add(work / sub, arcname=sub)
            files = [f for f in (work / "site").rglob("*") if f.is_file()]
            files.sort(key=lambda f: (f.suffix == ".so", f.stat().st_size, str(f)))
            for f in files:
                tar.add(f, arcname=f"site/{f.relative_to(work / 'site').as_posix()}")
        run("xz", "-T0", "-6", "-f", "-k", str(tar_path))
    out: Path = args.out
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    data = xz.read_bytes()
    piece = int(args.piece_mb * 1_000_000)
    if args.pieces:
        piece = -(-len(data) // args.pieces)
    names = []
    for i in range(0, len(data), piece):
        name = f"payload.tar.xz.{i // piece:02d}"
        (out / name).write_bytes(data[i:i + piece])
        names.append(name)
    manifest = {
        "vllm_wheel": vllm_whl.name, "stripped": list(STRIP),
        "wheels": sorted(w.name for w in deps.values()),
        "diff_lines": sizes, "tar_bytes": tar_path.stat().st_size, "xz_bytes": len(data),
        "xz_sha256": hashlib.sha256(data).hexdigest(), "pieces": names,
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    print(json.dumps({k: v for k, v in manifest.items() if k != "wheels"}, indent=1))
    print(f"{len(deps)} wheels, {sum(w.stat().st_size for w in deps.values()) / 1e6:.1f} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
