"""The name this project installs under, and the install hints built from it.

The import package is ``agilerl`` (the documented spec API fixes it), but on the package
index ``agilerl`` is the upstream library: an install hint naming it, with any extra,
would fetch that library instead of an extra of this one. So the distribution has a name
of its own, and every hint that tells a user to install an extra is built here.
"""

#: The distribution name: ``[project] name`` in pyproject.toml.
DISTRIBUTION = "agilespec"


def install_command(extra: str) -> str:
    """The shell command that installs this project with its optional ``extra``."""
    return f"pip install '{DISTRIBUTION}[{extra}]'"
