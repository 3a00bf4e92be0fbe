"""AgileRL: deep reinforcement learning driven by JSON-Schema-first declarative specs.

Importing the package is cheap: the torch engine loads only when something is built.
"""

__version__ = "0.1.0"
