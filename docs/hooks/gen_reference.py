"""Writes the generated reference pages into the site at build time (mkdocs-gen-files):
the spec reference from schemas/, the command line from agilerl.cli's parser and the
Python API pages. The pages exist only in the build, so they cannot go stale."""

import sys
from pathlib import Path

import mkdocs_gen_files

# mkdocs runs this file with the working directory on no import path; the generators
# live in codegen/ and read agilerl/ of this checkout (not an installed copy).
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from agilerl.models import __all__ as spec_names  # noqa: E402
from codegen.docs_api import api_pages  # noqa: E402
from codegen.docs_cli import cli_page  # noqa: E402
from codegen.docs_specs import spec_pages  # noqa: E402

PAGES = {
    **{
        f"reference/specs/{name}": text
        for name, text in spec_pages(python_names=spec_names).items()
    },
    **{f"reference/api/{name}": text for name, text in api_pages().items()},
    "reference/cli.md": cli_page(),
}

for path, text in PAGES.items():
    with mkdocs_gen_files.open(path, "w") as page:
        page.write(text)
