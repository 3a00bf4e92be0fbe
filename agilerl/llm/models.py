"""Loading a pretrained causal LM and its tokenizer from a local directory.

A model is named by a local path or a Hugging Face hub id (the rule:
:mod:`agilerl.llm.hub`); a hub id becomes its folder in the hub cache, fetched first
unless downloads are off. transformers then loads that local folder only
(``local_files_only=True``, ``trust_remote_code=False``: no code of the model's runs),
and a folder that does not hold a model is refused before transformers sees it, with an
error that names the manifest field, the path and what is missing.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from agilerl.llm.hub import HubError, hub_id, local_path, model_snapshot, not_found

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

MODEL_FIELD = "network.pretrained_model_name_or_path"
#: What a directory must hold, by what it is loaded as: any one of the names suffices.
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model", "vocab.json")
WEIGHT_PATTERNS = ("*.safetensors", "*.safetensors.index.json")
#: Weights saved as pickles (torch.save): unpickling runs whatever code the file names,
#: so they are refused unread, never loaded (not even with ``weights_only``).
PICKLED_WEIGHTS = ("pytorch_model*.bin", "*.pt", "*.pth", "*.ckpt")


class LLMSetupError(ValueError):
    """A model, tokenizer, dataset or reward function a manifest names cannot be used."""


def model_directory(
    name: str | Path, field: str = MODEL_FIELD, base_dir: Path | None = None
) -> Path:
    """The local folder of the model ``name``: the path (relative to ``base_dir`` when
    relative) or, for a hub id, its folder in the hub cache."""
    repo = hub_id(name, base_dir)
    if repo is None:
        return _directory(local_path(name, base_dir).resolve(), field)
    try:
        return model_snapshot(repo)
    except HubError as err:
        raise LLMSetupError(not_found(field, name, base_dir, "model", err)) from None


def _directory(path: Path, field: str) -> Path:
    if not path.exists():
        raise LLMSetupError(
            f"{field}: {path} does not exist; it must be a local model directory "
            "(a name written as a path, starting with /, ./, ../ or ~, is never a hub id)"
        )
    if not path.is_dir():
        raise LLMSetupError(f"{field}: {path} is not a directory (a local model directory)")
    return path


def _require(where: Path, field: str, what: str, patterns: tuple[str, ...]) -> None:
    if not any(any(where.glob(pattern)) for pattern in patterns):
        raise LLMSetupError(f"{field}: {where} holds no {what} (looked for {', '.join(patterns)})")


def load_tokenizer(
    path: str | Path, *, field: str = MODEL_FIELD, base_dir: Path | None = None
) -> PreTrainedTokenizerBase:
    """The tokenizer saved in ``path`` (a local folder or a hub id:
    :func:`model_directory`), padding on the left (generation continues every row at the
    same column) with a pad token (the end-of-sequence token if it has none)."""
    from transformers import AutoTokenizer

    where = model_directory(path, field, base_dir)
    _require(where, field, "tokenizer", TOKENIZER_FILES)
    try:
        tokenizer = AutoTokenizer.from_pretrained(
            where, local_files_only=True, trust_remote_code=False
        )
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise LLMSetupError(f"{field}: {where}: the tokenizer does not load: {err}") from None
    if tokenizer.pad_token is None:
        if tokenizer.eos_token is None:
            raise LLMSetupError(
                f"{field}: {where}: the tokenizer has neither a pad nor an end-of-sequence "
                "token, so batches cannot be padded"
            )
        tokenizer.pad_token = tokenizer.eos_token
    tokenizer.padding_side = "left"
    return tokenizer


def load_causal_lm(
    path: str | Path,
    *,
    field: str = MODEL_FIELD,
    attn_implementation: str | None = None,
    dtype: torch.dtype | None = None,
    base_dir: Path | None = None,
) -> PreTrainedModel:
    """The causal LM saved in ``path`` (a local folder or a hub id:
    :func:`model_directory`; a ``config.json`` and its weights), in ``dtype``
    (float32 by default), with ``attn_implementation`` when given."""
    import torch
    from safetensors import SafetensorError
    from transformers import AutoModelForCausalLM

    where = model_directory(path, field, base_dir)
    _require(where, field, "model config", ("config.json",))
    pickled = sorted(p.name for pattern in PICKLED_WEIGHTS for p in where.glob(pattern))
    if pickled and not any(any(where.glob(pattern)) for pattern in WEIGHT_PATTERNS):
        raise LLMSetupError(
            f"{field}: {where}: holds only pickled weights ({', '.join(pickled[:3])}); "
            "unpickling can run code, so only safetensors weights are read: save the model "
            "with save_pretrained(..., safe_serialization=True)"
        )
    _require(where, field, "model weights", WEIGHT_PATTERNS)
    from transformers.utils import logging

    options = {"attn_implementation": attn_implementation} if attn_implementation else {}
    logging.disable_progress_bar()  # the caller's progress bar is the one to show
    try:
        return AutoModelForCausalLM.from_pretrained(
            where,
            local_files_only=True,
            trust_remote_code=False,  # a config's auto_map naming code is refused
            use_safetensors=True,  # never a pickle beside them
            dtype=dtype or torch.float32,
            **options,
        )
    except (OSError, ValueError, KeyError, ImportError) as err:
        raise LLMSetupError(f"{field}: {where}: the model does not load: {err}") from None
    except SafetensorError as err:  # a damaged weights file: name it
        raise LLMSetupError(
            f"{field}: {_damaged_weights(where) or where}: the model does not load: damaged "
            f"safetensors file ({err})"
        ) from None
    finally:
        logging.enable_progress_bar()


def _damaged_weights(where: Path) -> Path | None:
    """The first ``*.safetensors`` file of ``where`` whose header does not read (only the
    header is read: the file is memory-mapped)."""
    from safetensors import SafetensorError, safe_open

    for file in sorted(where.glob("*.safetensors")):
        try:
            with safe_open(file, framework="pt"):
                pass
        except (SafetensorError, OSError):
            return file
    return None
