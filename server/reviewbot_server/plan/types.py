"""A plan and its instances: plain data, below the planner, topology and notes that use it."""

from __future__ import annotations

from dataclasses import dataclass

from reviewbot_server.plan.hardware import GpuSpec, GpuType
from reviewbot_server.plan.memory import Memory, WeightFormat
from reviewbot_server.plan.model import ModelSpec
from reviewbot_server.serve_config import ServeConfig


@dataclass(frozen=True)
class Instance:
    index: int
    node: int
    host: str
    port: int
    gpus: tuple[int, ...]
    serve: ServeConfig
    env: tuple[tuple[str, str], ...]

    @property
    def argv(self) -> tuple[str, ...]:
        return self.serve.vllm_serve()


@dataclass(frozen=True)
class Compared:
    """The other weights and KV cache the planner weighed for this card, with its numbers."""

    weights: str  # its weights and KV cache, e.g. "bf16/fp16 weights, auto KV cache"
    kv_tokens: int  # per replica
    reviews: int  # at once, in all
    flags: str  # what to pass to `reviewbot server plan` to choose it


@dataclass(frozen=True)
class Plan:
    gpus: GpuSpec
    nodes: int
    model: ModelSpec
    weights: WeightFormat
    tp: int
    replicas_per_node: int
    memory: Memory  # one GPU of one replica
    max_model_len: int
    max_num_seqs: int
    max_num_batched_tokens: int
    dtype: str
    tool_call_parser: str | None
    reasoning_parser: str | None
    hf_overrides: str | None
    expert_parallel: bool
    pcie_tp: bool
    instances: tuple[Instance, ...]
    warnings: tuple[str, ...]
    compared: Compared | None = None
    api_servers: int = 1  # vLLM's API server processes per instance (--api-server-count)

    @property
    def gpu(self) -> GpuType:
        return self.gpus.gpu

    @property
    def reviews_per_replica(self) -> int:
        return self.memory.reviews(self.max_model_len)

    @property
    def max_concurrent_reviews(self) -> int:
        return self.reviews_per_replica * self.replicas_per_node * self.nodes
