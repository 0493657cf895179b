"""Where stop strings come from: the config's benchmark entry, the catalogue (the authors' `until`),
`generation.stop`, and the repeats' own sampling sections; all checked by the schema."""

import copy

import pytest

from careval.config import ConfigError, prepare_config
from careval.datasets import get_benchmark
from careval.inference import sampling_for
from careval.jobs.repeats import repeat_sampling


def test_schema_default_is_no_stop_and_the_catalogue_gives_the_authors_until(demo_config):
    generation = demo_config["generation"]
    assert generation["stop"] == []
    assert sampling_for(get_benchmark("demo_open_qa"), generation).stop == ()  # careval's own data: none
    assert sampling_for(get_benchmark("careqa_open"), generation).stop == ("\n\n",)
    assert sampling_for(get_benchmark("aci_bench"), {**generation, "stop": ["END"]}).stop == ("END",)


def test_repeats_take_the_benchmark_stop_then_their_own(demo_config):
    generation = demo_config["generation"]
    entry = get_benchmark("careqa_open")
    # self-consistency answers the benchmark's prompt: its stop strings
    assert repeat_sampling(generation, {"temperature": 1.0}, entry).stop == ("\n\n",)
    assert repeat_sampling(generation, {"temperature": 1.0, "stop": ["\n"]}, entry).stop == ("\n",)
    # the rephraser does not answer the benchmark: generation.stop only, or its section's
    assert repeat_sampling(generation, {"temperature": 1.0}).stop == ()
    assert repeat_sampling({**generation, "stop": ["##"]}, {"stop": ["\n\n"]}).stop == ("\n\n",)


@pytest.mark.parametrize("where", ["generation", "benchmark", "consistency", "resilience"])
def test_stop_is_accepted_everywhere_and_an_empty_string_names_the_key(demo_config, where):
    def put(config, value):
        if where == "generation":
            config["generation"]["stop"] = value
        elif where == "benchmark":
            config["benchmarks"]["demo_open_qa"] = {"stop": value}
        else:
            config["analysis"][where]["sampling"]["stop"] = value

    config = copy.deepcopy(demo_config)
    put(config, ["\n\n", "Question:"])
    prepare_config(config)
    put(config, [""])
    with pytest.raises(ConfigError, match="stop"):
        prepare_config(config)


def test_a_benchmark_override_replaces_the_catalogue_stop():
    assert get_benchmark("careqa_open", {"stop": ["\n"]}).stop == ("\n",)
    assert get_benchmark("careqa_open", {"stop": []}).stop == ()
    assert get_benchmark("careqa_open", {}).stop == ("\n\n",)
