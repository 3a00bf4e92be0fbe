"""Use what fine-tuning made: `python examples/tutorials/llm/adapter.py runs/sft`.

``best_adapter/`` is the best agent's peft adapter with its tokenizer: plain transformers
and peft load it over the base model. The toy SFT task continues "count from 5" with
"6 7 8 9"; the adapter should make that answer more likely than the base model alone does.
"""

import sys
from pathlib import Path

import torch
from peft import PeftModel
from transformers import AutoModelForCausalLM, AutoTokenizer

run = Path(sys.argv[1] if len(sys.argv) > 1 else "runs/sft")
base_dir = Path(__file__).with_name("tiny-llm") / "model"
base = AutoModelForCausalLM.from_pretrained(base_dir, local_files_only=True)
tokenizer = AutoTokenizer.from_pretrained(run / "best_adapter")
model = PeftModel.from_pretrained(base, run / "best_adapter").eval()

prompt = tokenizer.apply_chat_template(
    [{"role": "user", "content": "count from 5"}], tokenize=False, add_generation_prompt=True
)
start = len(tokenizer(prompt, add_special_tokens=False).input_ids)
ids = tokenizer(prompt + "6 7 8 9", add_special_tokens=False, return_tensors="pt").input_ids


def answer_logprob(model) -> float:
    """Mean log-probability of the answer's tokens after the prompt."""
    with torch.no_grad():
        logprobs = model(ids).logits[0, :-1].log_softmax(-1)
    return logprobs[start - 1 :].gather(1, ids[0, start:, None]).mean().item()


tuned = answer_logprob(model)
with model.disable_adapter():  # the base model alone
    plain = answer_logprob(model)
print(f"log p(answer): base {plain:.2f}, fine-tuned {tuned:.2f}")
