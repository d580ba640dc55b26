"""What a plan becomes: vllm argv checks, systemd/Helm/text, nginx and HAProxy."""
