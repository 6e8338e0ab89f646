"""Atomic run-state snapshots; `checkpoints.training` saves and resumes training code."""

from checkpoints.atomic import atomic_write_bytes, atomic_write_json, atomic_write_text

__all__ = ["atomic_write_bytes", "atomic_write_json", "atomic_write_text"]
