"""The listener's deployment files are true: the Kubernetes manifests pass Kubernetes' own
schemas (kubernetes-validate, strict) and agree with the code they deploy (the command line
parses, every setting is one the bot reads, the probe paths are served, the selectors match,
the user is the image's); the systemd unit's command line and queue parse too."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import click
import kubernetes_validate
import pytest
import yaml

from reviewbot.webhook.app import ROUTES
from reviewbot.webhook.cli import webhook
from reviewbot.webhook.settings import resolve_settings

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "templates/deploy/kubernetes"
UNIT = ROOT / "templates/deploy/systemd/reviewbot-webhook.service"
DOCS = "".join((ROOT / "docs" / name).read_text() for name in ("webhook.md", "configuration.md"))
LIBPQ = {"PGPASSWORD"}  # read by libpq itself
SECRETS = {"REVIEWBOT_GITLAB_WEBHOOK_SECRET": "9f2c41d07be3a58e6d10"}


def _resources() -> dict[str, dict[str, Any]]:
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    return {name: yaml.safe_load((K8S / name).read_text()) for name in kustomization["resources"]}


def test_every_manifest_passes_the_kubernetes_schema_strictly() -> None:
    resources = _resources()
    assert set(resources) == {p.name for p in K8S.glob("*.yaml")} - {"kustomization.yaml"}
    for resource in resources.values():
        kubernetes_validate.validate(resource, kubernetes_validate.latest_version(), strict=True)


def test_the_validator_would_catch_a_misspelt_field() -> None:
    deployment = _resources()["deployment.yaml"]
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    container["readinessprobe"] = container.pop("readinessProbe")
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(deployment, kubernetes_validate.latest_version(), strict=True)


def _container() -> dict[str, Any]:
    return _resources()["deployment.yaml"]["spec"]["template"]["spec"]["containers"][0]  # type: ignore[no-any-return]


def test_the_deployment_runs_the_listener_as_the_code_expects() -> None:
    resources, container = _resources(), _container()
    args = container["args"]
    assert args[0] == "webhook"
    webhook.make_context("webhook", list(args[1:]))  # every flag exists and parses
    settings_keys = {**resources["configmap.yaml"]["data"],
                     **resources["secret.yaml"]["stringData"]}
    for key in settings_keys:
        assert key in LIBPQ or key == "XDG_CACHE_HOME" or key in DOCS, f"{key} is not documented"
    env = {**settings_keys, **SECRETS}
    queue_url = resolve_settings(env).queue_url
    assert queue_url is not None and queue_url.startswith("postgresql://")
    assert "@" in queue_url and ":" not in queue_url.split("//")[1].split("@")[0]  # no password
    paths = {route.path for route in ROUTES}
    for probe in ("readinessProbe", "livenessProbe"):
        path = container[probe]["httpGet"]["path"].split("?")[0]
        assert path in paths
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz?for=intake"
    assert container["resources"]["requests"]["cpu"] and container["resources"]["requests"]["memory"]


def test_the_pods_match_their_service_budget_and_image() -> None:
    resources = _resources()
    pod = resources["deployment.yaml"]["spec"]["template"]
    labels = pod["metadata"]["labels"]
    for name in ("service.yaml", "poddisruptionbudget.yaml"):
        spec = resources[name]["spec"]
        selector = spec.get("selector", {})
        selector = selector.get("matchLabels", selector)
        assert selector.items() <= labels.items(), name
    assert resources["deployment.yaml"]["spec"]["replicas"] >= 2
    containerfile = (ROOT / "Containerfile").read_text()
    user = re.search(r"^USER (\d+):(\d+)$", containerfile, re.MULTILINE)
    assert user is not None
    context = pod["spec"]["securityContext"]
    assert (str(context["runAsUser"]), str(context["runAsGroup"])) == user.groups()
    mounts = {m["mountPath"] for m in _container()["volumeMounts"]}
    cache = resources["configmap.yaml"]["data"]["XDG_CACHE_HOME"]
    assert cache in mounts and "/tmp" in mounts  # a read-only root file system elsewhere


def _service() -> list[tuple[str, str]]:
    """The [Service] section's assignments in order (a key may repeat, as systemd allows)."""
    text = UNIT.read_text().replace("\\\n", " ")
    section, found = "", []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1]
        elif section == "Service" and line and not line.startswith("#"):
            key, _, value = line.partition("=")
            found.append((key, value))
    return found


def test_the_systemd_unit_parses_and_defaults_to_the_sqlite_queue() -> None:
    assignments = _service()
    service = dict(assignments)
    command = shlex.split(service["ExecStart"])
    assert command[0].endswith("/reviewbot") and command[1] == "webhook"
    webhook.make_context("webhook", command[2:])
    env = dict(v.split("=", 1) for k, v in assignments if k == "Environment")
    assert env["REVIEWBOT_QUEUE_URL"] == "sqlite:////var/lib/reviewbot/webhook.sqlite"
    assert service["StateDirectory"] == "reviewbot" and service["CacheDirectory"] == "reviewbot"
    with pytest.raises(click.UsageError):
        webhook.make_context("webhook", ["--no-such-flag"])


def test_the_secret_manifest_ships_no_values() -> None:
    """A placeholder shipped is a placeholder deployed: every value is left to the team."""
    values = _resources()["secret.yaml"]["stringData"]
    assert values and set(values.values()) == {""}
