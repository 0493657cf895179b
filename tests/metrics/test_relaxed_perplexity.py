"""Relaxed Perplexity: the estimator against hand values, the algorithm on the hf backend against brute-force
enumeration and the definition computed plainly (support.reference.relaxed_terms), the job rows."""

from __future__ import annotations

import importlib
import itertools
import json
import math

import polars as pl
import pytest

from support.reference import relaxed_terms
from support.tiny_models import tiny_gemma3_config

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

# careval.metrics.relaxed_perplexity is also the exported function's name, so fetch the module itself
rp = importlib.import_module("careval.metrics.relaxed_perplexity")
job = importlib.import_module("careval.jobs.relaxed_perplexity")
rp_hf = importlib.import_module("careval.backends.hf.relaxed")

VOCAB = 5
EOS = 4


def tiny_llama(dtype=torch.float64, vocab=VOCAB, seed=0):
    """A random 2-layer Llama small enough to enumerate every continuation."""
    torch.manual_seed(seed)
    config = transformers.LlamaConfig(
        vocab_size=vocab,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=128,
        bos_token_id=0,
        eos_token_id=EOS,
        pad_token_id=0,
    )
    model = transformers.LlamaForCausalLM(config).eval()
    # random init is close to uniform; sharpen it so the checks see distinct probabilities
    with torch.no_grad():
        model.lm_head.weight.mul_(8.0)
    return model.to(dtype)


def model_backend(model, max_length=None):
    """An HFBackend around a loaded model; its tokenizer: one word per token id ("w0", "w1", ...)."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    from careval.backends.hf.backend import HFBackend

    vocab = {f"w{i}": i for i in range(model.config.vocab_size)}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="w0"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="w0", eos_token=f"w{model.config.eos_token_id}")
    return HFBackend("tiny", tokenizer, model, device="cpu", max_length=max_length)


def brute_logprobs(model, tokens):
    """log P(tokens[i] | tokens[:i]) for i >= 1, from one plain full forward (no caches, no masks, no slicing)."""
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([tokens])).logits[0].double()
    logp = torch.log_softmax(logits, dim=-1)
    return [float(logp[i - 1, tokens[i]]) for i in range(1, len(tokens))]


def brute_p(model, context, continuation):
    return math.exp(sum(brute_logprobs(model, list(context) + list(continuation))[len(context) - 1 :]))


# --------------------------------------------------------------------------- estimator pieces
def test_combine_matches_a_hand_calculation():
    prefixes = {0: [()], 2: [(1, 2), (3, 4)]}
    target_ll = {(): math.log(0.5), (1, 2): math.log(0.1), (3, 4): math.log(0.2)}
    prefix_ll = {(): 0.0, (1, 2): math.log(0.4), (3, 4): math.log(0.5)}
    skewed = rp.combine(prefixes, target_ll, prefix_ll, 3, n_max=2, skewed=True)
    assert skewed.steps == (0, 2) and skewed.n_max == 2
    assert skewed.log_terms == pytest.approx((math.log(0.5), math.log(0.3)))
    assert skewed.cross_entropy == pytest.approx(-(math.log(0.5) + math.log(0.3)))
    assert skewed.perplexity == pytest.approx(math.exp(-(math.log(0.5) + math.log(0.3)) / (2 + 3)))
    unskewed = rp.combine(prefixes, target_ll, prefix_ll, 3, n_max=2, skewed=False)
    assert unskewed.log_terms[1] == pytest.approx(math.log(0.1 * 0.4 + 0.2 * 0.5))


def test_stride_points_and_distinct_prefixes():
    assert rp.stride_points(7, 2) == [0, 2, 4, 6]
    assert rp.stride_points(128, 8)[-1] == 128 and len(rp.stride_points(128, 8)) == 17
    groups = rp.step_prefixes([(1, 2, 3), (1, 2, 4), (5,)], [0, 2, 4])
    # the empty prefix and (1, 2) count once; no continuation reaches n = 4
    assert groups == {0: [()], 2: [(1, 2)]}
    with pytest.raises(ValueError, match="stride"):
        rp.stride_points(8, 0)


def test_select_keeps_the_most_likely_distinct_continuations():
    conts = [(1, 1), (2, 2), (1, 1), (3, 3), (4, 4)]
    logps = [-1.0, -3.0, -1.0, -0.5, -3.0]
    assert rp.select_continuations(conts, logps, 3) == [3, 0, 1]  # duplicate (1, 1) dropped, tie -> earlier


def test_unknown_option_is_a_clear_error():
    with pytest.raises(TypeError, match=r"unknown option.*beams"):
        rp.relaxed_perplexity(model_backend(tiny_llama()), [0, 1], [2], beams=3)


# --------------------------------------------------------------------------- exactness by enumeration
def test_all_continuations_give_the_exact_probability():
    """With every length-3 sequence kept, the unskewed term at n equals
    sum over all c of length n of P(c | q) P(t | q + c), enumerated by brute force."""
    model = tiny_llama()
    backend = model_backend(model)
    q, t, length = [0, 1, 3], [2, 1], 3
    every = list(itertools.product(range(VOCAB), repeat=length))
    unskewed = rp.relaxed_perplexity(backend, q, t, continuations=every, stride=1, max_tokens=length, skewed=False)
    skewed = rp.relaxed_perplexity(backend, q, t, continuations=every, stride=1, max_tokens=length, skewed=True)
    assert unskewed.steps == (0, 1, 2, 3)
    for n in range(length + 1):
        prefixes = list(itertools.product(range(VOCAB), repeat=n))
        p_prefix = [brute_p(model, q, c) if c else 1.0 for c in prefixes]
        assert sum(p_prefix) == pytest.approx(1.0, abs=1e-12)  # the enumeration is complete
        p_target = [brute_p(model, q + list(c), t) for c in prefixes]
        exact = sum(a * b for a, b in zip(p_prefix, p_target))
        assert math.exp(unskewed.log_terms[n]) == pytest.approx(exact, rel=1e-10)
        assert math.exp(skewed.log_terms[n]) == pytest.approx(sum(p_target), rel=1e-10)
    expected = -sum(unskewed.log_terms)
    assert unskewed.cross_entropy == pytest.approx(expected)
    assert unskewed.perplexity == pytest.approx(math.exp(expected / (length + len(t))))


# --------------------------------------------------------------------------- the definition, computed plainly
@pytest.mark.parametrize("dtype,tol", [(torch.float32, 1e-5), (torch.float64, 1e-10)])
@pytest.mark.parametrize("skewed", [True, False])
def test_sampled_continuations_give_the_definitions_terms(dtype, tol, skewed):
    """The hf backend scores the targets on its sampler's key/value cache; the terms equal one plain forward of
    q + p + t per distinct prefix, whether the cache is the sampler's or built for explicit continuations."""
    model = tiny_llama(dtype, vocab=7)
    backend = model_backend(model)
    q, t = [0, 1, 2, 5], [3, 6, 1]
    kwargs = dict(l=3, s=6, stride=2, max_tokens=7, skewed=skewed, seed=11)
    sampled = rp.relaxed_perplexity(backend, q, t, **kwargs)
    explicit = rp.relaxed_perplexity(backend, q, t, continuations=sampled.continuations, **kwargs)
    # 7 is not a stride point, but the paper's normaliser is n + len(t) with n = max_tokens
    assert sampled.steps == (0, 2, 4, 6) and sampled.n_max == 7
    want = relaxed_terms(model, q, t, sampled.continuations, [0, 2, 4, 6, 8], skewed)
    for got in (sampled, explicit):
        assert got.steps == sampled.steps and got.continuations == sampled.continuations
        assert got.log_terms == pytest.approx(want, abs=tol)
        assert got.cross_entropy == pytest.approx(-sum(want), abs=tol)
        assert got.perplexity == pytest.approx(math.exp(-sum(want) / (7 + len(t))), rel=tol)


def test_uneven_explicit_continuations_and_many_targets_give_the_definitions_terms():
    model = tiny_llama(vocab=7)
    backend = model_backend(model)
    q = [0, 3]
    conts = [(1, 2, 3, 4, 5, 6), (1, 2, 6), (), (4, 4, 4, 4, 4, 4, 4, 4, 4)]
    targets = [[5], [2, 3, 4, 1], [6, 6]]
    for skewed in (True, False):
        kwargs = dict(stride=3, max_tokens=9, skewed=skewed, continuations=conts)
        for target, got in zip(targets, rp.relaxed_perplexities(backend, q, targets, **kwargs)):
            assert got.steps == (0, 3, 6, 9)
            assert got.log_terms == pytest.approx(
                relaxed_terms(model, q, target, conts, [0, 3, 6, 9], skewed), abs=1e-10
            )


def test_the_sampler_cache_is_used_once_and_only_for_its_own_prompt():
    """A target_logprobs call continues the last sampling call's cache only for that prompt and its continuations."""
    model = tiny_llama(vocab=7)
    backend = model_backend(model)
    kwargs = dict(l=2, s=4, stride=2, max_tokens=4, seed=3, skewed=False)
    first = rp.relaxed_perplexity(backend, [0, 1], [2, 3], **kwargs)
    assert backend._sampled is None  # consumed
    backend.sample_continuations([0, 2], n=2, max_tokens=4, top_p=0.9, seed=1)  # another prompt's
    again = rp.relaxed_perplexity(backend, [0, 1], [2, 3], continuations=first.continuations, **kwargs)
    assert again.log_terms == pytest.approx(first.log_terms, abs=1e-10)


def test_the_target_copies_split_over_passes_without_changing_results(monkeypatch):
    model = tiny_llama(vocab=7)
    kwargs = dict(l=2, s=4, stride=1, max_tokens=6, seed=3)
    whole = rp.relaxed_perplexity(model_backend(model), [0, 1], [2, 3], **kwargs)
    monkeypatch.setattr(rp_hf, "LOGITS_BUDGET", 1)  # one copy per pass: the cache is cut back each time
    split = rp.relaxed_perplexity(model_backend(model), [0, 1], [2, 3], **kwargs)
    assert split.log_terms == pytest.approx(whole.log_terms, abs=1e-12)


def test_sliding_window_models_get_the_window_in_the_copies_mask():
    """Gemma-3-style layers attend to the last `sliding_window` positions only; the target copies' own mask
    must apply that window as the model's own masks do."""
    torch.manual_seed(0)
    config = tiny_gemma3_config(
        7,
        hidden_size=16,
        intermediate_size=32,
        num_attention_heads=2,
        num_key_value_heads=1,
        sliding_window=3,
        bos_token_id=0,
        eos_token_id=EOS,
        pad_token_id=0,
    )
    model = transformers.Gemma3ForCausalLM(config).eval().double()
    kwargs = dict(l=2, s=3, stride=2, max_tokens=6, seed=5, skewed=False)
    got = rp.relaxed_perplexity(model_backend(model), [0, 1, 2, 3], [5, 6, 1], **kwargs)
    want = relaxed_terms(model, [0, 1, 2, 3], [5, 6, 1], got.continuations, [0, 2, 4, 6], skewed=False)
    assert got.log_terms == pytest.approx(want, abs=1e-10)


# --------------------------------------------------------------------------- sampling
def test_sampling_is_seeded_full_length_and_keeps_the_most_likely():
    model = tiny_llama(vocab=7)
    q = [0, 1, 2]
    first = rp_hf.draw_continuations(model, q, s=8, max_tokens=5, top_p=0.9, seed=1, suppress_ids=[EOS])
    again = rp_hf.draw_continuations(model, q, s=8, max_tokens=5, top_p=0.9, seed=1, suppress_ids=[EOS])
    other = rp_hf.draw_continuations(model, q, s=8, max_tokens=5, top_p=0.9, seed=2, suppress_ids=[EOS])
    assert first.continuations == again.continuations
    assert first.continuations != other.continuations
    assert all(len(c) == 5 and EOS not in c for c in first.continuations)
    for c, logps in zip(first.continuations, first.token_logprobs):  # the model's unmodified log-probs
        assert logps == pytest.approx(brute_logprobs(model, q + list(c))[len(q) - 1 :], abs=1e-10)
    joint = [sum(lp) for lp in first.token_logprobs]
    keep = rp.select_continuations(first.continuations, joint, 3)
    result = rp.relaxed_perplexity(model_backend(model), q, [3], l=3, s=8, max_tokens=5, stride=1, seed=1)
    assert list(result.continuations) == [first.continuations[i] for i in keep]
    dropped = [joint[i] for i in range(8) if first.continuations[i] not in result.continuations]
    assert all(joint[i] >= max(dropped) for i in keep)


def test_tiny_top_p_samples_the_greedy_path_without_eos():
    model = tiny_llama(vocab=7)
    q = [0, 1]
    sampled = rp_hf.draw_continuations(model, q, s=2, max_tokens=6, top_p=1e-6, seed=9, suppress_ids=[EOS])
    greedy = list(q)
    for _ in range(6):
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([greedy])).logits[0, -1].clone()
        logits[EOS] = -math.inf
        greedy.append(int(logits.argmax()))
    assert sampled.continuations == [tuple(greedy[len(q) :])] * 2


# --------------------------------------------------------------------------- the benchmark job
WORDS = ["[UNK]", "a", "b", "c", "d", "e", "<s>", "</s>"]


class PrefixedPrompts:
    """An hf backend whose prompts become "e <prompt>" (as a system prompt would wrap them), after their instruction."""

    def format(self, prompt, instruction=None):
        return f"e {instruction or ''}{prompt}"


def tiny_backend(max_length=128):
    """An HFBackend over a random Llama with a word-level tokenizer of 8 words, without BOS, prompts formatted."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    from careval.backends.hf.backend import HFBackend

    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(WORDS)}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", eos_token="</s>", bos_token="<s>")
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=len(WORDS),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=256,
        bos_token_id=6,
        eos_token_id=7,
        pad_token_id=0,
    )
    model = transformers.LlamaForCausalLM(config).eval().double()
    backend_class = type("Prefixed", (PrefixedPrompts, HFBackend), {})
    return backend_class("tiny", tokenizer, model, device="cpu", max_length=max_length, add_bos_token=False)


def defined(backend, q, t, options=None):
    """The per-target value the job should give: the algorithm's, after checking its terms against the definition."""
    options = {**OPTIONS, **(options or {})}
    got = rp.relaxed_perplexity(backend, q, t, **options)
    steps = rp.stride_points(options["max_tokens"], options["stride"])
    assert got.log_terms == pytest.approx(relaxed_terms(backend.model, q, t, got.continuations, steps, True), abs=1e-9)
    return got


OPTIONS = {"l": 2, "s": 3, "stride": 2, "max_tokens": 4, "seed": 7}


def samples_frame():
    rows = [
        {"id": "plain", "question": "a b", "reference": "c d", "meta": json.dumps({"topic": "x"})},
        {"id": "olaph", "question": "b", "reference": "ignored", "meta": json.dumps({"must_have": ["c", "d b", "  "]})},
        {"id": "blank", "question": "c", "reference": "   ", "meta": "{}"},
    ]
    return pl.DataFrame(
        rows, schema={"id": pl.String, "question": pl.String, "reference": pl.String, "meta": pl.String}
    )


def test_job_rows_average_the_targets_and_count_blank_ones():
    from careval.backends.tokenization import generation_tokens
    from careval.schemas import SCORE_SCHEMA

    backend = tiny_backend()
    template = "d {question}"
    scores = job.score_relaxed_perplexity(backend, samples_frame(), template, OPTIONS)
    assert scores.schema == pl.Schema(SCORE_SCHEMA)
    assert scores.height == 6 and set(scores["metric"]) == set(rp.METRICS)
    assert set(scores["level"]) == {"sample"} and set(scores["weight"]) == {1.0}
    by = {(r["id"], r["metric"]): r for r in scores.iter_rows(named=True)}
    assert by[("blank", "relaxed_perplexity")]["status"] == "empty_target"
    assert math.isnan(by[("blank", "relaxed_perplexity")]["value"])

    # recomputed directly: question = the formatted generation prompt, targets = " " + statement
    def direct(question, statement):
        q, _ = generation_tokens(backend.tokenizer, f"e d {question}", add_bos=False, max_prompt_tokens=100)
        return defined(backend, q, backend.tokenizer.encode(" " + statement, add_special_tokens=False))

    plain = direct("a b", "c d")
    assert by[("plain", "relaxed_perplexity")]["value"] == pytest.approx(plain.perplexity, rel=1e-9)
    assert by[("plain", "relaxed_cross_entropy")]["value"] == pytest.approx(plain.cross_entropy, rel=1e-9)
    olaph = [direct("b", "c"), direct("b", "d b")]  # the blank statement is left out of the mean
    assert by[("olaph", "relaxed_perplexity")]["status"] == "ok"
    assert by[("olaph", "relaxed_perplexity")]["value"] == pytest.approx(sum(r.perplexity for r in olaph) / 2, rel=1e-9)
    assert by[("olaph", "relaxed_cross_entropy")]["value"] == pytest.approx(
        sum(r.cross_entropy for r in olaph) / 2, rel=1e-9
    )

    targets = job.relaxed_perplexity_targets(backend, samples_frame(), template, OPTIONS)
    assert targets.filter(pl.col("id") == "olaph")["status"].to_list() == ["ok", "ok", "empty_target"]


def test_the_job_gives_the_backend_the_benchmarks_instruction_apart(monkeypatch):
    """As the generation job does (careval.inference.generate): the question the continuations are sampled after is
    the one the model answered; here, a backend without a chat template, the same text as the whole prompt."""
    from polars.testing import assert_frame_equal

    backend = tiny_backend()
    asked, real = [], backend.prompt_tokens

    def prompt_tokens(prompt, room, instruction=None):
        asked.append((prompt, instruction))
        return real(prompt, room, instruction)

    monkeypatch.setattr(backend, "prompt_tokens", prompt_tokens)
    apart = job.relaxed_perplexity_targets(backend, samples_frame(), "d {question}", OPTIONS, instruction="d ")
    assert asked[0] == ("a b", "d ")
    assert_frame_equal(apart, job.relaxed_perplexity_targets(backend, samples_frame(), "d {question}", OPTIONS))


def test_job_counts_non_finite_and_too_long_samples(monkeypatch):
    backend = tiny_backend(max_length=5)  # max_tokens 4 + a 2-token target leaves no room
    scores = job.score_relaxed_perplexity(backend, samples_frame().head(1), "d {question}", OPTIONS)
    assert set(scores["status"]) == {"too_long"} and scores["value"].is_nan().all()

    backend = tiny_backend()
    real = rp.relaxed_perplexities

    def overflowing(*args, **kwargs):
        return [
            rp.RelaxedPerplexity(math.inf, math.inf, r.steps, r.log_terms, r.n_max, r.target_tokens, r.skewed)
            for r in real(*args, **kwargs)
        ]

    monkeypatch.setattr(job, "relaxed_perplexities", overflowing)  # the name the job calls
    scores = job.score_relaxed_perplexity(backend, samples_frame(), "d {question}", {**OPTIONS, "limit": 2})
    assert scores["id"].unique(maintain_order=True).to_list() == ["plain", "olaph"]  # limit
    assert set(scores["status"]) == {"non_finite"} and scores["value"].is_nan().all()


def test_sample_targets_prefer_must_have():
    assert job.sample_targets({"reference": "r", "meta": json.dumps({"must_have": ["x", "y"]})}) == ["x", "y"]
    assert job.sample_targets({"reference": "r", "meta": json.dumps({"must_have": []})}) == ["r"]
    assert job.sample_targets({"reference": "r", "meta": None}) == ["r"]
    assert job.sample_targets({"reference": "r", "meta": "not json"}) == ["r"]


def test_reference_sentences_as_targets_where_a_sample_has_no_statements():
    # table 6's kind of ground truth: MedText's answer as its two statements
    medtext = {
        "reference": "Vitamin D toxicity. Stop vitamin D supplementation!\nRecheck calcium in a week?",
        "meta": "{}",
    }
    assert job.sample_targets(medtext) == [medtext["reference"]]  # the paper's runs: the whole reference
    assert job.sample_targets(medtext, "sentences") == [
        "Vitamin D toxicity.",
        "Stop vitamin D supplementation!",
        "Recheck calcium in a week?",
    ]
    olaph = {"reference": "A. B.", "meta": json.dumps({"must_have": ["x"]})}
    assert job.sample_targets(olaph, "sentences") == ["x"]  # statements of its own win
    assert job.sample_targets({"reference": "  ", "meta": None}, "sentences") == []  # counted as empty_target


def test_the_sentences_option_scores_each_sentence_as_a_statement_would_be():
    backend = tiny_backend()
    samples = pl.DataFrame(
        [
            {"id": "s", "question": "a b", "reference": "c d. d b", "meta": "{}"},
            {"id": "m", "question": "a b", "reference": "x", "meta": json.dumps({"must_have": ["c d.", "d b"]})},
        ],
        schema={"id": pl.String, "question": pl.String, "reference": pl.String, "meta": pl.String},
    )
    split = job.relaxed_perplexity_targets(
        backend, samples, "{question}", {**OPTIONS, "reference_targets": "sentences"}
    )
    got = {(r["id"], r["target"]): r["relaxed_cross_entropy"] for r in split.iter_rows(named=True)}
    # the same question and statements through the Must_have path give the same per-target values
    assert set(got) == {("s", "c d."), ("s", "d b"), ("m", "c d."), ("m", "d b")}
    for target in ("c d.", "d b"):
        assert got[("s", target)] == pytest.approx(got[("m", target)], abs=1e-6)
    whole = job.relaxed_perplexity_targets(backend, samples.head(1), "{question}", OPTIONS)
    assert whole["target"].to_list() == ["c d. d b"]


def test_no_continuation_tokens_is_the_ordinary_conditional_perplexity():
    model = tiny_llama()
    q, t = [0, 2, 1], [3, 3, 2]
    result = rp.relaxed_perplexity(model_backend(model), q, t, max_tokens=0)
    loglik = sum(brute_logprobs(model, q + t)[len(q) - 1 :])
    assert result.steps == (0,) and result.n_max == 0
    assert result.perplexity == pytest.approx(math.exp(-loglik / len(t)), rel=1e-10)


@pytest.mark.slow
def test_demo_model_job_agrees_with_the_definition(repo_root):
    """The real chat model through HFBackend: chat-formatted prompts; the terms equal the definition's, computed plainly."""
    from careval.backends.hf.backend import HFBackend
    from careval.backends.tokenization import generation_tokens

    folder = repo_root / "resources" / "models" / "smollm2-135m-instruct"
    if not (folder / "config.json").is_file():
        pytest.skip(f"{folder} not prepared")
    backend = HFBackend.load("smollm2", str(folder), chat_template=True, dtype="float32", threads=1)
    samples = pl.DataFrame(
        {
            "id": ["a"],
            "question": ["What is hypertension?"],
            "reference": ["High blood pressure."],
            "meta": [json.dumps({"must_have": ["Hypertension is high blood pressure."]})],
        }
    )
    options = {"l": 2, "s": 3, "stride": 4, "max_tokens": 8, "seed": 1}
    targets = job.relaxed_perplexity_targets(backend, samples, "Question: {question}\nAnswer:", options)
    formatted = backend.format("Question: What is hypertension?\nAnswer:")
    assert formatted.startswith("<|im_start|>")  # the chat template was applied
    q, _ = generation_tokens(backend.tokenizer, formatted, add_bos=backend.add_bos, max_prompt_tokens=1000)
    t = backend.tokenizer.encode(" Hypertension is high blood pressure.", add_special_tokens=False)
    fast = rp.relaxed_perplexity(backend, q, t, **options)
    want = relaxed_terms(backend.model, q, t, fast.continuations, [0, 4, 8], skewed=True)
    assert fast.log_terms == pytest.approx(want, abs=1e-4)
    assert targets["relaxed_perplexity"][0] == pytest.approx(fast.perplexity, rel=1e-9)


def test_olaph_nice_to_have_is_a_second_target_set_on_a_real_row(tmp_path, shared_data):
    """A real MedLFQA row, normalised as the pipeline does: Must_have and Nice_to_have values per sample, each the
    mean over its statements of the values checked against the definition."""
    from careval.backends.tokenization import generation_tokens
    from careval.datasets import get_benchmark
    from careval.datasets.normalise import build_benchmark

    entry = get_benchmark("olaph_kqa_golden", {"path": str(shared_data / "medlfqa_kqa_golden" / "sample.jsonl")})
    samples = build_benchmark(entry, tmp_path / "o.parquet").head(1)
    meta = json.loads(samples["meta"][0])
    assert meta["nice_to_have"]  # the row has Nice_to_have statements
    backend = tiny_backend(max_length=512)
    per_target = job.relaxed_perplexity_targets(backend, samples, "{question}", OPTIONS)
    assert per_target.filter(pl.col("target_set") == "nice_to_have")["target"].to_list() == [
        t.strip() for t in meta["nice_to_have"]
    ]
    scores = {r["metric"]: r["value"] for r in job.scores_from_targets(per_target).iter_rows(named=True)}
    assert set(scores) == {
        "relaxed_perplexity",
        "relaxed_cross_entropy",
        "relaxed_perplexity_nice_to_have",
        "relaxed_cross_entropy_nice_to_have",
    }

    q, _ = generation_tokens(
        backend.tokenizer, backend.format(samples["question"][0]), add_bos=False, max_prompt_tokens=512
    )
    for name, statements in (("", meta["must_have"]), ("_nice_to_have", meta["nice_to_have"])):
        direct = [
            defined(backend, q, backend.tokenizer.encode(" " + s.strip(), add_special_tokens=False)) for s in statements
        ]
        assert scores[f"relaxed_perplexity{name}"] == pytest.approx(
            sum(r.perplexity for r in direct) / len(direct), rel=1e-6
        )
        assert scores[f"relaxed_cross_entropy{name}"] == pytest.approx(
            sum(r.cross_entropy for r in direct) / len(direct), rel=1e-6
        )
