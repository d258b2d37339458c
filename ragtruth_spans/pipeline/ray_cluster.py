"""What ``predict --engine ray`` checks about its cluster before any work: that the address takes a connection,
and that the nodes can place the actors asked for (Ray would otherwise retry an address for minutes, or wait for
unplaceable actors forever, printing nothing). Each refusal is one :class:`InputError` naming its option.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ragtruth_spans.core.errors import InputError


def check_reachable(address: str, timeout: float = 5.0) -> None:
    """Raise :class:`InputError` at once when ``HOST:PORT`` or ``ray://HOST:PORT`` takes no TCP connection within
    ``timeout`` seconds (``ray.init`` would retry such an address for minutes); ``auto`` is left to Ray."""
    import socket

    target = address.removeprefix("ray://")
    if target == "auto" or ":" not in target:
        return
    host, _, port = target.rpartition(":")
    if not port.isdigit():
        raise InputError(f"expected auto, HOST:PORT or ray://HOST:PORT, got {address!r}", field="--address")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
    except OSError as exc:
        raise InputError(f"cannot reach the Ray cluster at {address!r}: {exc.strerror or exc}",
                         field="--address") from None


def amount(value: float, unit: str) -> str:
    """``value`` of ``unit``, in the plural unless it is one.

    >>> amount(1, "GPU"), amount(0.5, "CPU")
    ('1 GPU', '0.5 CPUs')
    """
    return f"{value:g} {unit}{'' if value == 1 else 's'}"


def _holds(node: Mapping[str, float], cpus: float, gpus: float) -> float:
    """How many actors of ``cpus`` CPUs and ``gpus`` GPUs one node holds at once (inf: they reserve nothing)."""
    fits = [node.get("CPU", 0.0) / cpus] if cpus else []
    if gpus:
        fits.append(node.get("GPU", 0.0) / gpus)
    return min(fits, default=float("inf"))


def placement_capacity(nodes: list[Mapping[str, float]], *, cpus: float, gpus: float) -> int | None:
    """How many actors of ``cpus`` CPUs and ``gpus`` GPUs the ``nodes`` (each node's total resources, as Ray
    reports them) hold at once; None when the actors reserve nothing (no limit)."""
    if not cpus and not gpus:
        return None
    return sum(int(_holds(node, cpus, gpus) + 1e-9) for node in nodes)


def check_placement(nodes: list[Mapping[str, float]], *, cpus: float, gpus: float, workers: int | None) -> None:
    """Refuse, before any work, actors that the cluster cannot place: one :class:`InputError` naming the option
    (a worker that needs GPUs on a cluster without any, more CPUs or GPUs than any one node has, or more workers
    than the nodes hold at once). Ray would otherwise wait for them forever, printing nothing."""
    if not nodes:
        raise InputError("the cluster has no live node", field="--address")
    most_cpus = max(node.get("CPU", 0.0) for node in nodes)
    most_gpus = max(node.get("GPU", 0.0) for node in nodes)
    if gpus and most_gpus == 0:
        raise InputError(f"{amount(gpus, 'GPU')} per worker, but the cluster has no GPU: no worker could ever start; "
                         "pass --gpus-per-worker 0 (or run on a cluster with GPUs)", field="--gpus-per-worker")
    if gpus > most_gpus:
        raise InputError(f"no node has {amount(gpus, 'GPU')} (the most on one node: {most_gpus:g}): no worker could "
                         "ever start; ask for fewer", field="--gpus-per-worker")
    if cpus > most_cpus:
        raise InputError(f"no node has {amount(cpus, 'CPU')} (the most on one node: {most_cpus:g}): no worker could "
                         "ever start; ask for fewer", field="--cpus-per-worker")
    if not any(_holds(node, cpus, gpus) >= 1 - 1e-9 for node in nodes):
        raise InputError(f"no node has {amount(cpus, 'CPU')} and {amount(gpus, 'GPU')} together: no worker could "
                         "ever start; ask for fewer CPUs per worker", field="--cpus-per-worker")
    capacity = placement_capacity(nodes, cpus=cpus, gpus=gpus)
    if workers is not None and capacity is not None and workers > capacity:
        each = amount(cpus, "CPU") + (f" and {amount(gpus, 'GPU')}" if gpus else "")
        raise InputError(f"the cluster holds at most {capacity} worker(s) of {each} at once, not {workers}: the "
                         "others would never start; ask for fewer", field="--workers")


def cluster_nodes(ray: Any) -> list[dict[str, float]]:
    """The total resources of each live node of the connected cluster."""
    try:
        return [dict(node.get("Resources") or {}) for node in ray.nodes() if node.get("Alive")]
    except Exception:  # pragma: no cover - a client without the node table: the cluster as one node
        return [dict(ray.cluster_resources())]
