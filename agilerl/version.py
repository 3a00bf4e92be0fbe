"""``agilerl.__version__``: the installed distribution's version.

Its own module, loaded only when the version is asked for, because
:mod:`importlib.metadata` costs several times what ``import agilerl`` does.
"""

from importlib import metadata

from agilerl.resources.distribution import DISTRIBUTION

try:
    __version__ = metadata.version(DISTRIBUTION)
except metadata.PackageNotFoundError:  # run from a checkout that is not installed
    __version__ = "0+unknown"
