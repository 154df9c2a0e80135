#!/usr/bin/env python3
"""Write a tiny, valid llama-architecture GGUF model with random weights.

    python tests/servers/tiny_model.py OUT.gguf

Needs numpy and `gguf` (both in the venv made by tests/servers/llama_venv.sh).
The file is byte-for-byte the same on every run (fixed seed, legacy
numpy RandomState whose stream numpy keeps stable, no timestamps).

What it is for: exercising an OpenAI-compatible server (llama.cpp via
llama-cpp-python) end to end -- transport, response records, token counts and
determinism -- not answer quality. The answers are random words.

Shape: 2 layers, n_embd 64, 4 heads (2 KV heads), n_ff 128, F32 weights,
a SentencePiece-style ("llama") vocabulary of ~470 tokens: <unk> <s> </s>,
the 256 byte tokens <0x00>..<0xFF>, single characters and a few whole words
(with all their prefixes, so the SPM merges reach the whole word), and a jinja
chat template in tokenizer.chat_template:

    <s>user: hello\\nassistant:

The weights are random except for one trick that keeps the output readable:
residual dimension 0 is a constant (every token embedding has it, no layer
writes to it), so after the final RMS norm it is a large positive number, and
output.weight[:, 0] puts a -12 weight on every token that is not a whole word
(control, byte, single-character and prefix tokens). So generation never
emits </s> (with max_tokens it stops on "length") nor stray bytes: the text
is a sequence of the words below, e.g. " gate model yes yes ...".
"""
import sys

import numpy as np
import gguf

SEED = 20240607
N_VOCAB_WORDS = [
    "hello", "world", "the", "a", "and", "of", "to", "is", "it", "in", "on",
    "yes", "no", "ok", "deploy", "gate", "test", "model", "green", "red",
    "blue", "one", "two", "three", "four", "five", "user", "assistant",
    "system", "go", "stop", "ship", "wait", "pass", "fail", "fast", "slow",
    "safe", "risk", "check", "run", "build", "error", "value", "true", "false",
]
CHARS = (
    "abcdefghijklmnopqrstuvwxyz"
    "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    "0123456789"
    ".,!?'\":;-()[]{}/_@#$%&*+=<>"
)
SPACE = "\u2581"  # SentencePiece's word-boundary marker

N_EMBD = 64
N_HEAD = 4
N_HEAD_KV = 2
N_FF = 128
N_LAYER = 2
N_CTX_TRAIN = 2048
HEAD_DIM = N_EMBD // N_HEAD

CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{% for message in messages %}"
    "{{ message['role'] }}: {{ message['content'] }}\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}assistant:{% endif %}"
)


def build_vocab():
    tokens, scores, types, allowed = [], [], [], []

    def add(piece, score, ttype, ok=False):
        tokens.append(piece)
        scores.append(float(score))
        types.append(int(ttype))
        allowed.append(ok)

    T = gguf.TokenType
    add("<unk>", 0.0, T.UNKNOWN)
    add("<s>", 0.0, T.CONTROL)
    add("</s>", 0.0, T.CONTROL)
    for b in range(256):
        add("<0x%02X>" % b, 0.0, T.BYTE)
    seen = set(tokens)
    # single characters and the word marker: low scores
    for ch in [SPACE] + list(CHARS):
        if ch not in seen:
            seen.add(ch)
            add(ch, -1000.0, T.NORMAL)
    # whole words with every prefix ("▁h", "▁he", ..., "▁hello"); longer pieces
    # score higher so the SPM merge walks up to the whole word.
    for word in N_VOCAB_WORDS:
        full = SPACE + word
        for end in range(2, len(full) + 1):
            piece = full[:end]
            if piece not in seen:
                seen.add(piece)
                add(piece, -100.0 + end, T.NORMAL, ok=(piece == full))
    # mark whole words that were already added as a prefix of a longer word
    for i, piece in enumerate(tokens):
        if piece.startswith(SPACE) and piece[1:] in N_VOCAB_WORDS:
            allowed[i] = True
    return tokens, scores, types, np.array(allowed)


def main(argv):
    if len(argv) != 2:
        print("usage: tiny_model.py OUT.gguf", file=sys.stderr)
        return 2
    out = argv[1]
    rng = np.random.RandomState(SEED)
    tokens, scores, types, allowed = build_vocab()
    n_vocab = len(tokens)

    def rand(*shape, scale):
        return (rng.standard_normal(size=shape) * scale).astype(np.float32)

    w = gguf.GGUFWriter(out, "llama")
    w.add_name("tiny-random-llama")
    w.add_context_length(N_CTX_TRAIN)
    w.add_embedding_length(N_EMBD)
    w.add_block_count(N_LAYER)
    w.add_feed_forward_length(N_FF)
    w.add_head_count(N_HEAD)
    w.add_head_count_kv(N_HEAD_KV)
    w.add_rope_dimension_count(HEAD_DIM)
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    w.add_vocab_size(n_vocab)

    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_unk_token_id(0)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)
    w.add_chat_template(CHAT_TEMPLATE)

    # numpy shape (rows, cols) is stored as ggml ne = [cols, rows]
    embd = rand(n_vocab, N_EMBD, scale=1.0)
    embd[:, 0] = 8.0  # constant residual dimension (see module doc)
    w.add_tensor("token_embd.weight", embd)
    for i in range(N_LAYER):
        p = "blk.%d." % i
        w.add_tensor(p + "attn_norm.weight", np.ones(N_EMBD, dtype=np.float32))
        w.add_tensor(p + "attn_q.weight", rand(N_HEAD * HEAD_DIM, N_EMBD, scale=0.125))
        w.add_tensor(p + "attn_k.weight", rand(N_HEAD_KV * HEAD_DIM, N_EMBD, scale=0.125))
        w.add_tensor(p + "attn_v.weight", rand(N_HEAD_KV * HEAD_DIM, N_EMBD, scale=0.125))
        wo = rand(N_EMBD, N_HEAD * HEAD_DIM, scale=0.125)
        wo[0, :] = 0.0  # never write residual dimension 0
        w.add_tensor(p + "attn_output.weight", wo)
        w.add_tensor(p + "ffn_norm.weight", np.ones(N_EMBD, dtype=np.float32))
        w.add_tensor(p + "ffn_gate.weight", rand(N_FF, N_EMBD, scale=0.125))
        w.add_tensor(p + "ffn_up.weight", rand(N_FF, N_EMBD, scale=0.125))
        wd = rand(N_EMBD, N_FF, scale=0.09)
        wd[0, :] = 0.0
        w.add_tensor(p + "ffn_down.weight", wd)
    w.add_tensor("output_norm.weight", np.ones(N_EMBD, dtype=np.float32))
    head = rand(n_vocab, N_EMBD, scale=0.3)
    head[:, 0] = np.where(allowed, 0.0, -12.0).astype(np.float32)
    w.add_tensor("output.weight", head)

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
