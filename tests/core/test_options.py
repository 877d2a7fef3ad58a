"""``config_from_options``: one reader for every method config, coercing ``--option`` values by the field's type."""

from __future__ import annotations

import dataclasses
import re
import warnings
from dataclasses import dataclass
from typing import Any, Literal, get_type_hints

import pytest

from retrievekit.core import registry
from retrievekit.core.arm.config import ArmConfig
from retrievekit.core.errors import InvalidInputError
from retrievekit.core.generative.mindref import MindRefConfig
from retrievekit.core.generative.self_retrieval.config import SelfRetrievalConfig
from retrievekit.core.judge.method import JudgeRerankConfig
from retrievekit.core.lattice.config import LatticeConfig, TreeBuildConfig
from retrievekit.core.oneshot.config import OneShotConfig, options_to_config
from retrievekit.core.options import coerce_option, config_from_options, option_bool
from retrievekit.core.registry import MethodContext, available_methods, build_method
from retrievekit.core.types import Passage

CONFIGS = [
    LatticeConfig,
    TreeBuildConfig,
    ArmConfig,
    MindRefConfig,
    SelfRetrievalConfig,
    JudgeRerankConfig,
    OneShotConfig,
]
BOOL_FIELDS = [
    (LatticeConfig, "internal_anchor"),
    (TreeBuildConfig, "append_child_titles"),
    (TreeBuildConfig, "progress"),
    (ArmConfig, "mip"),
    (ArmConfig, "verify"),
    (ArmConfig, "fill_to_k"),
    (MindRefConfig, "widen_to_k"),
    (SelfRetrievalConfig, "lowercase_titles"),
    (OneShotConfig, "dedupe_text"),
    (OneShotConfig, "filter"),
    (OneShotConfig, "crop_refill"),
]


@dataclass(frozen=True)
class Demo:
    count: int = 1
    ratio: float = 0.5
    flag: bool = True
    sizes: tuple[int, ...] = (3, 4)
    names: tuple[str, ...] = ()
    cap: int | None = None
    label: str | None = None
    mode: Literal["fast", "exact"] = "fast"
    text: str = "x"
    anything: Any = None


def _cli_string(value: Any) -> str:
    """How a value is written on the command line (``--option key=value``)."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return ",".join(str(v) for v in value)
    return str(value)


@pytest.mark.parametrize(("cls", "name"), BOOL_FIELDS, ids=[f"{c.__name__}.{n}" for c, n in BOOL_FIELDS])
def test_the_string_false_is_false_in_every_config(cls, name):
    assert cls.from_options({name: "false"}).__getattribute__(name) is False
    assert cls.from_options({name: "FALSE"}).__getattribute__(name) is False
    assert cls.from_options({name: "no"}).__getattribute__(name) is False
    assert cls.from_options({name: "0"}).__getattribute__(name) is False
    assert cls.from_options({name: "true"}).__getattribute__(name) is True
    assert cls.from_options({name: 1}).__getattribute__(name) is True
    with pytest.raises(InvalidInputError, match=f"option {name} must be true/false, got 'maybe'"):
        cls.from_options({name: "maybe"})


@pytest.mark.parametrize("cls", CONFIGS, ids=lambda c: c.__name__)
def test_every_field_takes_its_command_line_string(cls):
    default = cls()
    options = {f.name: _cli_string(getattr(default, f.name)) for f in dataclasses.fields(cls) if f.init}
    assert cls.from_options(options) == default
    assert cls.from_options({}) == default


@pytest.mark.parametrize("cls", CONFIGS, ids=lambda c: c.__name__)
def test_from_options_is_config_from_options_and_refuses_unknown_keys(cls):
    name = next(f.name for f in dataclasses.fields(cls) if get_type_hints(cls)[f.name] in (int, float))
    value = getattr(cls(), name)
    options = {name: str(value)}
    assert cls.from_options(options) == config_from_options(cls, options) == cls(**{name: value})
    with pytest.raises(InvalidInputError, match=r"unknown .*option\(s\): not_a_field; known: ") as err:
        cls.from_options({"not_a_field": 1})
    known = str(err.value).split("known: ")[1].split(", ")
    assert known == [f.name for f in dataclasses.fields(cls) if f.init]


def test_method_labels_in_unknown_key_messages():
    for cls, label in [
        (LatticeConfig, "LATTICE"),
        (TreeBuildConfig, "tree"),
        (ArmConfig, "ARM"),
        (MindRefConfig, "MindRef"),
        (SelfRetrievalConfig, "Self-Retrieval"),
        (JudgeRerankConfig, "judge-rerank"),
        (OneShotConfig, "OneShotConfig"),
    ]:
        with pytest.raises(InvalidInputError, match=f"^unknown {label} option"):
            cls.from_options({"zzz": 1})


def test_numbers():
    cfg = config_from_options(Demo, {"count": "7", "ratio": "2"})
    assert (cfg.count, cfg.ratio) == (7, 2.0) and isinstance(cfg.ratio, float)
    assert config_from_options(Demo, {"count": 3.0, "ratio": 1}).count == 3
    assert config_from_options(Demo, {"count": " -2 ", "ratio": "1e-3"}) == Demo(count=-2, ratio=0.001)
    assert config_from_options(Demo, {"count": "4.0"}).count == 4
    for bad in ("2k", "3.5", "", True, [1], None):
        with pytest.raises(InvalidInputError, match="option count must be an int, got "):
            config_from_options(Demo, {"count": bad})
    for bad in ("low", False, None):
        with pytest.raises(InvalidInputError, match="option ratio must be a number, got "):
            config_from_options(Demo, {"ratio": bad})
    with pytest.raises(InvalidInputError, match="option count must be an int, got inf"):
        config_from_options(Demo, {"count": float("inf")})


def test_tuples():
    assert config_from_options(Demo, {"sizes": "2, 5,"}).sizes == (2, 5)
    assert config_from_options(Demo, {"sizes": [1, "2"]}).sizes == (1, 2)
    assert config_from_options(Demo, {"sizes": (6,)}).sizes == (6,)
    assert config_from_options(Demo, {"names": "a,b"}).names == ("a", "b")
    with pytest.raises(InvalidInputError, match=r"option sizes\[1\] must be an int, got 'x'"):
        config_from_options(Demo, {"sizes": "3,x"})
    with pytest.raises(InvalidInputError, match="option sizes must be a list or a comma-separated string, got 3"):
        config_from_options(Demo, {"sizes": 3})
    assert ArmConfig.from_options({"expand_ks": "2,3"}).expand_ks == (2, 3)
    assert TreeBuildConfig.from_options({"summary_levels": ["2", 6]}).summary_levels == (2, 6)


def test_optional_fields():
    for none in ("none", "None", "NULL", " null ", None, ""):
        assert config_from_options(Demo, {"cap": none}).cap is None
    assert config_from_options(Demo, {"cap": "5"}).cap == 5
    assert config_from_options(Demo, {"label": "none"}).label is None
    assert config_from_options(Demo, {"label": ""}).label == ""  # an empty string is a string
    assert OneShotConfig.from_options({"k_max": "null"}).k_max is None
    assert SelfRetrievalConfig.from_options({"random_sent_num": "none"}).random_sent_num is None
    assert SelfRetrievalConfig.from_options({"random_sent_num": "20"}).random_sent_num == 20


def test_literals_strings_and_other_types():
    assert config_from_options(Demo, {"mode": "exact"}).mode == "exact"
    with pytest.raises(InvalidInputError, match=re.escape("option mode must be fast|exact, got 'slow'")):
        config_from_options(Demo, {"mode": "slow"})
    with pytest.raises(InvalidInputError, match=re.escape("option path_scores must be local|calibrated, got 'global'")):
        LatticeConfig.from_options({"path_scores": "global"})
    assert config_from_options(Demo, {"text": 5}).text == "5"
    with pytest.raises(InvalidInputError, match="option text must be a string, got None"):
        config_from_options(Demo, {"text": None})
    marker = object()
    assert config_from_options(Demo, {"anything": marker}).anything is marker
    assert coerce_option("n", int | None, "3") == 3


def test_the_config_still_validates_after_coercion():
    with pytest.raises(InvalidInputError, match="beam_size must be >= 1, got 0"):
        LatticeConfig.from_options({"beam_size": "0"})
    with pytest.raises(InvalidInputError, match="mix must be in"):
        JudgeRerankConfig.from_options({"mix": "2"})


def test_option_bool():
    assert [option_bool("x", v) for v in (True, "Yes", "1", 1, False, "no", "0", 0)] == [True] * 4 + [False] * 4
    for bad in ("maybe", 2, None, 1.0):
        with pytest.raises(InvalidInputError, match="option x must be true/false"):
            option_bool("x", bad)


def test_options_to_config_is_a_deprecated_alias():
    with pytest.warns(DeprecationWarning, match="config_from_options"):
        assert options_to_config(OneShotConfig, {"budget": "10"}) == OneShotConfig(budget=10)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        OneShotConfig.from_options({"budget": "10"})  # the new spelling warns about nothing


# Read from the registry as collected (before any test registers a method of its own): the built-ins and the
# methods installed packages declare, so a new method is covered without an edit here.
SHIPPED_METHODS = sorted(set(registry._BUILTIN) | set(registry._plugin_methods()))


@pytest.mark.parametrize("method", SHIPPED_METHODS)
def test_every_method_refuses_an_unknown_option_naming_the_known_ones(method):
    assert method in available_methods()
    docs = [Passage(id="a", title="Sun", text="sun and rain"), Passage(id="b", title="Rain", text="rain, rain")]
    ctx = MethodContext(corpus=docs, options={"no_such_option": 1})
    with pytest.raises(InvalidInputError, match=r"^unknown .*option\(s\): no_such_option; known: \w+"):
        build_method(method, ctx)  # refused before any model or index is loaded
