"""A tiny random causal LM, its locally trained tokenizer, the toy datasets and a reward
file: everything the LLM manifests, examples and tests need, built offline in seconds.

``python -m agilerl.llm.tiny DIR`` (or ``agilerl llm tiny DIR``) writes::

    DIR/model/                 a 2-layer Llama (hidden 64, 4 heads) with random weights
                               from the seed (safetensors), and its tokenizer
    DIR/data/reasoning.jsonl   GRPO: question, answer
    DIR/data/preference.jsonl  DPO: prompt, chosen, rejected
    DIR/data/sft.jsonl         SFT: prompt, response
    DIR/reward.py              def reward(completion, answer, question) -> float in [0, 1]

The same seed writes the same bytes. The tasks are shaped so that a model this small,
starting from random weights, learns each in well under two minutes on two CPU cores:

* **One small vocabulary** (about 70 whole words, one token each, from a word-level
  tokenizer trained with ``tokenizers`` on exactly these datasets). A random model's
  next-token distribution is nearly uniform over it, so a useful word is a few percent
  likely rather than one in tens of thousands.
* **Reasoning (GRPO)**: "what colour is the sky ?" -> "blue", eight objects with eight
  colours. The reward scores the first four words of a completion: 1 for the answer,
  0.5 for another colour, 0 otherwise, averaged. A random model names some colour in
  roughly one word of ten, so most groups of eight completions hold different rewards
  (the group-relative advantage is not zero) from the first step; "name a colour" is a
  first step of partial credit, "name the right one" the rest. The test split holds
  other rows of the same eight questions, so what is learned carries over to it.
* **Preference (DPO)**: the same questions; ``chosen`` is the object's colour,
  ``rejected`` another colour. One consistent rule decides every pair, so a held-out
  pair is decided by what the training pairs taught.
* **SFT**: "count from 5" -> "6 7 8 9". The response is a deterministic function of the
  prompt, so held-out perplexity can fall from about the vocabulary size (random
  weights) to near 1.

The chat template is deliberately plain: each message is ``<role> text <eos>``, and a
generation prompt is ``<assistant>``; a model that learns to end its answer with
``<eos>`` stops generating there.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

#: The reasoning / preference task: an object and its colour.
COLOURS = {
    "sky": "blue",
    "grass": "green",
    "sun": "yellow",
    "snow": "white",
    "coal": "black",
    "blood": "red",
    "carrot": "orange",
    "plum": "purple",
}
QUESTION = "what colour is the {object} ?"
#: The SFT task: ``count from N`` is answered by the next COUNT numbers.
COUNT, LARGEST_START = 4, 25
#: The reward scores this many leading words of a completion.
REWARD_WORDS = 4
#: The system prompt of the example manifests (its words are in the vocabulary too).
SYSTEM_PROMPT = "You are a helpful assistant ."

ROWS = {"reasoning": 256, "preference": 256, "sft": 256}
SPECIAL = {"pad": "<pad>", "unk": "<unk>", "bos": "<bos>", "eos": "<eos>"}
ROLES = ("system", "user", "assistant")
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "<{{ message['role'] }}> {{ message['content'] }} <eos> "
    "{% endfor %}"
    "{% if add_generation_prompt %}<assistant> {% endif %}"
)

#: The model: small enough that a learning step takes milliseconds on a CPU core.
MODEL = {
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 4,
    "max_position_embeddings": 256,
    "tie_word_embeddings": True,
}

REWARD_FILE = '''"""Reward of the tiny reasoning task (written by agilerl.llm.tiny): the first {k} words
of a completion score 1 for the answer, 0.5 for another colour, 0 otherwise, averaged."""

COLOURS = {colours!r}
WORDS = {k}


def reward(completion, answer, question):
    words = str(completion).split()[:WORDS]
    if not words:
        return 0.0
    score = sum(1.0 if w == answer else 0.5 if w in COLOURS else 0.0 for w in words)
    return score / len(words)
'''


def toy_rows(seed: int = 0) -> dict[str, list[dict[str, str]]]:
    """The three toy datasets, by task; the same seed gives the same rows."""
    rng = random.Random(seed)
    objects = sorted(COLOURS)
    colours = sorted(set(COLOURS.values()))

    def question() -> tuple[str, str]:
        thing = rng.choice(objects)
        return QUESTION.format(object=thing), COLOURS[thing]

    reasoning: list[dict[str, str]] = [
        dict(zip(("question", "answer"), question(), strict=True)) for _ in range(ROWS["reasoning"])
    ]
    preference = []
    for _ in range(ROWS["preference"]):
        prompt, colour = question()
        wrong = rng.choice([c for c in colours if c != colour])
        preference.append({"prompt": prompt, "chosen": colour, "rejected": wrong})
    sft = []
    for _ in range(ROWS["sft"]):
        start = rng.randint(0, LARGEST_START)
        response = " ".join(str(start + i) for i in range(1, COUNT + 1))
        sft.append({"prompt": f"count from {start}", "response": response})
    return {"reasoning": reasoning, "preference": preference, "sft": sft}


def _vocabulary(rows: dict[str, list[dict[str, str]]]) -> list[str]:
    """Every word of the datasets, the system prompt and the role names, sorted. Every
    word the tasks can use is in, drawn or not, so the vocabulary is the same for every
    seed."""
    words = set(SYSTEM_PROMPT.split()) | set(ROLES) | set(COLOURS.values())
    words |= {word for thing in COLOURS for word in QUESTION.format(object=thing).split()}
    words |= {"count", "from", *(str(n) for n in range(LARGEST_START + COUNT + 1))}
    for table in rows.values():
        for row in table:
            for text in row.values():
                words.update(text.split())
    return sorted(words)


def build_tokenizer(rows: dict[str, list[dict[str, str]]]):
    """A word-level tokenizer trained with ``tokenizers`` on the toy data, wrapped as a
    transformers fast tokenizer (left padding, the chat template above)."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    role_tokens = [f"<{role}>" for role in ROLES]
    tokenizer = Tokenizer(models.WordLevel(unk_token=SPECIAL["unk"]))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    trainer = trainers.WordLevelTrainer(
        special_tokens=[*SPECIAL.values(), *role_tokens], min_frequency=1, show_progress=False
    )
    # One line per word: every word counts once, so ids follow the sorted order and do
    # not depend on how often a word happens to be drawn.
    tokenizer.train_from_iterator(_vocabulary(rows), trainer=trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        pad_token=SPECIAL["pad"],
        unk_token=SPECIAL["unk"],
        bos_token=SPECIAL["bos"],
        eos_token=SPECIAL["eos"],
        additional_special_tokens=role_tokens,
        padding_side="left",
        chat_template=CHAT_TEMPLATE,
        clean_up_tokenization_spaces=False,
        model_max_length=MODEL["max_position_embeddings"],
    )


def build_model(tokenizer, seed: int = 0):
    """A Llama causal LM of :data:`MODEL`'s size with random weights from ``seed``."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=len(tokenizer),
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        **MODEL,
    )
    generator_state = torch.random.get_rng_state()
    try:
        torch.manual_seed(seed)
        model = LlamaForCausalLM(config)
    finally:  # building assets must not move the caller's random stream
        torch.random.set_rng_state(generator_state)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model


def _write_jsonl(path: Path, rows: list[dict[str, str]]) -> None:
    path.write_text("".join(json.dumps(row, sort_keys=True) + "\n" for row in rows))


class AssetsExistError(FileExistsError):
    """``build_tiny_assets`` would replace files already in the directory."""


def build_tiny_assets(directory: str | Path, *, seed: int = 0, force: bool = False) -> Path:
    """Write the tiny model, tokenizer, toy datasets and reward file under ``directory``
    (created if absent). Files of the same names already there (a ``reward.py`` the user
    edited) are refused with :class:`AssetsExistError` unless ``force``. Returns the
    directory."""
    root = Path(directory)
    rows = toy_rows(seed)
    ours = [root / "reward.py", root / "model", *(root / "data" / f"{t}.jsonl" for t in rows)]
    taken = [str(path.relative_to(root)) for path in ours if path.exists()]
    if taken and not force:
        raise AssetsExistError(
            f"{root}: holds {', '.join(taken)} already (use --force to overwrite)"
        )
    (root / "data").mkdir(parents=True, exist_ok=True)
    for task, table in rows.items():
        _write_jsonl(root / "data" / f"{task}.jsonl", table)
    (root / "reward.py").write_text(
        REWARD_FILE.format(colours=tuple(sorted(set(COLOURS.values()))), k=REWARD_WORDS)
    )
    from transformers.utils import logging

    tokenizer = build_tokenizer(rows)
    model = build_model(tokenizer, seed)
    logging.disable_progress_bar()  # one tiny shard: a progress bar is only noise
    try:
        model.save_pretrained(root / "model")
    finally:
        logging.enable_progress_bar()
    tokenizer.save_pretrained(root / "model")
    return root
