"""A compact GPT-2 for pretraining, and its export to transformers' GPT2LMHeadModel.

The training model is the GPT-2 architecture written plainly (nanoGPT-style): one fused QKV projection,
causal `scaled_dot_product_attention` (flash attention in bf16 on a GPU), no biases, an output layer
tied to the token embedding, and a vocabulary padded to a multiple of 128 so that the largest matmul
runs on full tensor-core tiles. `to_hf` writes the same weights into a GPT2LMHeadModel (zero biases, the
padding rows dropped), so lm-eval and AutoModelForCausalLM load the result as any GPT-2; its logits are
this model's logits over the tokenizer's vocabulary.

The loss can be computed in chunks of rows (`loss_chunk`): each chunk's logits, softmax and gradients
are made and used at once, so the full (tokens x vocabulary) logits never exist. On a CPU that keeps
the work in cache; on a GPU it is the memory saver for large batches (torch.compile fuses the plain loss).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

PAD_MULTIPLE = 128


@dataclass(frozen=True)
class GPTConfig:
    vocab_size: int  # the tokenizer's; the model pads it
    seq_len: int
    n_layer: int
    n_head: int
    n_embd: int

    @property
    def padded_vocab(self) -> int:
        return math.ceil(self.vocab_size / PAD_MULTIPLE) * PAD_MULTIPLE


class CausalSelfAttention(nn.Module):
    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.n_head = cfg.n_head
        self.c_attn = nn.Linear(cfg.n_embd, 3 * cfg.n_embd, bias=False)
        self.c_proj = nn.Linear(cfg.n_embd, cfg.n_embd, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.shape
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
                   for t in self.c_attn(x).split(C, dim=2))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.c_proj(y.transpose(1, 2).reshape(B, T, C))


class MLP(nn.Module):
    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.c_fc = nn.Linear(cfg.n_embd, 4 * cfg.n_embd, bias=False)
        self.c_proj = nn.Linear(4 * cfg.n_embd, cfg.n_embd, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.c_proj(F.gelu(self.c_fc(x), approximate="tanh"))  # GPT-2's "gelu_new"


class Block(nn.Module):
    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(cfg.n_embd, bias=False)
        self.attn = CausalSelfAttention(cfg)
        self.ln_2 = nn.LayerNorm(cfg.n_embd, bias=False)
        self.mlp = MLP(cfg)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, cfg: GPTConfig, loss_chunk: int | None = None) -> None:
        super().__init__()
        self.cfg, self.loss_chunk = cfg, loss_chunk
        self.wte = nn.Embedding(cfg.padded_vocab, cfg.n_embd)  # also the output layer (tied)
        self.wpe = nn.Embedding(cfg.seq_len, cfg.n_embd)
        self.h = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layer))
        self.ln_f = nn.LayerNorm(cfg.n_embd, bias=False)
        # GPT-2's initialisation: N(0, 0.02), the residual projections scaled down by depth.
        for name, param in self.named_parameters():
            if param.dim() == 2:
                std = 0.02 / math.sqrt(2 * cfg.n_layer) if name.endswith("c_proj.weight") else 0.02
                nn.init.normal_(param, mean=0.0, std=std)

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None) -> torch.Tensor:
        """Logits over the padded vocabulary, or with `targets` the mean next-token cross-entropy."""
        T = idx.shape[1]
        x = self.wte(idx) + self.wpe(torch.arange(T, device=idx.device))
        for block in self.h:
            x = block(x)
        x = self.ln_f(x)
        if targets is None:
            return x @ self.wte.weight.t()
        hidden, flat_targets = x.reshape(-1, x.shape[-1]), targets.reshape(-1)
        if not self.loss_chunk:
            return F.cross_entropy((hidden @ self.wte.weight.t()).float(), flat_targets)
        if torch.is_grad_enabled() and (hidden.requires_grad or self.wte.weight.requires_grad):
            return ChunkedCrossEntropy.apply(hidden, self.wte.weight, flat_targets, self.loss_chunk)
        return sum(F.cross_entropy((h @ self.wte.weight.t()).float(), t, reduction="sum")
                   for h, t in zip(hidden.split(self.loss_chunk), flat_targets.split(self.loss_chunk),
                                   strict=True)) / len(flat_targets)

    def to_hf(self, eos_id: int):
        """This model as a transformers GPT2LMHeadModel (float32, on the CPU) over the tokenizer's vocabulary."""
        from transformers import GPT2Config, GPT2LMHeadModel

        cfg = self.cfg
        config = GPT2Config(vocab_size=cfg.vocab_size, n_positions=cfg.seq_len, n_embd=cfg.n_embd,
                            n_layer=cfg.n_layer, n_head=cfg.n_head, activation_function="gelu_pytorch_tanh",
                            layer_norm_epsilon=self.ln_f.eps, bos_token_id=eos_id, eos_token_id=eos_id,
                            resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, tie_word_embeddings=True)
        hf = GPT2LMHeadModel(config)
        ours = {name: tensor.detach().float().cpu() for name, tensor in self.state_dict().items()}
        theirs = {}
        for name, target in hf.state_dict().items():
            key = name.removeprefix("transformer.")
            if name == "lm_head.weight" or key == "wte.weight":
                theirs[name] = ours["wte.weight"][: cfg.vocab_size]
            elif key.endswith("bias"):  # this model has none
                theirs[name] = torch.zeros_like(target)
            elif key.endswith(("c_attn.weight", "c_proj.weight", "c_fc.weight")):
                theirs[name] = ours[key].t()  # transformers' Conv1D stores (in, out)
            else:
                theirs[name] = ours[key]
        hf.load_state_dict(theirs, strict=True)
        return hf.eval()


class ChunkedCrossEntropy(torch.autograd.Function):
    """Mean cross-entropy of (hidden @ weight.T) against targets, a chunk of rows at a time.

    The forward pass also makes the gradients, chunk by chunk, so that no (rows x vocabulary) tensor is
    kept for the backward pass; the backward pass only scales them.
    """

    @staticmethod
    def forward(ctx, hidden: torch.Tensor, weight: torch.Tensor, targets: torch.Tensor, chunk: int):
        n = hidden.shape[0]
        loss = torch.zeros((), dtype=torch.float32, device=hidden.device)
        grad_hidden = torch.empty_like(hidden)
        grad_weight = torch.zeros(weight.shape, dtype=torch.float32, device=weight.device)
        w = weight.to(hidden.dtype)
        for start in range(0, n, chunk):
            h, t = hidden[start:start + chunk], targets[start:start + chunk]
            log_probs = torch.log_softmax((h @ w.t()).float(), dim=1)  # one fused pass over the rows
            loss -= log_probs.gather(1, t[:, None]).sum()
            grad_logits = log_probs.exp_()  # d(sum of losses)/d(logits) = softmax - onehot
            grad_logits[torch.arange(len(t), device=t.device), t] -= 1.0
            grad_hidden[start:start + chunk] = grad_logits.to(h.dtype) @ w
            grad_weight.addmm_(grad_logits.t(), h.float())
        ctx.save_for_backward(grad_hidden, grad_weight.to(weight.dtype))
        ctx.rows = n
        return loss / n

    @staticmethod
    def backward(ctx, grad_output: torch.Tensor):
        grad_hidden, grad_weight = ctx.saved_tensors
        scale = grad_output / ctx.rows  # the mean's 1/n, applied once here rather than to every chunk
        return grad_hidden * scale, grad_weight * scale, None, None
