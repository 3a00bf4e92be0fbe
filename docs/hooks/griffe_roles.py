"""A griffe extension for the API pages: the docstrings of agilerl are written with
Sphinx roles (:class:`~agilerl.trainer.LocalTrainer`, :mod:`agilerl.models`), which
Markdown would show as stray text; each becomes inline code of the name the role shows
(with ``~``, the last component, as Sphinx shows it)."""

import re
from typing import Any

import griffe

ROLE = re.compile(r":[a-z]+:`(~?)([^`]+)`")


def _shown(match: re.Match[str]) -> str:
    tilde, target = match.groups()
    return f"`{target.rsplit('.', 1)[-1] if tilde else target}`"


class SphinxRoles(griffe.Extension):
    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = ROLE.sub(_shown, obj.docstring.value)
