"""The load benchmark's arithmetic: nearest-rank percentiles, and a phase's summary."""

from __future__ import annotations

from reviewbot_server.probe.bench_load import Phase, PhaseStats, percentile


def test_percentile_nearest_rank() -> None:
    assert percentile([], 50) is None
    assert percentile([3.0, 1.0, 2.0], 50) == 2.0
    assert percentile([float(i) for i in range(1, 101)], 95) == 95.0


def test_a_phase_summary_counts_errors_and_rates_over_its_wall_time() -> None:
    stats = PhaseStats(Phase("small", 1000, "diff"), ttft=[0.5, 0.1, 0.3], latency=[2.0, 4.0],
                       prompt_tokens=3000, output_tokens=600, ok=3, errors=1,
                       first_error="HTTP 503", elapsed=2.0)
    summary = stats.summary()
    assert (summary["requests"], summary["error_rate"], summary["first_error"]) == (4, 0.25,
                                                                                    "HTTP 503")
    assert (summary["ttft_p50_s"], summary["ttft_p95_s"], summary["latency_p50_s"]) == (0.3, 0.5,
                                                                                       2.0)
    assert (summary["input_tokens_per_s"], summary["reviews_per_hour"]) == (1500.0, 5400.0)
    assert PhaseStats(Phase("large", 9, "d")).summary()["error_rate"] == 0.0  # nothing ran
