"""Errors of the run side that name the manifest section at fault."""

from __future__ import annotations


class TrainerError(ValueError):
    """A run that cannot be set up as specified; the message names the section."""
