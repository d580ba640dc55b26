"""Plans, launches and supervises the vLLM backend. Shares only HTTP with `reviewbot`."""
