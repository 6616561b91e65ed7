"""GrammarLogitsProcessor: model.generate with a tiny random Llama and the Llama-3 tokenizer stays in the grammar."""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never reach the hub: the model is built from a config
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import lark  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from helpers import CALC_TOKENS, grammar_text, tokenizer_path  # noqa: E402

import greatgramma as gg  # noqa: E402

torch = pytest.importorskip("torch", reason="torch not installed (pip install '.[torch]')")
transformers = pytest.importorskip("transformers", reason="transformers not installed (pip install '.[transformers]')")

from greatgramma.integrations.transformers import GrammarLogitsProcessor  # noqa: E402

LLAMA3 = tokenizer_path("llama3")

GRAMMARS = {
    "json": grammar_text("json"),
    "numbers": 'start: "[" [NUMBER ("," NUMBER)*] "]"\nNUMBER: /[0-9]+/\n%ignore " "\n',
    "assign": 'start: stmt+\nstmt: NAME "=" NUMBER ";"\nNAME: /[a-z]+/\nNUMBER: /[0-9]+/\n%ignore /[ \\n]+/\n',
}

needs_llama3 = pytest.mark.skipif(not LLAMA3.is_file(), reason=f"Llama-3 tokenizer not found at {LLAMA3}")


# ------------------------------------------------------------------ with a model


@pytest.fixture(scope="module")
def llama3(vocabularies) -> gg.Vocabulary:
    return vocabularies("llama3")


@pytest.fixture(scope="module")
def model(llama3: gg.Vocabulary):
    torch.manual_seed(0)
    eos = llama3.eos_token_ids[0]
    config = transformers.LlamaConfig(
        vocab_size=llama3.vocab_size,
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
        bos_token_id=128000,
        eos_token_id=eos,
        pad_token_id=eos,
    )
    return transformers.LlamaForCausalLM(config).eval()


class Bias(transformers.LogitsProcessor):
    """A fixed logit bias standing in for a trained model's taste: fewer blanks, more closers and EOS.

    Applied before the grammar; it only shapes which allowed token wins, so that outputs end
    within a few dozen tokens and the EOS path is exercised.
    """

    def __init__(self, vocab: gg.Vocabulary) -> None:
        tb = vocab.token_bytes
        bias = torch.zeros(vocab.vocab_size)
        bias[[i for i, b in enumerate(tb) if b and not b.strip()]] = -4.0
        for chars, value in ((b"]};", 4.0), (b'":,=', 3.0), (b"0123456789ab", 1.5)):
            bias[[tb.index(bytes([c])) for c in chars]] = value
        bias[list(vocab.eos_token_ids)] = 6.0
        self.bias = bias

    def __call__(self, input_ids, scores):
        return scores + self.bias


def check_outputs(compiled: gg.CompiledGrammar, grammar: str, rows: list[list[int]]) -> int:
    """Every row is a viable prefix; every row that ended with EOS parses with Lark. Returns how many ended."""
    vocab = compiled.vocab
    eos = set(vocab.eos_token_ids)
    parser = lark.Lark(grammar, parser="lalr", lexer="basic")
    masker = gg.Masker(compiled)
    ended = 0
    for row in rows:
        cut = next((k for k, t in enumerate(row) if t in eos), None)
        body = row if cut is None else row[:cut]
        state = masker.initial_state()
        for tok in body:
            state = masker.advance(state, tok)  # raises TokenRejectedError if the prefix is not viable
        if cut is not None:
            ended += 1
            assert masker.is_complete(state)
            text = b"".join(vocab.token_bytes[t] for t in body).decode("utf-8")
            parser.parse(text)
    return ended


@needs_llama3
@pytest.mark.parametrize("name", list(GRAMMARS))
def test_generate_stays_in_grammar(name: str, llama3: gg.Vocabulary, model) -> None:
    grammar = GRAMMARS[name]
    compiled = gg.compile(gg.Grammar(grammar), llama3)
    tb = llama3.token_bytes
    prompt = torch.tensor([[128000, tb.index(b"x")], [128000, tb.index(b"y")]])
    eos = list(llama3.eos_token_ids)
    ended = 0
    for sample in (False, True):
        torch.manual_seed(1)
        proc = GrammarLogitsProcessor(compiled, batch_size=2)
        out = model.generate(
            prompt,
            attention_mask=torch.ones_like(prompt),
            max_new_tokens=40,
            do_sample=sample,
            logits_processor=transformers.LogitsProcessorList([Bias(llama3), proc]),
            eos_token_id=eos,
            pad_token_id=eos[0],
        )
        rows = out[:, prompt.shape[1] :].tolist()
        ended += check_outputs(compiled, grammar, rows)
        for m, row in zip(proc.matchers, rows):  # the processor followed the same tokens (all but the last)
            fed = row[:-1]
            cut = next((k for k, t in enumerate(fed) if t in eos), None)
            replay = gg.Matcher(compiled)
            assert replay.accept_tokens(fed if cut is None else fed[: cut + 1]) == (len(fed) if cut is None else cut + 1)
            assert m.state == replay.state
    assert ended >= 1, "no output ended with EOS: the EOS path was not exercised"


@needs_llama3
def test_processor_reused_across_generate_calls(llama3: gg.Vocabulary, model) -> None:
    grammar = GRAMMARS["numbers"]
    compiled = gg.compile(gg.Grammar(grammar), llama3)
    proc = GrammarLogitsProcessor(compiled)
    eos = list(llama3.eos_token_ids)
    for prompt_len in (3, 3, 2):
        prompt = torch.full((1, prompt_len), 128000)
        out = model.generate(
            prompt,
            max_new_tokens=12,
            do_sample=True,
            logits_processor=transformers.LogitsProcessorList([proc]),
            eos_token_id=eos,
            pad_token_id=eos[0],
        )
        check_outputs(compiled, grammar, out[:, prompt_len:].tolist())


# ------------------------------------------------------------------ without a model


def test_processor_steps(calc_compiled) -> None:
    """Drive the processor by hand: masks per row, finished rows allow only EOS and pad, errors, restart."""
    v = calc_compiled.vocab.vocab_size
    one, plus, lparen = (CALC_TOKENS.index(p) for p in (b"1", b"+", b"("))
    pad = 3
    proc = GrammarLogitsProcessor(calc_compiled, pad_token_id=pad)
    ids = torch.tensor([[7, 7], [7, 7]])
    m = gg.Matcher(calc_compiled)

    def finite(scores) -> list[set[int]]:
        return [set(torch.nonzero(torch.isfinite(r)).flatten().tolist()) for r in scores]

    scores = proc(ids, torch.zeros(2, v + 5))
    start = {t for t in range(v) if m.validate_tokens([t]) == 1}
    assert finite(scores) == [start, start]
    ids = torch.cat([ids, torch.tensor([[one], [lparen]])], 1)
    scores = proc(ids, torch.zeros(2, v + 5))
    assert 0 in finite(scores)[0] and 0 not in finite(scores)[1]  # "1" is complete, "(" is not
    ids = torch.cat([ids, torch.tensor([[0], [one]])], 1)  # row 0 emits EOS
    scores = proc(ids, torch.zeros(2, v + 5))
    assert finite(scores)[0] == {0, pad}
    assert proc.matchers[0].is_terminated() and not proc.matchers[1].is_terminated()
    ids = torch.cat([ids, torch.tensor([[pad], [plus]])], 1)  # transformers pads the finished row
    scores = proc(ids, torch.zeros(2, v + 5))
    assert finite(scores)[0] == {0, pad} and 0 not in finite(scores)[1]
    bad = torch.cat([ids, torch.tensor([[pad], [plus]])], 1)  # "1++" is not allowed
    with pytest.raises(gg.GreatGrammaError, match="row 1: generated token"):
        proc(bad, torch.zeros(2, v + 5))
    proc(torch.tensor([[7, 7]]), torch.zeros(1, v))  # another batch size: a new generation
    assert len(proc.matchers) == 1 and proc.matchers[0].num_rollback_tokens == 0
    with pytest.raises(ValueError, match="batch_size=3"):
        GrammarLogitsProcessor(calc_compiled, batch_size=3)(ids, torch.zeros(2, v))


def test_processor_masks_bfloat16_scores(calc_compiled) -> None:
    v = calc_compiled.vocab.vocab_size
    proc = GrammarLogitsProcessor(calc_compiled)
    scores = proc(torch.tensor([[1]]), torch.zeros(1, v, dtype=torch.bfloat16))
    words = gg.Matcher(calc_compiled).next_token_mask()
    assert np.array_equal(torch.isfinite(scores[0]).numpy(), gg.bitmask_to_bool(words, v))


@needs_llama3
def test_gg_generate_cli(tmp_path: Path, model, llama3: gg.Vocabulary) -> None:
    """`gg generate` end to end with a saved tiny random Llama and the Llama-3 tokenizer files."""
    import gzip
    import shutil
    import subprocess
    import sys

    model.save_pretrained(tmp_path)
    (tmp_path / "tokenizer.json").write_bytes(gzip.decompress(LLAMA3.read_bytes()))
    shutil.copy(LLAMA3.parent / "tokenizer_config.json", tmp_path / "tokenizer_config.json")
    grammar = tmp_path / "numbers.lark"
    grammar.write_text(GRAMMARS["numbers"])
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    r = subprocess.run(
        [sys.executable, "-m", "greatgramma.cli", "generate", str(grammar), "--model", str(tmp_path),
         "--prompt", "Numbers:", "--max-new-tokens", "12"],
        capture_output=True, text=True, timeout=300, env=env,
    )
    assert r.returncode == 0, r.stderr
    text = r.stdout.rstrip("\n")
    masker = gg.Masker(gg.compile(gg.Grammar(GRAMMARS["numbers"]), llama3))
    state = masker.initial_state()
    from greatgramma.tokenize import encode_exact, load_tokenizer

    for tok in encode_exact(load_tokenizer(LLAMA3), text, llama3.token_bytes):
        state = masker.advance(state, tok)  # the output is a viable prefix (raises otherwise)


class CountingProcessor(GrammarLogitsProcessor):
    """Records, per call, whether the masks had been prefetched."""

    def __call__(self, input_ids, scores):
        self.prefetched = getattr(self, "prefetched", []) + [self._ahead is not None]
        return super().__call__(input_ids, scores)


@needs_llama3
def test_prefetched_masks_give_the_same_generation(llama3: gg.Vocabulary, model) -> None:
    """With the prefetcher as a stopping criterion, masks are computed before the forward pass,
    and generation is token for token what it is without it."""
    grammar = GRAMMARS["json"]
    compiled = gg.compile(gg.Grammar(grammar), llama3)
    prompt = torch.tensor([[128000, 128000]])
    eos = list(llama3.eos_token_ids)
    outs = []
    for prefetch in (False, True):
        torch.manual_seed(3)
        proc = CountingProcessor(compiled)
        stopping = transformers.StoppingCriteriaList([proc.prefetcher()] if prefetch else [])
        out = model.generate(
            prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=25, do_sample=True,
            logits_processor=transformers.LogitsProcessorList([Bias(llama3), proc]), stopping_criteria=stopping,
            eos_token_id=eos, pad_token_id=eos[0],
        )
        outs.append(out.tolist())
        assert len(proc.prefetched) > 1
        assert sum(proc.prefetched) == (len(proc.prefetched) - 1 if prefetch else 0)  # all calls after the first
    assert outs[0] == outs[1]
    check_outputs(compiled, grammar, [row[prompt.shape[1] :] for row in outs[1]])


def test_prefetch_by_hand(calc_compiled) -> None:
    v = calc_compiled.vocab.vocab_size
    one, plus = (CALC_TOKENS.index(p) for p in (b"1", b"+"))
    proc, plain = GrammarLogitsProcessor(calc_compiled), GrammarLogitsProcessor(calc_compiled)
    stop = proc.prefetcher()
    ids = torch.tensor([[7]])
    for tok in (one, plus, one):
        assert torch.equal(proc(ids, torch.zeros(1, v)), plain(ids, torch.zeros(1, v)))
        ids = torch.cat([ids, torch.tensor([[tok]])], 1)
        assert not stop(ids, torch.zeros(1, v)).any()  # never stops generation
        assert proc._ahead is not None and proc._ahead[0] == ids.shape[1]
    assert torch.equal(proc(ids, torch.zeros(1, v)), plain(ids, torch.zeros(1, v)))
    assert proc._ahead is None and proc.matchers[0].is_complete()


@needs_llama3
def test_mask_workers_give_the_same_generation(llama3: gg.Vocabulary, model) -> None:
    """Masks computed by worker processes (with the prefetcher) generate token for token what the caller's do."""
    from greatgramma.serving import MaskWorkers

    grammar = GRAMMARS["json"]
    prompt = torch.tensor([[128000, 128000]] * 4)
    eos = list(llama3.eos_token_ids)
    outs = []
    with MaskWorkers(1, min_batch=1, min_seconds=0.0) as workers:
        assert workers.wait(timeout=60)
        for pool in (None, workers):
            compiled = gg.compile(gg.Grammar(grammar), llama3)  # its own masker: no mask cached from the other pass
            torch.manual_seed(5)
            proc = GrammarLogitsProcessor(compiled, workers=pool)
            out = model.generate(
                prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=20, do_sample=True,
                logits_processor=transformers.LogitsProcessorList([Bias(llama3), proc]),
                stopping_criteria=transformers.StoppingCriteriaList([proc.prefetcher()]),
                eos_token_id=eos, pad_token_id=eos[0],
            )  # fmt: skip
            outs.append(out.tolist())
        assert workers._workers[0]._grammars  # the workers were asked for rows
    assert outs[0] == outs[1]
    check_outputs(compiled, grammar, [row[prompt.shape[1] :] for row in outs[1]])


# ------------------------------------------------------------------ on a CUDA device


class CheckedProcessor(GrammarLogitsProcessor):
    """Checks every call against the CPU path: the logits it masked on the device equal the same
    logits masked on the CPU by plain torch ops with the same bitmask."""

    def __call__(self, input_ids, scores):
        before = scores.detach().float().cpu()
        out = super().__call__(input_ids, scores)
        want = before.to(scores.dtype)
        gg.apply_token_bitmask_inplace(want, torch.from_numpy(self.last_bitmask), backend="torch")
        assert out.is_cuda and torch.equal(out.cpu(), want)
        self.calls = getattr(self, "calls", 0) + 1
        return out

    def _fill(self, bitmask):
        self.last_bitmask = super()._fill(bitmask).copy()
        return self.last_bitmask


needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device: the processor is run on the CPU only")


@needs_cuda
@needs_llama3
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_generate_on_cuda(dtype: str, llama3: gg.Vocabulary, model) -> None:
    """model.generate on the GPU: each step's device masking equals the CPU path's, the outputs stay
    in the grammar, and the prefetcher generates token for token what the plain processor does."""
    from greatgramma.kernels.torch import triton_available

    gpu = model.to("cuda", getattr(torch, dtype))
    grammar = GRAMMARS["json"]
    compiled = gg.compile(gg.Grammar(grammar), llama3)
    prompt = torch.tensor([[128000, 128000]] * 3, device="cuda")
    eos = list(llama3.eos_token_ids)
    bias = Bias(llama3)
    bias.bias = bias.bias.to("cuda")
    outs = []
    try:
        for prefetch in (False, True):
            torch.manual_seed(7)
            proc = CheckedProcessor(compiled)
            stopping = transformers.StoppingCriteriaList([proc.prefetcher()] if prefetch else [])
            out = gpu.generate(
                prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=30, do_sample=True,
                logits_processor=transformers.LogitsProcessorList([bias, proc]), stopping_criteria=stopping,
                eos_token_id=eos, pad_token_id=eos[0],
            )  # fmt: skip
            assert proc.calls > 1
            outs.append(out.tolist())
    finally:
        model.to("cpu", torch.float32)
    assert outs[0] == outs[1]
    check_outputs(compiled, grammar, [row[prompt.shape[1] :] for row in outs[1]])
    assert triton_available(), "triton did not import on this CUDA machine: only the plain torch path ran"
