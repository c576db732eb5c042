"""The recipe catalog: cluster files for the field reports' deployments, each value citing its
report in `[recipe.sources]`. `sparkrig lint` passes every one of them."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from sparkrig.config.cluster import Cluster
from sparkrig.config.loading import parse_cluster


def recipe_names() -> list[str]:
    folder = resources.files(__package__)
    return sorted(
        p.name.removesuffix(".toml") for p in folder.iterdir() if p.name.endswith(".toml")
    )


def recipe_path(name: str) -> Path:
    return Path(str(resources.files(__package__).joinpath(f"{name}.toml")))


def load_recipe(name: str) -> Cluster:
    path = recipe_path(name)
    return parse_cluster(path.read_text(encoding="utf-8"), source=str(path))
