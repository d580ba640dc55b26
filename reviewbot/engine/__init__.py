"""The review engine: the steps from a change to a result (fitting the change into requests,
asking the model, verifying, filtering), and the orchestrator that wires them.

The engine imports shared vocabulary (diff, findings, result, config, errors, …) and nothing
from the entry points (`commands`, `forges`, `webhook`) or the sinks (`report`).
"""
