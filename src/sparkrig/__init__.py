"""sparkrig: serve LLMs across a few directly wired GPU boxes, and prove output and speed."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("sparkrig")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+unknown"
