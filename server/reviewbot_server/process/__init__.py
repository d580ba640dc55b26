"""One vLLM process: launch, readiness, and the reaper that outlives nothing."""
