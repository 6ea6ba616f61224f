"""The docs site: the generated configuration reference is up to date, the README stays a README and its
links resolve, every page is in the site's navigation. (``mkdocs build --strict``, run by ``make lint``,
checks the links between pages and the API reference; tests/project/test_readme.py runs every code block.)"""

from __future__ import annotations

import importlib.util
import re
import sys

import pytest
import yaml

from repo_paths import ROOT  # noqa: E402

DOCS = ROOT / "docs"
README = ROOT / "README.md"


def _docs_script(name: str):
    """``docs/NAME.py`` (the configuration reference's generator, the site's hooks), imported."""
    spec = importlib.util.spec_from_file_location(f"docs_{name}", DOCS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, module)
    spec.loader.exec_module(module)
    return module


def test_config_reference_is_generated_from_the_schemas():
    """docs/reference/config.md is what docs/gen_config_reference.py writes from the code as it is."""
    pytest.importorskip("stable_baselines3", reason="the train section needs the rl extra")
    generated = _docs_script("gen_config_reference").page()
    committed = (DOCS / "reference" / "config.md").read_text()
    assert committed == generated, (
        "docs/reference/config.md is out of date: run python docs/gen_config_reference.py and commit the page"
    )


def test_config_reference_names_every_system_and_study_key():
    """The page holds every system type, and the keys with their defaults and ranges as the models say."""
    from pb_gym.experiments.evaluate.settings import SYSTEM_CONFIGS, StudyConfig

    text = (DOCS / "reference" / "config.md").read_text()
    for key in SYSTEM_CONFIGS:
        assert f"### `type: {key}`" in text, key
    for field in StudyConfig.model_fields:
        assert f"| `{field}` |" in text, field
    assert "| `sample_paths` | integer | `5` | >= 0, <= 50 |" in text
    assert "| `fraction` | number | `1.0` | > 0, <= 1 |" in text  # kelly's, from its constructor's hints
    assert "| `decks` | integer | `8` | an integer from 1 to 8 |" in text  # Rules' own check


def test_config_reference_covers_every_study_and_gives_every_key_a_meaning():
    """A section for each config-driven command, and no key row with an empty meaning (a new field
    without a Field description, or a system parameter missing from its docstring's Args, shows here)."""
    from pb_gym.experiments.cli.studies import STUDIES

    text = (DOCS / "reference" / "config.md").read_text()
    for section in ["evaluate", "train", *(f"experiment {study}" for study in STUDIES)]:
        assert f"\n## {section}\n" in text, section
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    empty = [row[:80] for row in rows if row.rstrip().endswith("|  |")]
    assert rows and not empty, f"config reference rows without a meaning: {empty}"


def test_config_reference_generator_detects_drift(tmp_path, monkeypatch):
    """The check mode fails on a page that differs from the schemas (so the test above can fail)."""
    pytest.importorskip("stable_baselines3", reason="the train section needs the rl extra")
    generator = _docs_script("gen_config_reference")
    stale = tmp_path / "config.md"
    stale.write_text((DOCS / "reference" / "config.md").read_text().replace(">= 0, <= 50", ">= 0"))
    monkeypatch.setattr(generator, "PAGE", stale)
    monkeypatch.setattr(generator, "ROOT", tmp_path)
    assert generator.main(["--check"]) == 1


def test_readme_is_a_readme():
    """At most 300 lines, and its links to the docs and files resolve."""
    text = README.read_text()
    assert len(text.splitlines()) <= 300, f"README.md has {len(text.splitlines())} lines; move text to docs/"
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    assert any(link.startswith("docs/") for link in links)
    missing = [link for link in links if "://" not in link and not (ROOT / link).exists()]
    assert not missing, f"README.md links to missing files: {missing}"


def test_every_page_is_in_the_navigation():
    """Each docs page is in mkdocs.yml's nav (or listed as not in it), and each nav entry exists."""

    class Loader(yaml.SafeLoader):
        pass

    Loader.add_multi_constructor("tag:yaml.org,2002:python/name:", lambda *_: None)
    config = yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=Loader)

    def entries(nav):
        for item in nav:
            value = next(iter(item.values())) if isinstance(item, dict) else item
            yield from entries(value) if isinstance(value, list) else [value]

    in_nav = set(entries(config["nav"]))
    not_in_nav = {
        line.strip().lstrip("/") for line in config.get("not_in_nav", "").splitlines() if line.strip()
    }
    pages = {str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md")}
    assert in_nav <= pages, f"nav entries without a page: {sorted(in_nav - pages)}"
    assert pages <= in_nav | not_in_nav, f"pages missing from the nav: {sorted(pages - in_nav - not_in_nav)}"


def test_the_license_matches_pyproject():
    import tomllib

    license_ = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["license"]["text"]
    assert license_ == "MIT"
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")


@pytest.mark.parametrize("command", ["evaluate", "train"])
def test_help_points_to_the_config_reference(command, capsys):
    from pb_gym.experiments import cli

    with pytest.raises(SystemExit):
        cli.build_parser().parse_args([command, "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "docs/reference/config.md" in help_text
    assert (ROOT / "docs" / "reference" / "config.md").is_file()


def test_the_site_keeps_a_table_cells_intervals_on_one_line():
    """docs/hooks.py wraps an estimate and its interval in span.pb-ci (kept whole by extra.css), in table
    cells only."""
    hooks = _docs_script("hooks")
    html = (
        "<td>-1.067% [-1.125, -1.009]</td><td><strong>95.1% [94.9, 95.4]</strong></td><p>0.4 [0.1, 0.9]</p>"
    )
    out = hooks.keep_intervals_whole(html)
    assert '<td><span class="pb-ci">-1.067% [-1.125, -1.009]</span></td>' in out
    assert '<strong><span class="pb-ci">95.1% [94.9, 95.4]</span></strong>' in out
    assert "<p>0.4 [0.1, 0.9]</p>" in out  # (prose wraps as it likes)
    assert "pb-ci" in (DOCS / "stylesheets" / "extra.css").read_text()
