"""Writes a tiny random Llama and LoRA adapters for the real-engine tests (never committed).

Run with the engine virtualenv's Python (torch, transformers, peft):
    python tiny_model.py OUT_DIR ADAPTER [ADAPTER ...]
Writes OUT_DIR/base (config, safetensors weights, a byte-level BPE tokenizer with a Llama-3 chat
template) and OUT_DIR/lora/<adapter> (peft adapters), the layout SageMaker mounts at /opt/ml/model.

Each adapter's weights are random and scaled up, so that greedy decoding through different adapters
(and the base model) gives different text: a test can tell from the output which one served it.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from peft import LoraConfig, get_peft_model
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

SEED = 20261123
BOS, EOT, START_HEADER, END_HEADER = "<|begin_of_text|>", "<|eot_id|>", "<|start_header_id|>", "<|end_header_id|>"
# Meta's Llama-3 instruct template, without tool calling (vLLM renders it with the tokenizer's Jinja).
CHAT_TEMPLATE = (
    "{{- bos_token }}{%- for message in messages %}"
    "{{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' + message['content'] | trim + '<|eot_id|>' }}"
    "{%- endfor %}{%- if add_generation_prompt %}{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{%- endif %}"
)
CORPUS = [
    "You are MangaAssist, a shopping assistant for a manga store. Recommend series and volumes.",
    "Recommend an action manga for someone who loved Fullmetal Alchemist. Which of those has finished its run?",
    "What is the return policy for damaged volumes? Orders, shipping and returns, keep answers short and friendly.",
    "おすすめの少年漫画を教えてください。新刊の発売日はいつですか。",
    "Frieren, One Piece, Naruto, Bleach, Spy x Family, Chainsaw Man, Dandadan, Blue Lock, Jujutsu Kaisen.",
    "The quick brown fox jumps over the lazy dog 0123456789 times, then reads another volume.",
]
VOCAB_SIZE = 512
HIDDEN, LAYERS, HEADS, KV_HEADS, INTERMEDIATE = 256, 2, 4, 2, 512
MAX_POSITIONS = 4096
LORA_RANK = 8
LORA_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
LORA_SCALE = 4.0  # on top of nn.Linear's default init: each adapter moves the logits a long way


def write_tokenizer(directory: Path) -> PreTrainedTokenizerFast:
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        special_tokens=[BOS, EOT, START_HEADER, END_HEADER],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(CORPUS, trainer)
    wrapped = PreTrainedTokenizerFast(tokenizer_object=tokenizer, bos_token=BOS, eos_token=EOT, pad_token=EOT)
    wrapped.chat_template = CHAT_TEMPLATE
    wrapped.save_pretrained(directory)
    return wrapped


def write_base(directory: Path, tokenizer: PreTrainedTokenizerFast) -> LlamaForCausalLM:
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=HIDDEN,
        intermediate_size=INTERMEDIATE,
        num_hidden_layers=LAYERS,
        num_attention_heads=HEADS,
        num_key_value_heads=KV_HEADS,
        max_position_embeddings=MAX_POSITIONS,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=False,
        torch_dtype="float32",
    )
    torch.manual_seed(SEED)
    model = LlamaForCausalLM(config)
    model.save_pretrained(directory)
    return model


def write_adapter(base: LlamaForCausalLM, directory: Path, index: int) -> None:
    torch.manual_seed(SEED + 1 + index)
    config = LoraConfig(
        r=LORA_RANK,
        lora_alpha=2 * LORA_RANK,
        target_modules=LORA_TARGETS,
        init_lora_weights=False,
        task_type="CAUSAL_LM",
    )
    model = get_peft_model(base, config)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if "lora_B" in name:
                parameter.mul_(LORA_SCALE)
    model.save_pretrained(directory)
    model.unload()  # removes the LoRA layers again, so the next adapter starts from the plain base


def main(out: Path, adapters: list[str]) -> None:
    base_dir = out / "base"
    tokenizer = write_tokenizer(base_dir)
    base = write_base(base_dir, tokenizer)
    for index, name in enumerate(adapters):
        write_adapter(base, out / "lora" / name, index)


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2:])
