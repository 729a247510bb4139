"""The verify zoo's networks (issue 35, build item 5): tiny, randomly initialised models of common
``transformers`` and ``torch.nn`` architectures, each with its default configuration and attention
implementation — only the sizes shrunk — behind one call ``net(x) -> scores``.

`ZOO` maps a row name to a `Spec`: the class it instantiates, how to build it, what its input is
(token ids, image pixels or audio features) and where its scores are read (the last position, a
``[1, C]`` classifier output, or position 0). `benchmarks/verify_zoo.py` trains, exports and verifies
them; nothing here touches exactmem.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict, Optional, Tuple

import torch
import torch.nn as nn
import torch.nn.functional as F

V, n, D, H, FF, C = 16, 6, 16, 2, 32, 4  # vocabulary, sequence length, width, heads, MLP width, classes
IMG, PATCH, MEL, FRAMES = 8, 4, 8, 8  # image side and patch (3 channels); audio mel bins x frames


@dataclass
class Spec:
    cls: str  # the class instantiated (transformers.X or a module defined here)
    build: Callable[[], nn.Module]  # a module whose forward(x) returns the scores
    kind: str = "lm"  # "lm": ids -> [1, n, V], label the next token; "cls": ids -> [1, C]; "tok": ids -> [1, n, C];
    # "image": [1, 3, IMG, IMG] -> [1, C]; "audio": [1, MEL, FRAMES] -> [1, C]
    position: object = "last"  # where verify reads the scores
    module_api: Optional[dict] = None  # em.verify(module, ..., **module_api) (forward=, output=) for exporter "module"
    note: str = ""
    exporters: Tuple[str, ...] = ("torchscript", "dynamo")  # torch.onnx.export's two paths; "module": em.verify(module)

    @property
    def n_classes(self) -> int:
        return V if self.kind == "lm" else C


# ----------------------------------------------------------------------------- transformers


def _fit_ids(cfg):
    """Special token ids (bos/eos/pad/decoder start) beyond the shrunk vocabulary become 0..2: the
    vocabulary is a size, and an id outside it would not index the embedding."""
    for k in ("pad_token_id", "bos_token_id", "eos_token_id", "decoder_start_token_id", "sep_token_id",
              "cls_token_id"):
        v = getattr(cfg, k, None)
        if isinstance(v, int) and v >= V:
            setattr(cfg, k, {"pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2}.get(k, 1))
    return cfg


class HF(nn.Module):
    """A transformers model called as a user calls it, on one tensor (``model(input_ids=x)``, no other
    argument: a causal LM keeps its default ``use_cache``; ``use_cache=False`` would send the TorchScript
    exporter into transformers' packed-sequence check, ``aten::diff``); its ``logits`` out."""

    def __init__(self, model_cls: str, cfg_cls: str, arg: str = "input_ids", **sizes):
        super().__init__()
        import transformers as tr

        cfg = _fit_ids(getattr(tr, cfg_cls)(**sizes))
        self.m, self.arg = getattr(tr, model_cls)(cfg), arg

    def forward(self, x):
        return self.m(**{self.arg: x}).logits


def hf(model_cls, cfg_cls, kind="lm", arg="input_ids", **sizes):
    return Spec(f"transformers.{model_cls}", lambda: HF(model_cls, cfg_cls, arg, **sizes), kind)


LM = dict(vocab_size=V, hidden_size=D, num_hidden_layers=1, num_attention_heads=H, intermediate_size=FF,
          max_position_embeddings=16)
ENC = dict(LM, num_labels=C)

# ----------------------------------------------------------------------------- torch.nn


class TorchEncoder(nn.Module):
    """nn.TransformerEncoder (one default layer) under a causal mask: boolean (True = masked) or float -inf;
    ``is_causal``: the call's hint that the mask is causal (None: PyTorch compares it with a causal mask)."""

    def __init__(self, mask: str, is_causal: Optional[bool] = None):
        super().__init__()
        self.is_causal = is_causal
        self.emb, self.pos = nn.Embedding(V, D), nn.Parameter(torch.randn(n, D) * 0.1)
        self.enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(D, H, FF, batch_first=True), 1,
                                         enable_nested_tensor=False)
        self.out = nn.Linear(D, V)
        causal = torch.triu(torch.ones(n, n, dtype=torch.bool), 1)
        self.register_buffer("mask", causal if mask == "bool" else
                             torch.zeros(n, n).masked_fill(causal, float("-inf")))

    def forward(self, x):
        return self.out(self.enc(self.emb(x) + self.pos, mask=self.mask, is_causal=self.is_causal))


class TorchDecoder(nn.Module):
    """nn.TransformerDecoder (one default layer): target the embedded ids under a causal mask (boolean
    or float -inf), memory the same embedding."""

    def __init__(self, mask: str):
        super().__init__()
        self.emb, self.pos = nn.Embedding(V, D), nn.Parameter(torch.randn(n, D) * 0.1)
        self.dec = nn.TransformerDecoder(nn.TransformerDecoderLayer(D, H, FF, batch_first=True), 1)
        self.out = nn.Linear(D, V)
        causal = torch.triu(torch.ones(n, n, dtype=torch.bool), 1)
        self.register_buffer("mask", causal if mask == "bool" else
                             torch.zeros(n, n).masked_fill(causal, float("-inf")))

    def forward(self, x):
        h = self.emb(x) + self.pos
        return self.out(self.dec(h, h, tgt_mask=self.mask))


class NanoGPT(nn.Module):
    """A nanoGPT block (LayerNorm, causal self-attention, GELU MLP, tied head); attention by
    ``masked_fill(-inf)`` + softmax (manual) or ``F.scaled_dot_product_attention(is_causal=True)`` (sdpa)."""

    def __init__(self, sdpa: bool):
        super().__init__()
        self.sdpa = sdpa
        self.wte, self.wpe = nn.Embedding(V, D), nn.Embedding(n, D)
        self.ln1, self.ln2, self.lnf = nn.LayerNorm(D), nn.LayerNorm(D), nn.LayerNorm(D)
        self.c_attn, self.c_proj = nn.Linear(D, 3 * D), nn.Linear(D, D)
        self.fc, self.proj = nn.Linear(D, 4 * D), nn.Linear(4 * D, D)
        self.head = nn.Linear(D, V, bias=False)
        self.head.weight = self.wte.weight
        self.register_buffer("bias", torch.tril(torch.ones(n, n)).view(1, 1, n, n))

    def attn(self, x):
        B, T, _ = x.shape
        q, k, v = self.c_attn(x).split(D, dim=2)
        q, k, v = (t.view(B, T, H, D // H).transpose(1, 2) for t in (q, k, v))
        if self.sdpa:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / (D // H) ** 0.5)
            att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
            y = F.softmax(att, dim=-1) @ v
        return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, D))

    def forward(self, x):
        h = self.wte(x) + self.wpe(torch.arange(x.shape[1]))
        h = h + self.attn(self.ln1(h))
        h = h + self.proj(F.gelu(self.fc(self.ln2(h))))
        return self.head(self.lnf(h))


class AttentionOnly(nn.Module):
    """One softmax attention head over ``E[x] + P`` (embeddings by tensor indexing, no nn.Embedding),
    no MLP, no normalisation; a linear readout."""

    def __init__(self):
        super().__init__()
        self.E, self.P = nn.Parameter(torch.randn(V, D) * 0.5), nn.Parameter(torch.randn(n, D) * 0.5)
        self.Wq, self.Wk, self.Wv = (nn.Parameter(torch.randn(D, D) / D ** 0.5) for _ in range(3))
        self.Wo = nn.Parameter(torch.randn(D, V) / D ** 0.5)

    def forward(self, x):
        h = self.E[x] + self.P
        a = torch.softmax((h @ self.Wq) @ (h @ self.Wk).transpose(-2, -1) / D ** 0.5, dim=-1)
        return (a @ (h @ self.Wv) + h) @ self.Wo


class TwoInTwoOut(nn.Module):
    """nn.MultiheadAttention memorizer with ``forward(x, y) -> (scores, attention weights)``: y a shift added
    to the embedding; it answers at position 0."""

    def __init__(self):
        super().__init__()
        self.e, self.pos = nn.Embedding(V, D), nn.Parameter(torch.randn(n, D) * 0.1)
        self.att = nn.MultiheadAttention(D, H, batch_first=True)
        self.h = nn.Linear(D, V)

    def forward(self, x, y):
        z = self.e(x) + self.pos + y
        a, w = self.att(z, z, z)
        return self.h(a + z), w


SHIFT = torch.zeros(1, n, D)


class Call(nn.Module):
    """``inner(x, SHIFT)[0]``: the training view of `TwoInTwoOut` (verify gets forward= and output=)."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, x):
        return self.inner(x, SHIFT)[0]


# ----------------------------------------------------------------------------- the table

ALL = ("torchscript", "dynamo", "module")

ZOO: Dict[str, Spec] = {
    "gpt2": hf("GPT2LMHeadModel", "GPT2Config", vocab_size=V, n_positions=16, n_embd=D, n_layer=1, n_head=H),
    "gpt_neo": hf("GPTNeoForCausalLM", "GPTNeoConfig", vocab_size=V, max_position_embeddings=16, hidden_size=D,
                  num_layers=2, num_heads=H, attention_types=[[["global", "local"], 1]]),
    "gpt_neox": hf("GPTNeoXForCausalLM", "GPTNeoXConfig", **LM),
    "opt": hf("OPTForCausalLM", "OPTConfig", vocab_size=V, hidden_size=D, num_hidden_layers=1, ffn_dim=FF,
              num_attention_heads=H, max_position_embeddings=16, word_embed_proj_dim=D),
    "bloom": hf("BloomForCausalLM", "BloomConfig", vocab_size=V, hidden_size=D, n_layer=1, n_head=H),
    "llama": hf("LlamaForCausalLM", "LlamaConfig", **LM),
    "mistral": hf("MistralForCausalLM", "MistralConfig", num_key_value_heads=1, head_dim=D // H, **LM),
    "qwen2": hf("Qwen2ForCausalLM", "Qwen2Config", num_key_value_heads=H, **LM),
    "phi": hf("PhiForCausalLM", "PhiConfig", **LM),
    "gemma": hf("GemmaForCausalLM", "GemmaConfig", num_key_value_heads=H, head_dim=D // H, **LM),
    "bert": hf("BertForSequenceClassification", "BertConfig", "cls", **ENC),
    "distilbert": hf("DistilBertForSequenceClassification", "DistilBertConfig", "cls", vocab_size=V, dim=D,
                     n_layers=1, n_heads=H, hidden_dim=FF, max_position_embeddings=16, num_labels=C),
    "roberta": hf("RobertaForSequenceClassification", "RobertaConfig", "cls", **ENC),
    "albert": hf("AlbertForSequenceClassification", "AlbertConfig", "cls", embedding_size=D // 2, **ENC),
    "electra": hf("ElectraForSequenceClassification", "ElectraConfig", "cls", embedding_size=D, **ENC),
    "xlm_roberta": hf("XLMRobertaForSequenceClassification", "XLMRobertaConfig", "cls", **ENC),
    "t5_encoder": hf("T5ForTokenClassification", "T5Config", "tok", vocab_size=V, d_model=D, d_kv=D // H, d_ff=FF,
                     num_layers=1, num_heads=H, num_labels=C),
    "bart": hf("BartForConditionalGeneration", "BartConfig", vocab_size=V, d_model=D, encoder_layers=1,
               decoder_layers=1, encoder_attention_heads=H, decoder_attention_heads=H, encoder_ffn_dim=FF,
               decoder_ffn_dim=FF, max_position_embeddings=16),
    "vit": hf("ViTForImageClassification", "ViTConfig", "image", "pixel_values", hidden_size=D, num_hidden_layers=1,
              num_attention_heads=H, intermediate_size=FF, image_size=IMG, patch_size=PATCH, num_labels=C),
    "deit": hf("DeiTForImageClassification", "DeiTConfig", "image", "pixel_values", hidden_size=D,
               num_hidden_layers=1, num_attention_heads=H, intermediate_size=FF, image_size=IMG, patch_size=PATCH,
               num_labels=C),
    "whisper_encoder": hf("WhisperForAudioClassification", "WhisperConfig", "audio", "input_features", vocab_size=V,
                          num_mel_bins=MEL, d_model=D, encoder_layers=1, decoder_layers=1, encoder_attention_heads=H,
                          decoder_attention_heads=H, encoder_ffn_dim=FF, decoder_ffn_dim=FF,
                          max_source_positions=FRAMES // 2, max_target_positions=16, num_labels=C),
    "torch_encoder_bool": Spec("torch.nn.TransformerEncoder", lambda: TorchEncoder("bool"), note="boolean causal mask",
                               exporters=ALL),
    "torch_encoder_inf": Spec("torch.nn.TransformerEncoder", lambda: TorchEncoder("inf"), note="-inf causal mask",
                              exporters=ALL),
    "torch_encoder_is_causal": Spec("torch.nn.TransformerEncoder", lambda: TorchEncoder("bool", True),
                                    note="boolean causal mask, is_causal=True", exporters=ALL),
    "torch_decoder_bool": Spec("torch.nn.TransformerDecoder", lambda: TorchDecoder("bool"), note="boolean causal mask",
                               exporters=ALL),
    "torch_decoder_inf": Spec("torch.nn.TransformerDecoder", lambda: TorchDecoder("inf"), note="-inf causal mask",
                              exporters=ALL),
    "nanogpt_manual": Spec("NanoGPT", lambda: NanoGPT(False), note="masked_fill(-inf) + softmax"),
    "nanogpt_sdpa": Spec("NanoGPT", lambda: NanoGPT(True), note="F.scaled_dot_product_attention"),
    "attention_only": Spec("AttentionOnly", AttentionOnly, note="E[x] embeddings, one head, no MLP"),
    "mha_two_in_two_out": Spec("nn.MultiheadAttention", lambda: Call(TwoInTwoOut()), position=0,
                               module_api={"forward": lambda m, x: m(x, SHIFT), "output": 0},
                               note="forward(x, y) -> (out, aux), read at position 0", exporters=("module",)),
}
